package journal

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Open connects to ClickHouse's native protocol at addr (host:port). The
// HTTP mode of clickhouse-go v2 fails on 18.16. The connection is on the
// default database, which always exists; every statement here names its
// database.
func Open(addr string) (driver.Conn, error) {
	conn, err := clickhouse.Open(&clickhouse.Options{
		Addr:        []string{addr},
		Protocol:    clickhouse.Native,
		DialTimeout: 5 * time.Second,
		// A server that stops answering mid-insert must not hold the
		// projector forever: the insert fails and is retried.
		ReadTimeout: 30 * time.Second,
	})
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
	insertJobs   = `INSERT INTO %s.job_journal (job_id, kind, seq, vm_id, account, job_type, origin, step, task_state, "text", obj, reason, detail, vm_state, ts, at_ms, topic, "partition", "offset", host_id)`
	insertEvents = `INSERT INTO %s.vm_events (vm_id, "type", job_id, payload, ts, at_ms, vm_state, task_state, power_state, host_id, topic, "partition", "offset", reason)`
	insertHosts  = `INSERT INTO %s.host_events (host_id, name, zone_id, cluster_id, status, resource_state, reservable, reason, payload, ts, at_ms, topic, "partition", "offset")`
	insertLeases = `INSERT INTO %s.lease_events (lease_id, zone_id, project, name, status, degraded, event, detail, payload, ts, at_ms, topic, "partition", "offset")`
)

// insert writes a batch's rows. Every table absorbs a repeated insert, so a
// failure between two of them is fixed by retrying the whole batch.
func insert(ctx context.Context, conn driver.Conn, database string, r *rows) error {
	db := quoteIdent(database)
	err := send(ctx, conn, fmt.Sprintf(insertJobs, db), len(r.jobs), func(i int) []any {
		j := &r.jobs[i]
		return []any{j.JobID, j.Kind, j.Seq, j.VmID, j.Account, j.JobType, j.Origin, j.Step, j.TaskState,
			j.Text, j.Obj, j.Reason, j.Detail, j.VmState, dateTime(j.AtMs), j.AtMs, j.Topic, j.Partition, j.Offset, j.HostID}
	})
	if err != nil {
		return fmt.Errorf("job_journal: %w", err)
	}
	err = send(ctx, conn, fmt.Sprintf(insertEvents, db), len(r.events), func(i int) []any {
		e := &r.events[i]
		return []any{e.VmID, e.Type, e.JobID, e.Payload, dateTime(e.AtMs), e.AtMs, e.VmState, e.TaskState,
			e.PowerState, e.HostID, e.Topic, e.Partition, e.Offset, e.Reason}
	})
	if err != nil {
		return fmt.Errorf("vm_events: %w", err)
	}
	err = send(ctx, conn, fmt.Sprintf(insertHosts, db), len(r.hosts), func(i int) []any {
		h := &r.hosts[i]
		return []any{h.HostID, h.Name, h.ZoneID, h.ClusterID, h.Status, h.ResourceState, h.Reservable, h.Reason,
			h.Payload, dateTime(h.AtMs), h.AtMs, h.Topic, h.Partition, h.Offset}
	})
	if err != nil {
		return fmt.Errorf("host_events: %w", err)
	}
	err = send(ctx, conn, fmt.Sprintf(insertLeases, db), len(r.leases), func(i int) []any {
		l := &r.leases[i]
		return []any{l.LeaseID, l.ZoneID, l.Project, l.Name, l.Status, l.Degraded, l.Event, l.Detail,
			l.Payload, dateTime(l.AtMs), l.AtMs, l.Topic, l.Partition, l.Offset}
	})
	if err != nil {
		return fmt.Errorf("lease_events: %w", err)
	}
	return nil
}

// send inserts n rows, row(i) giving the values of the i-th in the
// statement's column order, as one block.
func send(ctx context.Context, conn driver.Conn, stmt string, n int, row func(i int) []any) error {
	if n == 0 {
		return nil
	}
	b, err := conn.PrepareBatch(ctx, stmt)
	if err != nil {
		return fmt.Errorf("prepare insert: %w", err)
	}
	for i := range n {
		if err := b.Append(row(i)...); err != nil {
			_ = b.Abort()
			return fmt.Errorf("append row %d: %w", i, err)
		}
	}
	if err := b.Send(); err != nil {
		return fmt.Errorf("insert %d rows: %w", n, err)
	}
	return nil
}
