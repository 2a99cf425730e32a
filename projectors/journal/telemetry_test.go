package journal

import (
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/internal/telemetry"
	"github.com/vmplane/vmplane/schemas"
)

// TestInsertSpans: a record that carried a traceparent gets a process
// span, a child of the span that produced it, ended once its rows are in
// ClickHouse; the batch insert is a span linked to that trace. Records
// without a traceparent get no span of their own.
func TestInsertSpans(t *testing.T) {
	if testing.Short() {
		t.Skip("needs ClickHouse")
	}
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	telemetry.Install(tp)
	t.Cleanup(telemetry.Uninstall)

	_, addr, db := testClickHouse(t)
	cfg, cl := broker(t)
	ctx, parent := tp.Tracer("test").Start(t.Context(), "send "+schemas.TopicVmEvents)
	h := map[string]string{}
	telemetry.Inject(ctx, h)
	parent.End()
	evs := jobEvents("vm-1", "job-1", time.Now().UnixMilli())
	codec := schemas.NewCodec(nil)
	for i, v := range evs {
		rec := schemas.Record{Topic: schemas.TopicVmEvents, Key: "vm-1", Value: v}
		if i == 1 {
			rec.Headers = h
		}
		kr, err := kafka.ToKafka(t.Context(), codec, rec)
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(t.Context(), kr).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	p, err := New(Config{Kafka: cfg, Addr: addr, Database: db, FlushInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	run(t, p)

	pc := parent.SpanContext()
	var process, batch *tracetest.SpanStub
	eventually(t, 20*time.Second, "a record span and a linked insert span", func() bool {
		process, batch = nil, nil
		for _, s := range exp.GetSpans() {
			switch s.Name {
			case "process " + schemas.TopicVmEvents:
				process = &s
			case "process " + p.cfg.Group:
				for _, l := range s.Links {
					if l.SpanContext.SpanID() == pc.SpanID() {
						batch = &s
					}
				}
			}
		}
		return process != nil && batch != nil
	})
	if process.Parent.SpanID() != pc.SpanID() || process.SpanContext.TraceID() != pc.TraceID() {
		t.Fatalf("record span's parent %v, want %v", process.Parent, pc)
	}
	attrs := map[string]string{}
	for _, a := range append(process.Attributes, batch.Attributes...) {
		attrs[string(a.Key)] = a.Value.String()
	}
	want := map[string]string{
		"messaging.consumer.group.name": p.cfg.Group, "messaging.destination.name": schemas.TopicVmEvents,
		"vmplane.record.type": "JobStepped", "db.system.name": "clickhouse", "vmplane.journal.job_rows": "5",
	}
	for k, v := range want {
		if attrs[k] != v {
			t.Errorf("attribute %s = %q, want %q", k, attrs[k], v)
		}
	}
	if n := len(exp.GetSpans()); n != 3 {
		t.Errorf("%d spans, want 3 (the producer's, one record span, one insert span)", n)
	}
}
