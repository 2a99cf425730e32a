package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/internal/testkit"
	"github.com/vmplane/vmplane/ops/roles"
	"github.com/vmplane/vmplane/processors/engine"
	"github.com/vmplane/vmplane/schemas"
)

// TestDLQRedriveAfterFix is a real dead letter and its cure: a producer
// configured with a Schema Registry writes a Deploy in the Confluent
// framing while the VM processor runs without the registry, so the
// processor cannot decode it and dead-letters it. The operator lists it,
// restarts the processor with the registry (the fix) and redrives it: the
// processor accepts the job. A second redrive is refused.
func TestDLQRedriveAfterFix(t *testing.T) {
	ctx := t.Context()
	plain, cl := dlqBroker(t)
	reg := srfake.New()
	t.Cleanup(reg.Close)
	withRegistry := plain
	withRegistry.RegistryURL = reg.URL()
	stop := startVM(t, plain)

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

	// The fix: the processor gets the registry. A redrive that cannot read
	// the record cannot check where it belongs, so it needs the registry too.
	stop()
	t.Cleanup(startVM(t, withRegistry))
	if _, err := redriveDLQ(ctx, plain, entries[0], entries); err == nil || !strings.Contains(err.Error(), "does not decode here") {
		t.Fatalf("redrive without the registry: %v", err)
	}
	if _, err := redriveDLQ(ctx, withRegistry, entries[0], entries); err != nil {
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
	if _, err := redriveDLQ(ctx, withRegistry, again[0], again); err == nil || !strings.Contains(err.Error(), "refusing a second redrive") {
		t.Fatalf("second redrive: %v", err)
	}
}

// TestDLQForgedOrigin is the attack of issue 23: a compromised agent writes
// a Terminate to vm.power.v1 with headers claiming it is a dead letter of
// vm.commands.v1. The VM processor dead-letters it with its true origin;
// a dead letter from before the forged headers were dropped (the forged
// origin first, the true one after it) is read by its true origin too; and
// neither is redriven, since vm.power.v1 does not carry a Terminate.
func TestDLQForgedOrigin(t *testing.T) {
	ctx := t.Context()
	cfg, cl := dlqBroker(t)
	t.Cleanup(startVM(t, cfg))

	forged := map[string]string{kafka.DLQTopic: schemas.TopicVmCommands, kafka.DLQPartition: "0", kafka.DLQOffset: "0",
		kafka.DLQConsumer: "vmplane-processor-vm"}
	terminate := &schemas.Terminate{VmCommand: schemas.VmCommand{CommandID: "forged", VmID: "vm-victim", Account: "victim",
		Origin: schemas.OriginAPI, IssuedAt: time.Now().UnixMilli()}}
	kr, err := kafka.ToKafka(ctx, schemas.NewCodec(nil), schemas.Record{Topic: schemas.TopicVmPower, Key: "vm-victim", Value: terminate, Headers: forged})
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, kr).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The same record as a dead letter of the old kind: the original's
	// headers first, the dead-lettering's after them.
	old := &kgo.Record{Topic: schemas.TopicDLQ, Key: kr.Key, Value: kr.Value, Headers: append(append([]kgo.RecordHeader{}, kr.Headers...),
		kgo.RecordHeader{Key: kafka.DLQError, Value: []byte("topic does not carry Terminate")},
		kgo.RecordHeader{Key: kafka.DLQTopic, Value: []byte(schemas.TopicVmPower)},
		kgo.RecordHeader{Key: kafka.DLQPartition, Value: []byte("5")},
		kgo.RecordHeader{Key: kafka.DLQOffset, Value: []byte("9")},
		kgo.RecordHeader{Key: kafka.DLQConsumer, Value: []byte("vmplane-processor-vm")})}
	if err := cl.ProduceSync(ctx, old).FirstErr(); err != nil {
		t.Fatal(err)
	}

	var entries []dlqEntry
	for deadline := time.Now().Add(20 * time.Second); len(entries) < 2; {
		if entries, err = readDLQ(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d dead letters, want the old one and the processor's", len(entries))
		}
		time.Sleep(50 * time.Millisecond)
	}
	fresh := entries[0]
	if fresh.header(kafka.DLQOffset) == "9" {
		fresh = entries[1] // the old one came first
	}
	if n := countHeaders(fresh.Record, kafka.DLQTopic); n != 1 || fresh.header(kafka.DLQTopic) != schemas.TopicVmPower ||
		fresh.header(kafka.DLQConsumer) != "vmplane-processor-vm" || !strings.Contains(fresh.header(kafka.DLQError), "does not carry Terminate") {
		t.Fatalf("the processor's dead letter: %d dlq.topic headers, %v", n, fresh.Record.Headers)
	}
	var out bytes.Buffer
	if err := listDLQ(&out, entries); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); strings.Contains(s, schemas.TopicVmCommands) {
		t.Fatalf("dlq list names a forged origin:\n%s", s)
	}
	for _, e := range entries {
		_, err := redriveDLQ(ctx, cfg, e, entries)
		if err == nil || !strings.Contains(err.Error(), "is a Terminate, which vm.power.v1 does not carry") {
			t.Fatalf("redrive of %s: %v", e.At, err)
		}
	}
	after, err := readDLQ(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range after {
		if e.Redriven != nil {
			t.Fatalf("%s marked redriven", e.At)
		}
	}
}

// TestCheckRedrive: a record goes back only to a vmplane topic that carries
// the type its value decodes to, and only if its type header agrees.
func TestCheckRedrive(t *testing.T) {
	codec := schemas.NewCodec(nil)
	enc := func(v any) []byte {
		b, err := codec.Encode(t.Context(), v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	terminate := enc(&schemas.Terminate{VmCommand: schemas.VmCommand{CommandID: "c", VmID: "vm-1"}})
	report := enc(&schemas.PowerReport{VmID: "vm-1", HostID: "h1", PowerState: schemas.PowerOn})
	for _, c := range []struct {
		name, topic, typ string
		value            []byte
		refused          string
	}{
		{"a command to its topic", schemas.TopicVmCommands, "Terminate", terminate, ""},
		{"no type header", schemas.TopicVmCommands, "", terminate, ""},
		{"a report to its topic", schemas.TopicVmPower, "PowerReport", report, ""},
		{"a command to the reports", schemas.TopicVmPower, "Terminate", terminate, "which vm.power.v1 does not carry (Terminate belongs on vm.commands.v1)"},
		{"a report to the commands", schemas.TopicVmCommands, "PowerReport", report, "which vm.commands.v1 does not carry"},
		{"a type header that lies", schemas.TopicVmCommands, "Terminate", report, `the type header "Terminate" but its value is a PowerReport`},
		{"to dlq.v1", schemas.TopicDLQ, "Terminate", terminate, "not a vmplane input"},
		{"to a topic of nobody", "elsewhere.v1", "Terminate", terminate, "not a vmplane input"},
		{"bytes that do not decode", schemas.TopicVmCommands, "Terminate", []byte("not avro"), "does not decode here"},
	} {
		kr := &kgo.Record{Topic: schemas.TopicDLQ, Value: c.value}
		if c.typ != "" {
			kr.Headers = []kgo.RecordHeader{{Key: "type", Value: []byte(c.typ)}}
		}
		err := checkRedrive(t.Context(), kafka.Config{}, dlqEntry{At: dlqAt{0, 7}, Record: kr}, c.topic)
		switch {
		case c.refused == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.refused != "" && (err == nil || !strings.Contains(err.Error(), c.refused)):
			t.Errorf("%s: %v, want a refusal saying %q", c.name, err, c.refused)
		}
	}
}

// dlqBroker is an embedded broker with the topic table and a client of it.
func dlqBroker(t *testing.T) (kafka.Config, *kgo.Client) {
	cfg, _ := testkit.Kafka(t)
	cl, err := kgo.NewClient(cfg.Opts()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cfg, cl
}

// startVM runs a VM processor until the returned stop.
func startVM(t *testing.T, cfg kafka.Config) (stop func()) {
	p, err := roles.NewProcessor(roles.KindVM, roles.Options{Kafka: cfg, InstanceID: "a", Logger: slog.New(slog.DiscardHandler)},
		roles.Settings{}, engine.SystemClock{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx) }()
	return func() { cancel(); <-done }
}

func countHeaders(kr *kgo.Record, k string) int {
	n := 0
	for _, h := range kr.Headers {
		if h.Key == k {
			n++
		}
	}
	return n
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

// TestDLQRedriveOncePerOrigin: a record two consumers refused is two dead
// letters of one origin. Redriving either puts the record back once, for
// those two consumers only, and marks both; the other is then refused. A
// dead letter of another origin is left alone.
func TestDLQRedriveOncePerOrigin(t *testing.T) {
	ctx := t.Context()
	cfg, cl := dlqBroker(t)
	terminate := &schemas.Terminate{VmCommand: schemas.VmCommand{CommandID: "term-1", VmID: "vm-1", Account: "acme",
		Origin: schemas.OriginAPI, IssuedAt: time.Now().UnixMilli()}}
	orig, err := kafka.ToKafka(ctx, schemas.NewCodec(nil), schemas.Record{Topic: schemas.TopicVmCommands, Key: "vm-1", Value: terminate})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct{ group, offset string }{{"group-b", "5"}, {"group-a", "5"}, {"group-a", "6"}} {
		orig.Partition, orig.Offset = 3, int64(5+i/2)
		dl := kafka.DeadLetter(orig, errors.New("refused"), c.group)
		if got := kafka.DeadLetterHeader(dl, kafka.DLQOffset); got != c.offset {
			t.Fatalf("dead letter %d offset %s", i, got)
		}
		if err := cl.ProduceSync(ctx, dl).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := readDLQ(ctx, cfg)
	if err != nil || len(entries) != 3 {
		t.Fatalf("%d entries, %v", len(entries), err)
	}
	if _, err := redriveDLQ(ctx, cfg, entries[0], entries); err != nil {
		t.Fatal(err)
	}
	var redriven []*kgo.Record
	err = kafka.ReadToEnd(ctx, cfg, []string{schemas.TopicVmCommands}, func(kr *kgo.Record) error {
		if !kr.Attrs.IsControl() {
			redriven = append(redriven, kr)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(redriven) != 1 || kafka.Header(redriven[0], kafka.DLQRedriveFor) != "group-a,group-b" {
		t.Fatalf("redriven %d records, the first for %q", len(redriven), kafka.Header(redriven[0], kafka.DLQRedriveFor))
	}
	after, err := readDLQ(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range after {
		if want := e.header(kafka.DLQOffset) == "5"; (e.Redriven != nil) != want {
			t.Errorf("%s (origin %s): redriven %v, want %v", e.At, e.origin(), e.Redriven != nil, want)
		}
	}
	if _, err := redriveDLQ(ctx, cfg, after[1], after); err == nil || !strings.Contains(err.Error(), "refusing a second redrive") {
		t.Fatalf("redrive of the other dead letter of the origin: %v", err)
	}

	// A consumer that refuses the origin after the redrive has a dead
	// letter of its own, redriven for it alone; one naming no consumer
	// cannot be redriven for anybody.
	for _, c := range []struct {
		offset int64
		group  string
	}{{5, "group-late"}, {7, ""}} {
		orig.Partition, orig.Offset = 3, c.offset
		if err := cl.ProduceSync(ctx, kafka.DeadLetter(orig, errors.New("refused later"), c.group)).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	late, err := readDLQ(ctx, cfg)
	if err != nil || len(late) != 5 {
		t.Fatalf("%d entries, %v", len(late), err)
	}
	if _, err := redriveDLQ(ctx, cfg, late[4], late); err == nil || !strings.Contains(err.Error(), "names no consumer") {
		t.Fatalf("redrive of a dead letter naming no consumer: %v", err)
	}
	if _, err := redriveDLQ(ctx, cfg, late[3], late); err != nil {
		t.Fatal(err)
	}
	redriven = redriven[:0]
	if err := kafka.ReadToEnd(ctx, cfg, []string{schemas.TopicVmCommands}, func(kr *kgo.Record) error {
		if !kr.Attrs.IsControl() {
			redriven = append(redriven, kr)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(redriven) != 2 || kafka.Header(redriven[1], kafka.DLQRedriveFor) != "group-late" {
		t.Fatalf("after the late redrive: %d records, the last for %q", len(redriven), kafka.Header(redriven[len(redriven)-1], kafka.DLQRedriveFor))
	}
}
