package journal

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/vmplane/vmplane/internal/chserver"
)

// Open connects to ClickHouse's native protocol at addr (host:port) as
// a's user, over TLS if a says so. The HTTP mode of clickhouse-go v2 fails
// on 18.16. The connection is on the user's default database, which
// always exists; every statement here names its database.
func Open(addr string, a chserver.Access) (driver.Conn, error) {
	o, err := a.Options(addr, "")
	if err != nil {
		return nil, err
	}
	// A server that stops answering mid-insert must not hold the
	// projector forever: the insert fails and is retried.
	o.ReadTimeout = 30 * time.Second
	conn, err := clickhouse.Open(o)
	if err != nil {
		return nil, fmt.Errorf("open clickhouse %s: %w", addr, err)
	}
	return conn, nil
}

// Inserts go through PrepareBatch/Append/Send, which works on 18.16
// (revision 54412) and current releases. Exec of an INSERT ... VALUES, with
// bound parameters or literal values, hangs on 18.16 until the read
// timeout: its server waits for data blocks the client never sends.
const (
	insertJobs   = `INSERT INTO %s.job_journal (job_id, kind, seq, vm_id, account, job_type, origin, step, task_state, "text", obj, reason, detail, vm_state, ts, at_ms, topic, "partition", "offset", host_id, started_ms, error_code, caller_account, caller_key_id, caller_request_id)`
	insertEvents = `INSERT INTO %s.vm_events (vm_id, "type", job_id, payload, ts, at_ms, vm_state, task_state, power_state, host_id, topic, "partition", "offset", reason)`
	insertHosts  = `INSERT INTO %s.host_events (host_id, name, zone_id, cluster_id, status, resource_state, reservable, reason, payload, ts, at_ms, topic, "partition", "offset")`
	insertLeases = `INSERT INTO %s.lease_events (lease_id, zone_id, project, name, status, degraded, event, detail, payload, ts, at_ms, topic, "partition", "offset")`
)

// insert writes a batch's rows, the four tables side by side on pooled
// connections so the server parses and sorts them on every core. Every table
// absorbs a repeated insert, so a failure of one of them is fixed by
// retrying the whole batch.
func insert(ctx context.Context, conn driver.Conn, database string, r *rows) error {
	db := quoteIdent(database)
	var jobs jobColumns
	var events eventColumns
	tables := []struct {
		name, stmt string
		n          int
		columns    func(lo, hi int) []any
	}{
		{"job_journal", insertJobs, len(r.jobs), func(lo, hi int) []any { return jobs.of(r.jobs[lo:hi]) }},
		{"vm_events", insertEvents, len(r.events), func(lo, hi int) []any { return events.of(r.events[lo:hi]) }},
		{"host_events", insertHosts, len(r.hosts), func(lo, hi int) []any { return hostColumns(r.hosts[lo:hi]) }},
		{"lease_events", insertLeases, len(r.leases), func(lo, hi int) []any { return leaseColumns(r.leases[lo:hi]) }},
	}
	errs := make([]error, len(tables))
	var wg sync.WaitGroup
	for i, t := range tables {
		if t.n == 0 {
			continue // no round trip for a table the batch has no rows of
		}
		wg.Go(func() {
			if err := send(ctx, conn, fmt.Sprintf(t.stmt, db), t.n, t.columns); err != nil {
				errs[i] = fmt.Errorf("%s: %w", t.name, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// sendRows is how many rows send encodes and sends at a time. The server
// gathers an insert's blocks into parts of up to min_insert_block_size_rows
// (1,048,576), so small blocks make no more parts; they keep the driver's
// column buffers small and reused, and let the server parse one block
// while the next is encoded. 50,000-row blocks spent 38 % of the
// projector's CPU growing and copying those buffers (profiled with pprof,
// BenchmarkJournalIngest).
const sendRows = 4096

// send inserts n rows as one INSERT, in blocks of sendRows given column by
// column in the statement's order: one typed slice per column (columns(lo,
// hi) for rows lo to hi), which the driver copies without boxing a value
// per row.
func send(ctx context.Context, conn driver.Conn, stmt string, n int, columns func(lo, hi int) []any) error {
	b, err := conn.PrepareBatch(ctx, stmt)
	if err != nil {
		return fmt.Errorf("prepare insert: %w", err)
	}
	for lo := 0; lo < n; lo += sendRows {
		for i, c := range columns(lo, min(lo+sendRows, n)) {
			if err := b.Column(i).Append(c); err != nil {
				_ = b.Abort()
				return fmt.Errorf("append column %d: %w", i, err)
			}
		}
		if lo+sendRows < n {
			if err := b.Flush(); err != nil {
				_ = b.Abort()
				return fmt.Errorf("insert %d rows: %w", n, err)
			}
		}
	}
	if err := b.Send(); err != nil {
		return fmt.Errorf("insert %d rows: %w", n, err)
	}
	return nil
}

// values is one field of every row of rs.
func values[R, V any](rs []R, field func(*R) V) []V {
	out := make([]V, len(rs))
	for i := range rs {
		out[i] = field(&rs[i])
	}
	return out
}

// seconds is the DateTime column's value (Unix seconds) of a Unix
// millisecond time, rounded down as time.UnixMilli does.
func seconds(ms int64) int64 {
	s := ms / 1000
	if ms%1000 < 0 {
		s--
	}
	return s
}

// The columns of each table, in the order of its insert statement.

// jobColumns are job_journal's columns of a block, the slices reused from
// block to block (the driver copies what it is given), filled in one pass
// over the rows: a slice per column each filled by its own pass and
// closure, allocated for every block, was a sixth of the projector's CPU
// on the rows' side (profiled with pprof, BenchmarkTakeRecords).
type jobColumns struct {
	jobID, kind, vmID, account, jobType, origin, step, taskState, text, obj, reason, detail, vmState,
	topic, hostID, errorCode, callerAccount, callerKeyID, callerRequestID []string
	seq                         []uint32
	ts, atMs, offset, startedMs []int64
	partition                   []int32
}

// of is the columns of js, in the order of insertJobs.
func (c *jobColumns) of(js []jobRow) []any {
	n := len(js)
	for _, s := range []*[]string{&c.jobID, &c.kind, &c.vmID, &c.account, &c.jobType, &c.origin, &c.step, &c.taskState,
		&c.text, &c.obj, &c.reason, &c.detail, &c.vmState, &c.topic, &c.hostID, &c.errorCode, &c.callerAccount,
		&c.callerKeyID, &c.callerRequestID} {
		*s = sized(*s, n)
	}
	c.seq, c.partition = sized(c.seq, n), sized(c.partition, n)
	c.ts, c.atMs, c.offset, c.startedMs = sized(c.ts, n), sized(c.atMs, n), sized(c.offset, n), sized(c.startedMs, n)
	for i := range js {
		j := &js[i]
		c.jobID[i], c.kind[i], c.seq[i], c.vmID[i], c.account[i], c.jobType[i], c.origin[i] = j.JobID, j.Kind, j.Seq, j.VmID, j.Account, j.JobType, j.Origin
		c.step[i], c.taskState[i], c.text[i], c.obj[i], c.reason[i], c.detail[i], c.vmState[i] = j.Step, j.TaskState, j.Text, j.Obj, j.Reason, j.Detail, j.VmState
		c.ts[i], c.atMs[i], c.topic[i], c.partition[i], c.offset[i] = seconds(j.AtMs), j.AtMs, j.Topic, j.Partition, j.Offset
		c.hostID[i], c.startedMs[i], c.errorCode[i] = j.HostID, j.StartedMs, j.ErrorCode
		c.callerAccount[i], c.callerKeyID[i], c.callerRequestID[i] = j.Caller.Account, j.Caller.KeyID, j.Caller.RequestID
	}
	return []any{c.jobID, c.kind, c.seq, c.vmID, c.account, c.jobType, c.origin, c.step, c.taskState, c.text, c.obj,
		c.reason, c.detail, c.vmState, c.ts, c.atMs, c.topic, c.partition, c.offset, c.hostID, c.startedMs, c.errorCode,
		c.callerAccount, c.callerKeyID, c.callerRequestID}
}

// eventColumns are vm_events' columns of a block, as jobColumns are
// job_journal's.
type eventColumns struct {
	vmID, typ, jobID, payload, vmState, taskState, powerState, hostID, topic, reason []string
	ts, atMs, offset                                                                 []int64
	partition                                                                        []int32
}

// of is the columns of es, in the order of insertEvents.
func (c *eventColumns) of(es []eventRow) []any {
	n := len(es)
	for _, s := range []*[]string{&c.vmID, &c.typ, &c.jobID, &c.payload, &c.vmState, &c.taskState, &c.powerState,
		&c.hostID, &c.topic, &c.reason} {
		*s = sized(*s, n)
	}
	c.ts, c.atMs, c.offset, c.partition = sized(c.ts, n), sized(c.atMs, n), sized(c.offset, n), sized(c.partition, n)
	for i := range es {
		e := &es[i]
		c.vmID[i], c.typ[i], c.jobID[i], c.payload[i], c.ts[i], c.atMs[i] = e.VmID, e.Type, e.JobID, e.Payload, seconds(e.AtMs), e.AtMs
		c.vmState[i], c.taskState[i], c.powerState[i], c.hostID[i] = e.VmState, e.TaskState, e.PowerState, e.HostID
		c.topic[i], c.partition[i], c.offset[i], c.reason[i] = e.Topic, e.Partition, e.Offset, e.Reason
	}
	return []any{c.vmID, c.typ, c.jobID, c.payload, c.ts, c.atMs, c.vmState, c.taskState, c.powerState, c.hostID,
		c.topic, c.partition, c.offset, c.reason}
}

// sized is s with length n, reallocated only when too small.
func sized[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

func hostColumns(hs []hostRow) []any {
	return []any{
		values(hs, func(h *hostRow) string { return h.HostID }),
		values(hs, func(h *hostRow) string { return h.Name }),
		values(hs, func(h *hostRow) string { return h.ZoneID }),
		values(hs, func(h *hostRow) string { return h.ClusterID }),
		values(hs, func(h *hostRow) string { return h.Status }),
		values(hs, func(h *hostRow) string { return h.ResourceState }),
		values(hs, func(h *hostRow) uint8 { return h.Reservable }),
		values(hs, func(h *hostRow) string { return h.Reason }),
		values(hs, func(h *hostRow) string { return h.Payload }),
		values(hs, func(h *hostRow) int64 { return seconds(h.AtMs) }),
		values(hs, func(h *hostRow) int64 { return h.AtMs }),
		values(hs, func(h *hostRow) string { return h.Topic }),
		values(hs, func(h *hostRow) int32 { return h.Partition }),
		values(hs, func(h *hostRow) int64 { return h.Offset }),
	}
}

func leaseColumns(ls []leaseRow) []any {
	return []any{
		values(ls, func(l *leaseRow) string { return l.LeaseID }),
		values(ls, func(l *leaseRow) string { return l.ZoneID }),
		values(ls, func(l *leaseRow) string { return l.Project }),
		values(ls, func(l *leaseRow) string { return l.Name }),
		values(ls, func(l *leaseRow) string { return l.Status }),
		values(ls, func(l *leaseRow) uint8 { return l.Degraded }),
		values(ls, func(l *leaseRow) string { return l.Event }),
		values(ls, func(l *leaseRow) string { return l.Detail }),
		values(ls, func(l *leaseRow) string { return l.Payload }),
		values(ls, func(l *leaseRow) int64 { return seconds(l.AtMs) }),
		values(ls, func(l *leaseRow) int64 { return l.AtMs }),
		values(ls, func(l *leaseRow) string { return l.Topic }),
		values(ls, func(l *leaseRow) int32 { return l.Partition }),
		values(ls, func(l *leaseRow) int64 { return l.Offset }),
	}
}
