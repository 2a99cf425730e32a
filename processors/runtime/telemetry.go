package runtime

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/trace"

	"github.com/vmplane/vmplane/internal/telemetry"
	"github.com/vmplane/vmplane/schemas"
)

// Observation of the poll loop: a span per stepped record, a child of the
// span its traceparent names, whose context the outputs carry on (so a job
// is one trace through every processor), and the runtime's metrics. The
// call sites in runtime.go are marked "telemetry:".

// stepSpan starts the span of stepping in, before Step.
func (p *Processor[S]) stepSpan(ctx context.Context, in *schemas.Record) (context.Context, trace.Span) {
	ctx, span := telemetry.StartProcess(ctx, in.Headers, telemetry.Message{
		Topic: in.Topic, Partition: in.Partition, Offset: in.Offset, Key: in.Key,
		Type: schemas.TypeName(in.Value), Group: p.Group(),
	})
	if id := in.Headers["command_id"]; id != "" {
		span.SetAttributes(telemetry.JobAttr(id))
	}
	return ctx, span
}

// stepped ends the span of in and stamps its context on outs; outputs
// without headers first get the ones carried from in.
func (p *Processor[S]) stepped(ctx context.Context, span trace.Span, in *schemas.Record, outs []schemas.Record) {
	processed(p.cfg.Name, in.Topic).Inc()
	telemetry.ObserveOutputs(in, outs)
	if span.SpanContext().IsValid() {
		for i := range outs {
			if outs[i].Headers == nil {
				outs[i].Headers = carryHeaders(in.Headers)
			}
			if outs[i].Headers == nil {
				outs[i].Headers = map[string]string{}
			}
			telemetry.Inject(ctx, outs[i].Headers)
		}
	}
	span.End()
}

// counters caches the processed counter of each group and topic: the
// loop counts every record, and a registry lookup joins strings.
var counters sync.Map // groupTopic → telemetry.Counter

type groupTopic struct{ name, topic string }

func processed(name, topic string) telemetry.Counter {
	k := groupTopic{name, topic}
	if c, ok := counters.Load(k); ok {
		return c.(telemetry.Counter)
	}
	c := telemetry.RecordsProcessed.With("vmplane-"+name, topic)
	counters.Store(k, c)
	return c
}

// deadLettered counts a record sent to dlq.v1.
func (p *Processor[S]) deadLettered(kr *kgo.Record) {
	telemetry.RecordsFailed.With(p.Group(), kr.Topic).Inc()
}

// ticked observes the outputs of a timer.
func (p *Processor[S]) ticked(outs []schemas.Record) { telemetry.ObserveOutputs(nil, outs) }

// ended records the transaction's commit latency and the state's size.
func (p *Processor[S]) ended(start time.Time, committed bool) {
	if !committed {
		telemetry.TransactionsAborted.With(p.cfg.Name).Inc()
		return
	}
	telemetry.CommitSeconds.With(p.cfg.Name).Observe(time.Since(start).Seconds())
	telemetry.StateKeys.With(p.cfg.Name).Set(float64(p.st.n))
}
