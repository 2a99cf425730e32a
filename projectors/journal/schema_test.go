package journal

import (
	"fmt"
	"testing"

	"github.com/vmplane/vmplane/schemas"
)

// TestMigrateFromFirstRelease creates job_journal and vm_events as the
// first release did (no host_id, no reason, no caller), with a job in it,
// then migrates: every added column is there and today's insert writes it, the views exist and the aggregates hold
// the job that was there before them. A second Migrate changes nothing.
func TestMigrateFromFirstRelease(t *testing.T) {
	conn, _, db := testClickHouse(t)
	q := quoteIdent(db)
	for _, s := range []string{
		`CREATE TABLE ` + q + `.job_journal (job_id String, seq UInt32, kind String, vm_id String, account String, job_type String,
			origin String, step String, task_state String, "text" String, obj String, reason String, detail String, vm_state String,
			ts DateTime, at_ms Int64, topic String, "partition" Int32, "offset" Int64)
			ENGINE = ReplacingMergeTree() PARTITION BY toYYYYMM(ts) ORDER BY (job_id, seq, kind)`,
		`CREATE TABLE ` + q + `.vm_events (vm_id String, "type" String, ts DateTime, at_ms Int64, job_id String, payload String,
			vm_state String, task_state String, power_state String, host_id String, topic String, "partition" Int32, "offset" Int64)
			ENGINE = ReplacingMergeTree() PARTITION BY toYYYYMM(ts) ORDER BY (vm_id, ts, "partition", "offset")`,
	} {
		if err := conn.Exec(t.Context(), s); err != nil {
			t.Fatal(err)
		}
	}
	old := &rows{jobs: []jobRow{
		{JobID: "j0", Kind: KindAccepted, Seq: 0, JobType: "Start", AtMs: 1_760_000_000_000},
		{JobID: "j0", Kind: KindSucceeded, Seq: endSeq, JobType: "Start", AtMs: 1_760_000_000_700},
	}}
	// The first release's insert, without host_id.
	err := send(t.Context(), conn, fmt.Sprintf(`INSERT INTO %s.job_journal (job_id, kind, seq, job_type, ts, at_ms)`, q), len(old.jobs),
		func(lo, hi int) []any {
			js := old.jobs[lo:hi]
			return []any{
				values(js, func(j *jobRow) string { return j.JobID }),
				values(js, func(j *jobRow) string { return j.Kind }),
				values(js, func(j *jobRow) uint32 { return j.Seq }),
				values(js, func(j *jobRow) string { return j.JobType }),
				values(js, func(j *jobRow) int64 { return seconds(j.AtMs) }),
				values(js, func(j *jobRow) int64 { return j.AtMs }),
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := Migrate(t.Context(), conn, db); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range addedColumns {
		if n := count(t, conn, "SELECT count() FROM system.columns WHERE database = ? AND table = ? AND name = ? AND type = ?", db, c.table, c.name, c.typ); n != 1 {
			t.Errorf("column %s.%s %s not added", c.table, c.name, c.typ)
		}
	}
	var dur int64
	var outcome string
	if err := conn.QueryRow(t.Context(), "SELECT duration_ms, outcome FROM "+q+".jobs WHERE job_id = 'j0'").Scan(&dur, &outcome); err != nil || dur != 700 || outcome != KindSucceeded {
		t.Errorf("jobs view of the old job: %d ms %q (%v), want 700 ms succeeded", dur, outcome, err)
	}
	if n := count(t, conn, "SELECT count() FROM "+q+".job_stats"); n != 1 {
		t.Errorf("job_stats rows: %d, want 1", n)
	}
	// Today's insert writes the migrated table: who asked and the code.
	now := &rows{jobs: []jobRow{{JobID: "j1", Kind: KindRejected, Seq: endSeq, JobType: "Stop", AtMs: 1_760_000_001_000,
		ErrorCode: "InvalidState", Caller: schemas.Caller{Account: "acme", KeyID: "k1", RequestID: "req-1"}}}}
	if err := send(t.Context(), conn, fmt.Sprintf(insertJobs, q), 1, func(lo, hi int) []any { return new(jobColumns).of(now.jobs[lo:hi]) }); err != nil {
		t.Fatal(err)
	}
	if n := count(t, conn, "SELECT count() FROM "+q+".job_journal WHERE error_code = 'InvalidState' AND caller_account = 'acme' AND caller_key_id = 'k1' AND caller_request_id = 'req-1'"); n != 1 {
		t.Errorf("rows with the caller and the code: %d, want 1", n)
	}
}
