package journal

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestJournalRebuildsWhenItsDatabaseVanishes drops the journal's database
// under a running projector: the run ends with errProjectionGone, and the
// next run recreates the tables and projects the whole log again.
func TestJournalRebuildsWhenItsDatabaseVanishes(t *testing.T) {
	conn, addr, db := testClickHouse(t)
	kcfg, cl := broker(t)
	p := newProjector(t, kcfg, addr, db)
	p.cfg.FlushInterval = 100 * time.Millisecond
	_, done := run(t, p)

	for i := 0; i < 3; i++ {
		produce(t, cl, fmt.Sprintf("vm-%d", i), jobEvents(fmt.Sprintf("vm-%d", i), fmt.Sprintf("job-%d", i), 1_760_000_000_000)...)
	}
	q := fmt.Sprintf("SELECT uniqExact(job_id) FROM %s.job_journal FINAL", quoteIdent(db))
	jobs := func() uint64 {
		var n uint64
		if err := conn.QueryRow(t.Context(), q).Scan(&n); err != nil {
			return 0 // no tables (yet)
		}
		return n
	}
	eventually(t, 30*time.Second, "3 jobs journaled", func() bool { return jobs() == 3 })

	if err := conn.Exec(t.Context(), "DROP DATABASE "+quoteIdent(db)); err != nil {
		t.Fatal(err)
	}
	produce(t, cl, "vm-9", jobEvents("vm-9", "job-9", 1_760_000_100_000)...)
	select {
	case err := <-done:
		if !errors.Is(err, errProjectionGone) {
			t.Fatalf("Run ended with %v, want errProjectionGone", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run went on writing into a dropped database")
	}

	run(t, newProjector(t, kcfg, addr, db))
	eventually(t, 30*time.Second, "all 4 jobs journaled again", func() bool { return jobs() == 4 })
}
