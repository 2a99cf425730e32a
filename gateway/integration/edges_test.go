package integration

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/projectors/postgres"
	"github.com/vmplane/vmplane/schemas"
)

// edges starts the real edges a gateway runs over: an embedded broker with
// the topic table, a migrated database of the test's own, and the
// gateway's publisher; all go when the test ends.
func edges(t *testing.T) (kafka.Config, string, *gateway.KafkaPublisher) {
	t.Helper()
	b, err := kafka.StartBroker("127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	kcfg := kafka.Config{Brokers: b.Addrs()}
	dsn := freshDB(t)
	if err := postgres.Migrate(t.Context(), dsn); err != nil {
		t.Fatal(err)
	}
	pub, err := gateway.NewKafkaPublisher(kcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pub.Close)
	if err := kcfg.EnsureTopics(t.Context(), pub.Client(), schemas.Topics, kafka.TopicOptions{Replication: 1}); err != nil {
		t.Fatal(err)
	}
	return kcfg, dsn, pub
}

// runProjector runs the Postgres projector until the returned stop.
func runProjector(t *testing.T, kcfg kafka.Config, dsn string) (stop func()) {
	t.Helper()
	proj, err := postgres.New(postgres.Config{Kafka: kcfg, DSN: dsn, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- proj.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("projector: %v", err)
		}
	}
}
