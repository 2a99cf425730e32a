package journal

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Entry is one line of a job's journal.
type Entry struct {
	JobID string
	// Seq is the step number; 0 for the accepted line and 1000000 for the
	// line that ended the job.
	Seq       uint32
	Kind      string // KindAccepted, KindStepped, ...
	VmID      string
	Account   string
	JobType   string
	Origin    string
	Step      string
	TaskState string
	Text      string
	Obj       string // JSON object
	Reason    string
	Detail    string
	VmState   string
	At        time.Time
	// Topic, Partition and Offset name the record the line came from.
	Topic     string
	Partition int32
	Offset    int64
}

// Reader queries the journal.
type Reader struct {
	conn     driver.Conn
	database string
}

// NewReader reads the journal tables of database through conn.
func NewReader(conn driver.Conn, database string) *Reader {
	return &Reader{conn: conn, database: database}
}

// JobJournal returns a job's lines in order: accepted, steps, end. FINAL
// collapses rows a retried batch inserted twice before the background
// merges get to them (18.16 supports FINAL on ReplacingMergeTree).
func (r *Reader) JobJournal(ctx context.Context, jobID string) ([]Entry, error) {
	q := fmt.Sprintf(`SELECT job_id, seq, kind, vm_id, account, job_type, origin, step, task_state, "text", obj,
	reason, detail, vm_state, at_ms, topic, "partition", "offset"
FROM %s.job_journal FINAL
WHERE job_id = ?
ORDER BY seq, at_ms, kind`, quoteIdent(r.database))
	rows, err := r.conn.Query(ctx, q, jobID)
	if err != nil {
		return nil, fmt.Errorf("journal of job %s: %w", jobID, err)
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		var e Entry
		var atMs int64
		if err := rows.Scan(&e.JobID, &e.Seq, &e.Kind, &e.VmID, &e.Account, &e.JobType, &e.Origin, &e.Step,
			&e.TaskState, &e.Text, &e.Obj, &e.Reason, &e.Detail, &e.VmState, &atMs, &e.Topic, &e.Partition, &e.Offset); err != nil {
			return nil, fmt.Errorf("journal of job %s: %w", jobID, err)
		}
		e.At = time.UnixMilli(atMs).UTC()
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("journal of job %s: %w", jobID, err)
	}
	return out, nil
}
