package testkit

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/jackc/pgx/v5"

	"github.com/vmplane/vmplane/internal/chserver"
)

func TestRepoRoot(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(mod), "module github.com/vmplane/vmplane\n") {
		t.Fatalf("%s/go.mod is not vmplane's", root)
	}
}

func TestPostgres(t *testing.T) {
	var name, dsn string
	t.Run("use", func(t *testing.T) {
		dsn = Postgres(t)
		conn, err := pgx.Connect(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		// An open session must not keep the database from being dropped.
		t.Cleanup(func() { conn.Close(context.Background()) })
		if err := conn.QueryRow(t.Context(), "SELECT current_database()").Scan(&name); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(name, "vmplane_t_") {
			t.Fatalf("current_database() = %q", name)
		}
		if _, err := conn.Exec(t.Context(), "CREATE TABLE vms (id text PRIMARY KEY)"); err != nil {
			t.Fatal(err)
		}
		if other := Postgres(t); other == dsn {
			t.Fatal("two calls returned the same database")
		}
	})
	if t.Failed() || testing.Short() {
		return
	}
	conn, err := pgx.Connect(t.Context(), PostgresDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("database %s survived its test", name)
	}
}

func TestClickHouse(t *testing.T) {
	var addr, db string
	t.Run("use", func(t *testing.T) {
		addr, db = ClickHouse(t)
		conn, err := clickhouse.Open(&clickhouse.Options{
			Addr:     []string{addr},
			Protocol: clickhouse.Native,
			Auth:     clickhouse.Auth{Database: db},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		var version string
		if err := conn.QueryRow(t.Context(), "SELECT version()").Scan(&version); err != nil {
			t.Fatal(err)
		}
		t.Logf("clickhouse %s at %s, database %s", version, addr, db)
		if err := conn.Exec(t.Context(), "CREATE TABLE vm_events (vm_id String, seq UInt64) ENGINE = ReplacingMergeTree() ORDER BY (vm_id, seq)"); err != nil {
			t.Fatal(err)
		}
		if _, other := ClickHouse(t); other == db {
			t.Fatal("two calls returned the same database")
		}
	})
	if t.Failed() || testing.Short() {
		return
	}
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{addr}, Protocol: clickhouse.Native})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var n uint64
	if err := conn.QueryRow(t.Context(), "SELECT count() FROM system.databases WHERE name = ?", db).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("database %s survived its test", db)
	}
}

// TestReaper runs the reaper in process against a real detached server: it must leave the server
// alone while a test process holds users.lock, and stop it once none has for the grace period.
func TestReaper(t *testing.T) {
	if testing.Short() {
		t.Skip("starts clickhouse-server")
	}
	varDir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	srv, err := chserver.Ensure(t.Context(), addr, varDir, nil, chserver.Detached())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = chserver.StopDir(context.Background(), varDir) })
	if err := os.MkdirAll(filepath.Join(varDir, "reap"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(varDir, "reap", markClickHouse), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	// A separate open file description conflicts like another process would.
	user, err := os.OpenFile(filepath.Join(varDir, "users.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer user.Close()
	if err := flock(user, syscall.LOCK_SH); err != nil {
		t.Fatal(err)
	}

	done := make(chan struct{})
	go func() {
		reap(varDir, 300*time.Millisecond, 50*time.Millisecond, slog.New(slog.NewTextHandler(t.Output(), nil)))
		close(done)
	}()
	select {
	case <-done:
		t.Fatal("reaper gave up while the server was in use")
	case <-time.After(time.Second):
	}
	if err := ping(t, srv.Addr()); err != nil {
		t.Fatalf("server stopped while in use: %v", err)
	}

	if err := flock(user, syscall.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("reaper did not finish")
	}
	if err := ping(t, srv.Addr()); err == nil {
		t.Fatal("server still answers after the reaper ran")
	}
	if m := marked(varDir); len(m) != 0 {
		t.Fatalf("marks left: %v", m)
	}
}

func ping(t testing.TB, addr string) error {
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{addr}, Protocol: clickhouse.Native, DialTimeout: time.Second})
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if err := conn.Ping(ctx); err != nil {
		return fmt.Errorf("ping %s: %w", addr, err)
	}
	return nil
}
