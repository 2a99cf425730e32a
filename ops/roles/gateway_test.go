package roles

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/internal/testkit"
	"github.com/vmplane/vmplane/projectors/postgres"
)

// The gateway role holds Postgres connections only while it runs: after
// Run returns, none of its pools is left open, however often it ran (a
// role restarted by Supervise, a stack started again in one process).
func TestGatewayRunClosesItsConnections(t *testing.T) {
	dsn := testkit.Postgres(t)
	kcfg, _ := testkit.Kafka(t)
	if err := postgres.Migrate(t.Context(), dsn); err != nil {
		t.Fatal(err)
	}
	db, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	// backends counts the gateway's connections, and those listening for
	// job notifications (the last thing Run opens).
	backends := func() (n, listening int) {
		if err := db.QueryRow(t.Context(), `SELECT count(*), count(*) FILTER (WHERE query LIKE 'LISTEN%')
			FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n, &listening); err != nil {
			t.Fatal(err)
		}
		return n, listening
	}
	waitBackends := func(what string, ok func(n, listening int) bool) int {
		deadline := time.Now().Add(10 * time.Second)
		for {
			n, listening := backends()
			if ok(n, listening) {
				return n
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d gateway connections", what, n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	if _, err := NewGateway(Options{Kafka: kcfg}, "postgres://[bad", gateway.Config{}); err == nil {
		t.Fatal("a malformed DSN was taken")
	}
	g, err := NewGateway(Options{Kafka: kcfg, Logger: slog.New(slog.DiscardHandler)}, dsn, gateway.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	for run := range 2 {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- g.Run(ctx) }()
		open := waitBackends("running", func(_, listening int) bool { return listening > 0 })
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		waitBackends("after Run returned", func(n, _ int) bool { return n == 0 })
		t.Logf("run %d: %d connections while running, none after", run, open)
	}
	// Canceled while it opens its connections: nil, and nothing left open.
	for _, after := range []time.Duration{0, time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond} {
		ctx, cancel := context.WithTimeout(t.Context(), after)
		err := g.Run(ctx)
		cancel()
		if err != nil {
			t.Fatalf("canceled after %s: %v", after, err)
		}
		waitBackends(fmt.Sprintf("canceled after %s", after), func(n, _ int) bool { return n == 0 })
	}
}
