package journal

import (
	"fmt"
	"testing"
)

// TestMigrateFromFirstRelease creates job_journal and vm_events as the
// first release did (no host_id, no reason), with a job in it, then
// migrates: the columns are added, the views exist and the aggregates hold
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
	if n := count(t, conn, "SELECT count() FROM system.columns WHERE database = ? AND name IN ('host_id', 'reason') AND table IN ('job_journal', 'vm_events')", db); n != 4 {
		t.Errorf("added columns: %d of 4", n)
	}
	var dur int64
	var outcome string
	if err := conn.QueryRow(t.Context(), "SELECT duration_ms, outcome FROM "+q+".jobs WHERE job_id = 'j0'").Scan(&dur, &outcome); err != nil || dur != 700 || outcome != KindSucceeded {
		t.Errorf("jobs view of the old job: %d ms %q (%v), want 700 ms succeeded", dur, outcome, err)
	}
	if n := count(t, conn, "SELECT count() FROM "+q+".job_stats"); n != 1 {
		t.Errorf("job_stats rows: %d, want 1", n)
	}
}
