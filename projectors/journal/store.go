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
	insertJobs   = `INSERT INTO %s.job_journal (job_id, kind, seq, vm_id, account, job_type, origin, step, task_state, "text", obj, reason, detail, vm_state, ts, at_ms, topic, "partition", "offset")`
	insertEvents = `INSERT INTO %s.vm_events (vm_id, "type", job_id, payload, ts, at_ms, vm_state, task_state, power_state, host_id, topic, "partition", "offset")`
)

// insert writes a batch's rows. Both tables absorb a repeated insert, so a
// failure between the two is fixed by retrying the whole batch.
func insert(ctx context.Context, conn driver.Conn, database string, jobs []jobRow, events []eventRow) error {
	db := quoteIdent(database)
	if len(jobs) > 0 {
		b, err := conn.PrepareBatch(ctx, fmt.Sprintf(insertJobs, db))
		if err != nil {
			return fmt.Errorf("prepare job_journal insert: %w", err)
		}
		for _, j := range jobs {
			if err := b.Append(j.JobID, j.Kind, j.Seq, j.VmID, j.Account, j.JobType, j.Origin, j.Step, j.TaskState,
				j.Text, j.Obj, j.Reason, j.Detail, j.VmState, dateTime(j.AtMs), j.AtMs, j.Topic, j.Partition, j.Offset); err != nil {
				_ = b.Abort()
				return fmt.Errorf("append job_journal row %s/%d: %w", j.JobID, j.Seq, err)
			}
		}
		if err := b.Send(); err != nil {
			return fmt.Errorf("insert %d job_journal rows: %w", len(jobs), err)
		}
	}
	if len(events) > 0 {
		b, err := conn.PrepareBatch(ctx, fmt.Sprintf(insertEvents, db))
		if err != nil {
			return fmt.Errorf("prepare vm_events insert: %w", err)
		}
		for _, e := range events {
			if err := b.Append(e.VmID, e.Type, e.JobID, e.Payload, dateTime(e.AtMs), e.AtMs, e.VmState, e.TaskState,
				e.PowerState, e.HostID, e.Topic, e.Partition, e.Offset); err != nil {
				_ = b.Abort()
				return fmt.Errorf("append vm_events row %s@%d: %w", e.VmID, e.Offset, err)
			}
		}
		if err := b.Send(); err != nil {
			return fmt.Errorf("insert %d vm_events rows: %w", len(events), err)
		}
	}
	return nil
}
