package testkit

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/vmplane/vmplane/internal/chserver"
)

var ch struct {
	sync.Mutex
	addr string // the server's address once it answered
}

// ClickHouse returns the native-protocol address of the test ClickHouse server and the name of
// a new, empty database on it, dropped when the test ends.
func ClickHouse(t testing.TB) (addr, database string) {
	t.Helper()
	if testing.Short() {
		t.Skip("testkit.ClickHouse: needs ClickHouse; skipped under -short")
	}
	addr, err := clickhouseServer(t)
	if err != nil {
		t.Fatal(err)
	}
	database = uniqueName()
	if err := chserver.EnsureDatabase(t.Context(), addr, database); err != nil {
		t.Fatalf("testkit: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{addr}, Protocol: clickhouse.Native})
		if err != nil {
			t.Errorf("testkit: drop clickhouse database %s: %v", database, err)
			return
		}
		defer conn.Close()
		if err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+chserver.QuoteIdent(database)); err != nil {
			t.Errorf("testkit: drop clickhouse database %s: %v", database, err)
		}
	})
	return addr, database
}

// clickhouseServer finds or starts the server once per process. It is started detached so that
// the test processes `go test` runs side by side share one.
func clickhouseServer(t testing.TB) (string, error) {
	ch.Lock()
	defer ch.Unlock()
	if ch.addr != "" {
		return ch.addr, nil
	}
	varDir := mustVarDir(t)
	if err := joinUsers(varDir); err != nil {
		return "", err
	}
	srv, err := chserver.Ensure(t.Context(), ClickHouseAddr(), varDir, testLogger(t), chserver.Detached())
	if err != nil {
		return "", errorf("clickhouse: %w", err)
	}
	if srv.Started() {
		if err := leaveToReaper(varDir, markClickHouse); err != nil {
			return "", err
		}
	}
	ch.addr = srv.Addr()
	return ch.addr, nil
}
