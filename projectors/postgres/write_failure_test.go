package postgres

import (
	"reflect"
	"testing"
	"time"
)

// A write that fails inside its pipeline leaves nothing behind: no rows, no
// offsets, no connection idle in a transaction; once the database is back
// the retry projects the same read model as a clean run. The failure is
// the offsets row, the last statement of every transaction, so each batch
// fails after its rows were written — whichever records a poll brings.
func TestProjectorWriteFailureRollsBack(t *testing.T) {
	kcfg := testBroker(t)
	p := newProducer(t, kcfg)
	scenario(p)

	cleanDSN := testDB(t)
	cancel, wait := startProjector(t, Config{Kafka: kcfg, DSN: cleanDSN, Group: "clean"}, nil)
	waitApplied(t, cleanDSN, "clean", p)
	cancel()
	wait()
	want := dump(t, cleanDSN)

	dsn, admin := migratedDB(t)
	refuseOffsets(t, admin)
	_, _ = startProjector(t, Config{Kafka: kcfg, DSN: dsn, Group: "failing"}, nil)

	// The projector retries at 100 ms, 200 ms, ...: by now it has failed
	// more than once.
	time.Sleep(500 * time.Millisecond)
	stored, err := storedOffsetsOf(t, dsn, "failing")
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 0 {
		t.Fatalf("offsets stored by a failed write: %v", stored)
	}
	var rows, open int
	if err := admin.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM vms) + (SELECT count(*) FROM jobs) +
		(SELECT count(*) FROM job_steps) + (SELECT count(*) FROM hosts)`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 0 {
		t.Fatalf("%d rows left by failed writes", rows)
	}
	// A transaction left open stays idle for good; one caught between its
	// failed statement and its ROLLBACK (a loaded machine) is idle for a
	// moment only.
	if err := admin.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND state LIKE 'idle in transaction%'
		AND state_change < now() - interval '250 milliseconds'`).Scan(&open); err != nil {
		t.Fatal(err)
	}
	if open != 0 {
		t.Fatalf("%d connections left idle in a transaction", open)
	}

	if _, err := admin.Exec(t.Context(), `DROP TRIGGER refuse_offsets ON consumer_offsets`); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, dsn, "failing", p)
	if got := dump(t, dsn); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the failed writes:\n%v\nclean run:\n%v", got, want)
	}
}
