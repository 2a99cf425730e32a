package engine

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/trace"

	"github.com/vmplane/vmplane/internal/telemetry"
	"github.com/vmplane/vmplane/schemas"
)

// telemetryHooks are the default Hooks: a span per stepped record, a child
// of the span its traceparent names, whose context the outputs carry on (so
// a job is one trace through every processor), and the engine's metrics.
type telemetryHooks struct {
	name, group string
	// processed caches the processed counter of each topic: the loop
	// counts every record, and a registry lookup joins strings. Only the
	// poll loop's goroutine uses it.
	processed map[string]telemetry.Counter
}

// newTelemetryHooks creates the processor's series at 0 for its inputs,
// so that /metrics shows them before the first record.
func newTelemetryHooks(name, group string, inputs []string) *telemetryHooks {
	telemetry.PrepareConsumer(group, inputs...)
	telemetry.PrepareProcessor(name)
	h := &telemetryHooks{name: name, group: group, processed: map[string]telemetry.Counter{}}
	for _, t := range inputs {
		h.processed[t] = telemetry.RecordsProcessed.With(group, t)
	}
	return h
}

// OnStep starts the span of stepping in.
func (h *telemetryHooks) OnStep(ctx context.Context, in schemas.Record) context.Context {
	ctx, span := telemetry.StartProcess(ctx, in.Headers, telemetry.Message{
		Topic: in.Topic, Partition: in.Partition, Offset: in.Offset, Key: in.Key,
		Type: schemas.TypeName(in.Value), Group: h.group,
	})
	if id := in.Headers["command_id"]; id != "" {
		span.SetAttributes(telemetry.JobAttr(id))
	}
	return ctx
}

// OnStepped counts in, ends its span and stamps the span's context on
// outs; outputs without headers first get the ones carried from in.
func (h *telemetryHooks) OnStepped(ctx context.Context, in schemas.Record, outs []schemas.Record) {
	c, ok := h.processed[in.Topic]
	if !ok {
		c = telemetry.RecordsProcessed.With(h.group, in.Topic)
		h.processed[in.Topic] = c
	}
	c.Inc()
	telemetry.ObserveOutputs(&in, outs)
	span := trace.SpanFromContext(ctx)
	if span.SpanContext().IsValid() {
		for i := range outs {
			if outs[i].Headers == nil {
				outs[i].Headers = CarryHeaders(in.Headers)
			}
			if outs[i].Headers == nil {
				outs[i].Headers = map[string]string{}
			}
			telemetry.Inject(ctx, outs[i].Headers)
		}
	}
	span.End()
}

// OnTick observes the outputs of a timer.
func (h *telemetryHooks) OnTick(_ string, outs []schemas.Record) { telemetry.ObserveOutputs(nil, outs) }

// OnDeadLetter counts a record sent to dlq.v1.
func (h *telemetryHooks) OnDeadLetter(kr *kgo.Record, err error) {
	telemetry.DeadLettered(h.group, kr.Topic, err)
}

// OnEnd records the transaction's commit latency and the state's size.
func (h *telemetryHooks) OnEnd(took time.Duration, committed bool, keys int) {
	if !committed {
		telemetry.TransactionsAborted.With(h.name).Inc()
		return
	}
	telemetry.CommitSeconds.With(h.name).Observe(took.Seconds())
	telemetry.StateKeys.With(h.name).Set(float64(keys))
}

// OnHold shows how many partitions' timers are held.
func (h *telemetryHooks) OnHold(_ []int32, _ bool, holding int) {
	telemetry.TimersHeld.With(h.name).Set(float64(holding))
}
