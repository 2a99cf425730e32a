package postgres

import (
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vmplane/vmplane/schemas"
)

// TestJobsUpdateLooksUpByKey holds the jobs update to key lookups once the
// table is large, although its statement was prepared and run while the
// table was small (a new read model): a generic plan made then would scan
// the whole table on every batch.
func TestJobsUpdateLooksUpByKey(t *testing.T) {
	dsn := testDB(t)
	ctx := t.Context()
	if err := Migrate(ctx, dsn); err != nil {
		t.Fatal(err)
	}
	// One connection in the pool's statement mode, as the projector's.
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)

	offset := int64(0)
	// write projects a JobAccepted of job in one transaction and returns
	// how many sequential scans of jobs that transaction made.
	write := func(job string) int64 {
		t.Helper()
		offset++
		ch := newChanges()
		ch.add(schemas.Record{Topic: schemas.TopicVmEvents, Key: "vm-" + job, Offset: offset, TimestampMs: time.Now().UnixMilli(),
			Value: &schemas.JobAccepted{JobRef: schemas.JobRef{JobID: job, VmID: "vm-" + job, Account: "a", JobType: "Reboot", Origin: "api"}}})
		b := &pgx.Batch{}
		b.Queue("BEGIN")
		ch.queue(b)
		b.Queue(`SELECT pg_stat_get_xact_numscans('jobs'::regclass)`)
		b.Queue("COMMIT")
		br := conn.SendBatch(ctx, b)
		defer br.Close()
		var scans int64
		for range b.Len() - 2 {
			if _, err := br.Exec(); err != nil {
				t.Fatal(err)
			}
		}
		if err := br.QueryRow().Scan(&scans); err != nil {
			t.Fatal(err)
		}
		if _, err := br.Exec(); err != nil {
			t.Fatal(err)
		}
		return scans
	}
	// More runs than Postgres makes custom plans for before it settles on
	// a generic one, on a table of a few rows.
	for i := range 10 {
		write(fmt.Sprintf("small-%d", i))
	}
	if _, err := conn.Exec(ctx, `INSERT INTO jobs (id, state, created_at, updated_at, version)
		SELECT 'bulk-' || g, 'succeeded', now(), now(), 0 FROM generate_series(1, 20000) g`); err != nil {
		t.Fatal(err)
	}
	if scans := write("bulk-7"); scans != 0 {
		t.Fatalf("updating one job of 20,010 made %d sequential scans of jobs, want 0 (a key lookup)", scans)
	}
	var state string
	if err := conn.QueryRow(ctx, `SELECT state FROM jobs WHERE id = 'bulk-7'`).Scan(&state); err != nil || state != "running" {
		t.Fatalf("bulk-7: state %q, err %v; want running", state, err)
	}
}
