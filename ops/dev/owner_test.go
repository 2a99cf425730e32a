package dev

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vmplane/vmplane/internal/pgserver"
	"github.com/vmplane/vmplane/internal/testkit"
)

func TestDatabaseBelongsToOneStack(t *testing.T) {
	dsn := testkit.Postgres(t) // a fresh database
	ctx := t.Context()
	server, err := pgserver.WithDatabase(dsn, "postgres")
	if err != nil {
		t.Fatal(err)
	}
	name := dbName(t, dsn)
	a, b := t.TempDir(), t.TempDir()
	for _, d := range []string{a, b} {
		if err := os.MkdirAll(filepath.Join(d, "kafka"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Unowned: dropped only for a new log.
	if drop, err := claimDatabase(ctx, server, name, a, false); err != nil || drop {
		t.Fatalf("unowned, old log: drop=%v err=%v", drop, err)
	}
	if drop, err := claimDatabase(ctx, server, name, a, true); err != nil || !drop {
		t.Fatalf("unowned, new log: drop=%v err=%v", drop, err)
	}
	if err := recordOwner(ctx, dsn, a); err != nil {
		t.Fatal(err)
	}
	if drop, err := claimDatabase(ctx, server, name, a, false); err != nil || drop {
		t.Fatalf("own database: drop=%v err=%v", drop, err)
	}
	// Another live stack's database is refused with what to do.
	if _, err := claimDatabase(ctx, server, name, b, true); err == nil || !strings.Contains(err.Error(), "--database") {
		t.Fatalf("another stack's database: err=%v", err)
	}
	// Once that stack's log is gone, its rows are stale: taken over.
	if err := os.RemoveAll(filepath.Join(a, "kafka")); err != nil {
		t.Fatal(err)
	}
	if drop, err := claimDatabase(ctx, server, name, b, false); err != nil || !drop {
		t.Fatalf("orphaned database: drop=%v err=%v", drop, err)
	}
	// A database that does not exist yet needs nothing dropped.
	if drop, err := claimDatabase(ctx, server, name+"_none", b, true); err != nil || drop {
		t.Fatalf("missing database: drop=%v err=%v", drop, err)
	}
}

func dbName(t *testing.T, dsn string) string {
	i := strings.LastIndex(dsn, "/")
	name := dsn[i+1:]
	if j := strings.IndexByte(name, '?'); j >= 0 {
		name = name[:j]
	}
	if name == "" {
		t.Fatalf("no database in %s", dsn)
	}
	return name
}
