package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/ops/roles"
	"github.com/vmplane/vmplane/processors/runtime"
	"github.com/vmplane/vmplane/schemas"
)

// TestDLQRedriveAfterFix is a real dead letter and its cure: a producer
// configured with a Schema Registry writes a Deploy in the Confluent
// framing while the VM processor runs without the registry, so the
// processor cannot decode it and dead-letters it. The operator lists it,
// restarts the processor with the registry (the fix) and redrives it: the
// processor accepts the job. A second redrive is refused.
func TestDLQRedriveAfterFix(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the embedded broker")
	}
	ctx := t.Context()
	b, err := kafka.StartBroker("127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	reg := srfake.New()
	t.Cleanup(reg.Close)
	plain := kafka.Config{Brokers: b.Addrs(), Replication: 1}
	withRegistry := plain
	withRegistry.RegistryURL = reg.URL()
	cl, err := kgo.NewClient(plain.Opts()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	if err := kafka.EnsureTopics(ctx, cl, schemas.Topics, 1); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	startVM := func(cfg kafka.Config) (stop func()) {
		p, err := roles.NewProcessor(roles.KindVM, roles.Options{Kafka: cfg, InstanceID: "a", Logger: log}, roles.Settings{}, runtime.SystemClock{})
		if err != nil {
			t.Fatal(err)
		}
		pctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); p.Run(pctx) }()
		return func() { cancel(); <-done }
	}
	stop := startVM(plain)

	codec, err := withRegistry.Codec()
	if err != nil {
		t.Fatal(err)
	}
	deploy := &schemas.Deploy{VmCommand: schemas.VmCommand{CommandID: "deploy-dlq", VmID: "vm-dlq", Account: "acme", Origin: schemas.OriginAPI, IssuedAt: time.Now().UnixMilli()},
		Name: "vm-dlq", ZoneID: "zone-1", Offering: schemas.Offering{ID: "off-small", Name: "small", CPU: 1, MemoryMB: 1024}}
	kr, err := kafka.ToKafka(ctx, codec, schemas.Record{Topic: schemas.TopicVmCommands, Key: "vm-dlq", Value: deploy,
		Headers: map[string]string{"command_id": "deploy-dlq"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, kr).FirstErr(); err != nil {
		t.Fatal(err)
	}

	var entries []dlqEntry
	for deadline := time.Now().Add(20 * time.Second); len(entries) == 0; {
		if entries, err = readDLQ(ctx, plain); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the Confluent-framed Deploy never reached dlq.v1")
		}
	}
	var out bytes.Buffer
	if err := listDLQ(&out, entries); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, schemas.TopicVmCommands) || !strings.Contains(s, "vmplane-processor-vm") ||
		!strings.Contains(s, "needs a schema registry") || !strings.Contains(s, "vm-dlq") {
		t.Fatalf("dlq list:\n%s", s)
	}
	out.Reset()
	if err := showDLQ(ctx, &out, withRegistry, entries[0]); err != nil || !strings.Contains(out.String(), "decoded: Deploy") {
		t.Fatalf("dlq show with the registry: %v\n%s", err, out.String())
	}

	// The fix: the processor gets the registry.
	stop()
	t.Cleanup(startVM(withRegistry))
	if _, err := redriveDLQ(ctx, plain, entries[0]); err != nil {
		t.Fatal(err)
	}
	waitAccepted(t, withRegistry, "deploy-dlq")

	again, err := readDLQ(ctx, plain)
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 1 || again[0].Redriven == nil {
		t.Fatalf("after redrive: %d entries, marker %v", len(again), again[0].Redriven)
	}
	if _, err := redriveDLQ(ctx, plain, again[0]); err == nil || !strings.Contains(err.Error(), "refusing a second redrive") {
		t.Fatalf("second redrive: %v", err)
	}
}

func waitAccepted(t *testing.T, cfg kafka.Config, jobID string) {
	t.Helper()
	cl, err := kgo.NewClient(cfg.Opts(kgo.ConsumeTopics(schemas.TopicVmEvents), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// The fixed processor writes in the registry's framing too.
	codec, err := cfg.Codec()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("job %s never accepted after the redrive", jobID)
		}
		found := false
		fs.EachRecord(func(kr *kgo.Record) {
			if r, err := kafka.FromKafka(ctx, codec, kr); err == nil {
				if a, ok := r.Value.(*schemas.JobAccepted); ok && a.JobID == jobID {
					found = true
				}
			}
		})
		if found {
			return
		}
	}
}
