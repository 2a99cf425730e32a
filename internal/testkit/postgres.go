package testkit

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/vmplane/vmplane/internal/pgserver"
)

var pg struct {
	sync.Mutex
	dsn string // the server's DSN once it answered
}

// Postgres returns the DSN of a new, empty database on the test PostgreSQL server, dropped
// (with any sessions still connected) when the test ends.
func Postgres(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("testkit.Postgres: needs PostgreSQL; skipped under -short")
	}
	base, err := postgresServer(t)
	if err != nil {
		t.Fatal(err)
	}
	name := uniqueName()
	dsn, err := pgserver.EnsureDatabase(t.Context(), base, name)
	if err != nil {
		t.Fatalf("testkit: %v", err)
	}
	t.Cleanup(func() {
		// t.Context() is already canceled when cleanups run.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := pgserver.DropDatabase(ctx, base, name); err != nil {
			t.Errorf("testkit: %v", err)
		}
	})
	return dsn
}

// postgresServer finds or starts the server once per process; a failure is retried by the next
// test rather than remembered.
func postgresServer(t testing.TB) (string, error) {
	pg.Lock()
	defer pg.Unlock()
	if pg.dsn != "" {
		return pg.dsn, nil
	}
	varDir := mustVarDir(t)
	if err := joinUsers(varDir); err != nil {
		return "", err
	}
	srv, err := pgserver.Ensure(t.Context(), PostgresDSN(), varDir, testLogger(t))
	if err != nil {
		return "", errorf("postgres: %w", err)
	}
	if srv.Started() {
		if err := leaveToReaper(varDir, markPostgres); err != nil {
			return "", err
		}
	}
	pg.dsn = srv.DSN()
	return pg.dsn, nil
}
