package postgres

import (
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMigrateTwiceAndConcurrently(t *testing.T) {
	dsn := testDB(t)
	// Four processes starting at once: the advisory lock must make the
	// losers wait and then find everything applied.
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- Migrate(t.Context(), dsn)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent Migrate: %v", err)
		}
	}
	if err := Migrate(t.Context(), dsn); err != nil {
		t.Fatalf("second Migrate: %v", err)
	}
	all, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	var n int
	if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM schema_migrations").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != len(all) {
		t.Fatalf("schema_migrations has %d rows, want %d", n, len(all))
	}
	for _, table := range []string{"vms", "jobs", "job_steps", "hosts", "allocations", "offerings", "accounts", "api_keys", "alerts", "alert_acks", "settings", "consumer_offsets"} {
		var exists bool
		if err := conn.QueryRow(t.Context(), "SELECT to_regclass($1) IS NOT NULL", table).Scan(&exists); err != nil || !exists {
			t.Errorf("table %s missing (err %v)", table, err)
		}
	}
}
