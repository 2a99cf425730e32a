package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kgo"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/vmplane/vmplane/schemas"
)

func TestRegistryText(t *testing.T) {
	r := NewRegistry()
	c := r.Counter("x_total", "Things.", "topic")
	c.With(`a"b`).Add(2)
	c.With("plain").Inc()
	r.Gauge("g", "A gauge.").With().Set(-1.5)
	h := r.Histogram("lat_seconds", "Latency.", []float64{0.1, 1}, "p")
	h.With("vm").Observe(0.05)
	h.With("vm").Observe(0.5)
	h.With("vm").Observe(5)
	r.GaugeFunc("lag", "Lag.", []string{"group"}, func(emit func(float64, ...string)) { emit(3, "g1") })
	if r.Counter("x_total", "again", "topic").With("plain").Value() != 1 {
		t.Fatal("re-registration did not return the same family")
	}
	var b bytes.Buffer
	if err := r.Write(&b); err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	if _, err := parser.TextToMetricFamilies(bytes.NewReader(b.Bytes())); err != nil {
		t.Fatalf("not valid text exposition: %v\n%s", err, b.String())
	}
	for _, want := range []string{
		"# TYPE x_total counter\n",
		`x_total{topic="a\"b"} 2` + "\n",
		`x_total{topic="plain"} 1` + "\n",
		"# TYPE g gauge\ng -1.5\n",
		`lat_seconds_bucket{p="vm",le="0.1"} 1` + "\n",
		`lat_seconds_bucket{p="vm",le="1"} 2` + "\n",
		`lat_seconds_bucket{p="vm",le="+Inf"} 3` + "\n",
		`lat_seconds_sum{p="vm"} 5.55` + "\n",
		`lat_seconds_count{p="vm"} 3` + "\n",
		`lag{group="g1"} 3` + "\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in\n%s", want, b.String())
		}
	}
}

func TestTraceparentThroughHeaders(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	Install(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)))
	t.Cleanup(Uninstall)

	ctx, send := StartSend(t.Context(), schemas.TopicVmCommands, 1)
	h := map[string]string{"command_id": "c1"}
	Inject(ctx, h)
	send.End()
	kr := &kgo.Record{Topic: schemas.TopicVmCommands}
	InjectRecord(ctx, kr)
	if got := (RecordHeaders{kr}).Get("traceparent"); got != h["traceparent"] || got == "" {
		t.Fatalf("record header %q, map header %q", got, h["traceparent"])
	}
	// The consumer side, from the kgo headers and from the map.
	pctx := ExtractRecord(context.Background(), kr)
	_, proc := StartProcess(context.Background(), h, Message{Topic: kr.Topic, Group: "g", Partition: 2, Offset: 7})
	proc.End()
	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	s, p := spans[0], spans[1]
	if p.Parent.SpanID() != s.SpanContext.SpanID() || p.SpanContext.TraceID() != s.SpanContext.TraceID() ||
		trace.SpanContextFromContext(pctx).SpanID() != s.SpanContext.SpanID() {
		t.Fatal("the process span is not a child of the send span")
	}
	if p.Name != "process vm.commands.v1" || p.SpanKind != trace.SpanKindConsumer {
		t.Fatalf("process span %q kind %v", p.Name, p.SpanKind)
	}
	attrs := map[string]string{}
	for _, a := range p.Attributes {
		attrs[string(a.Key)] = a.Value.String()
	}
	want := map[string]string{"messaging.system": "kafka", "messaging.operation.type": "process",
		"messaging.destination.name": "vm.commands.v1", "messaging.consumer.group.name": "g",
		"messaging.destination.partition.id": "2", "messaging.kafka.offset": "7"}
	for k, v := range want {
		if attrs[k] != v {
			t.Errorf("%s = %q, want %q", k, attrs[k], v)
		}
	}
}

func TestNoProviderCarriesTheParent(t *testing.T) {
	Uninstall()
	parent := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	ctx, span := StartProcess(context.Background(), map[string]string{"traceparent": parent}, Message{Topic: "t"})
	span.End()
	h := map[string]string{}
	Inject(ctx, h)
	if h["traceparent"] != parent {
		t.Fatalf("without a provider the trace must pass through unchanged: %q", h["traceparent"])
	}
}

func TestLogHandlerAddsIDs(t *testing.T) {
	var b bytes.Buffer
	log := NewJSONLogger(&b, slog.LevelInfo)
	parent := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	ctx := WithJob(Extract(context.Background(), map[string]string{"traceparent": parent}), "job-1")
	log.InfoContext(ctx, "hello")
	log.Info("bare")
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	var first, second map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &second); err != nil {
		t.Fatal(err)
	}
	if first["trace_id"] != "0af7651916cd43dd8448eb211c80319c" || first["span_id"] != "b7ad6b7169203331" || first["job_id"] != "job-1" {
		t.Fatalf("ids missing: %v", first)
	}
	if _, ok := second["trace_id"]; ok {
		t.Fatalf("a line without a span has no trace id: %v", second)
	}
}

func TestJobMetrics(t *testing.T) {
	ref := schemas.JobRef{JobID: "metrics-job", JobType: "MetricsTest", At: 1000}
	ObserveOutputs(nil, []schemas.Record{{Value: &schemas.JobAccepted{JobRef: ref}}})
	if v := JobsInFlight.With("MetricsTest").Value(); v != 1 {
		t.Fatalf("in flight %v", v)
	}
	end := ref
	end.At = 3500
	ObserveOutputs(nil, []schemas.Record{{Value: &schemas.JobSucceeded{JobRef: end}}})
	if v := JobsInFlight.With("MetricsTest").Value(); v != 0 {
		t.Fatalf("in flight after the end %v", v)
	}
	if n := JobSeconds.With("MetricsTest", "succeeded").Count(); n != 1 {
		t.Fatalf("durations observed %d", n)
	}
	before := PowerReportsSuppressed.With().Value()
	ObserveOutputs(&schemas.Record{Topic: schemas.TopicVmPower}, nil)
	if PowerReportsSuppressed.With().Value() != before+1 {
		t.Fatal("a report with no outputs is a suppressed one")
	}
}

// TestDeadLetteredCountsMisrouted counts every dead letter as failed and a
// misrouted record, however wrapped, as misrouted too.
func TestDeadLetteredCountsMisrouted(t *testing.T) {
	failed := RecordsFailed.With("g-misrouted", "vm.power.v1")
	misrouted := RecordsMisrouted.With("g-misrouted", "vm.power.v1")
	DeadLettered("g-misrouted", "vm.power.v1", errors.New("undecodable"))
	DeadLettered("g-misrouted", "vm.power.v1", &schemas.DecodeError{Topic: "vm.power.v1", Err: &schemas.MisroutedError{Topic: "vm.power.v1", Key: "vm-1"}})
	if failed.Value() != 2 || misrouted.Value() != 1 {
		t.Fatalf("failed %v misrouted %v, want 2 and 1", failed.Value(), misrouted.Value())
	}
}
