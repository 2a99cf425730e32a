package roles

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vmplane/vmplane/internal/testkit"
)

// waitReady polls o until its readiness error satisfies ok.
func waitReady(t *testing.T, o *Observer, what string, ok func(error) bool) error {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		err := o.Ready(ctx)
		cancel()
		if ok(err) {
			return err
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: readiness still %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestStandaloneJournalProjectorReadiness: /readyz of a standalone journal
// projector says not ready until its group holds every partition, then
// ready while ClickHouse and Kafka answer; /metrics has the group's lag.
func TestStandaloneJournalProjectorReadiness(t *testing.T) {
	cfg, _ := testkit.Kafka(t)
	addr, db := testkit.ClickHouse(t)
	o := NewObserver()
	opts := Options{Kafka: cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	r, err := NewJournalProjector(opts, addr, db)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if err := ObserveProjector(ctx, o, opts, "journal", r, "", addr); err != nil {
		t.Fatal(err)
	}
	err = o.Ready(t.Context())
	if err == nil || !strings.Contains(err.Error(), "projector-journal: group vmplane-projector-journal") {
		t.Fatalf("before the projector runs: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	waitReady(t, o, "running projector", func(err error) bool { return err == nil })

	rec := httptest.NewRecorder()
	o.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(rec.Body.String(), `kafka_consumergroup_lag{consumergroup="vmplane-projector-journal"`) {
		t.Errorf("no lag of the journal group on /metrics")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestStandaloneAgentReadiness: an agent is ready once every host it
// serves is announced, and says how many are before.
func TestStandaloneAgentReadiness(t *testing.T) {
	cfg, _ := testkit.Kafka(t)
	o := NewObserver()
	opts := Options{Kafka: cfg, InstanceID: "ready", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	a, err := NewSimAgent(opts, SimLayout{Prefix: "rdy", Zone: "zone-1", Pods: 1, Clusters: 1, Hosts: 3}, Settings{PingInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if err := ObserveAgent(ctx, o, opts, a); err != nil {
		t.Fatal(err)
	}
	if err := o.Ready(t.Context()); err == nil || !strings.Contains(err.Error(), "agent-hosts: 0 of 3 hosts announced") {
		t.Fatalf("before the agent runs: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	waitReady(t, o, "running agent", func(err error) bool { return err == nil })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
