package journal

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/vmplane/vmplane/internal/telemetry"
	"github.com/vmplane/vmplane/schemas"
)

// Observation of the projector: a span per batch insert into ClickHouse
// ("process <group>", linked to the traces of up to maxLinks of its
// records), a process span per record that carried a traceparent (a child
// of the processor span that wrote it, ended when its rows are in
// ClickHouse, so the journal write is part of the job's trace), rows per
// table, records per batch and the apply latency. The call sites in
// projector.go are marked "telemetry:".

// maxLinks bounds the links of one batch span.
const maxLinks = 32

// recordSpan is the open span of a record of the pending batch.
type recordSpan struct {
	topic     string
	partition int32
	span      trace.Span
}

// traced is the trace context of the pending batch, guarded by p.mu.
type traced struct {
	spans []recordSpan
	links []trace.Link
}

// traceRecord opens the process span of a record that carried a
// traceparent; p.mu is held.
func (p *Projector) traceRecord(ctx context.Context, kr *kgo.Record, rec schemas.Record) {
	l, ok := telemetry.Link(rec.Headers)
	if !ok {
		return
	}
	if len(p.traces.links) < maxLinks {
		p.traces.links = append(p.traces.links, l)
	}
	_, span := telemetry.StartProcess(ctx, rec.Headers, telemetry.Message{
		Topic: kr.Topic, Partition: kr.Partition, Offset: kr.Offset, Key: string(kr.Key),
		Type: schemas.TypeName(rec.Value), Group: p.cfg.Group,
	})
	p.traces.spans = append(p.traces.spans, recordSpan{topic: kr.Topic, partition: kr.Partition, span: span})
}

// startInsert opens the span of a batch's insert (tr are its records'
// traces). end closes it and the records' spans: err nil means the rows are
// in.
func (p *Projector) startInsert(ctx context.Context, r *rows, records int, tr *traced) (context.Context, func(err error)) {
	ctx, span := telemetry.StartBatch(ctx, p.cfg.Group, records, tr.links)
	span.SetAttributes(
		attribute.String("db.system.name", "clickhouse"),
		attribute.String("db.operation.name", "INSERT"),
		attribute.String("db.namespace", p.cfg.Database),
		attribute.Int("vmplane.journal.job_rows", len(r.jobs)),
		attribute.Int("vmplane.journal.event_rows", len(r.events)),
		attribute.Int("vmplane.journal.host_rows", len(r.hosts)),
		attribute.Int("vmplane.journal.lease_rows", len(r.leases)),
	)
	return ctx, func(err error) {
		telemetry.Fail(span, err)
		span.End()
		if err != nil {
			// The records stay pending: their spans end with the insert
			// that takes them.
			return
		}
		for _, s := range tr.spans {
			s.span.End()
		}
		*tr = traced{}
	}
}

// takeBack puts the traces of a batch put off in flight before these.
func (t *traced) takeBack(older traced) {
	t.spans = append(older.spans, t.spans...)
	links := append(older.links, t.links...)
	t.links = links[:min(len(links), maxLinks)]
}

// untrace ends the spans of records of partitions this member lost (all
// of them when gone is nil: a new Run re-reads from the commit); their
// next owner reads them again. p.mu is held.
func (p *Projector) untrace(gone map[string][]int32) {
	kept := p.traces.spans[:0]
	for _, s := range p.traces.spans {
		lost := gone == nil
		for _, part := range gone[s.topic] {
			lost = lost || part == s.partition
		}
		if lost {
			s.span.SetAttributes(attribute.Bool("vmplane.partition_revoked", true))
			s.span.End()
			continue
		}
		kept = append(kept, s)
	}
	p.traces.spans = kept
}

// journalTables are the tables an insert writes, the label values of
// vmplane_clickhouse_batch_rows.
var journalTables = []string{"job_journal", "vm_events", "host_events", "lease_events"}

// inserted records an insert of r into ClickHouse that succeeded: rows per
// table, records per batch and the apply latency since start (retries
// included).
func (p *Projector) inserted(start time.Time, r *rows, records int) {
	for table, n := range map[string]int{"job_journal": len(r.jobs), "vm_events": len(r.events), "host_events": len(r.hosts), "lease_events": len(r.leases)} {
		if n > 0 {
			telemetry.ClickHouseBatchRows.With(table).Observe(float64(n))
		}
	}
	telemetry.ProjectorApplySeconds.With(p.cfg.Group).Observe(time.Since(start).Seconds())
	telemetry.ProjectorBatchRecords.With(p.cfg.Group).Observe(float64(records))
}

// LagSource reports the group's lag from its Kafka commits.
func (p *Projector) LagSource() telemetry.LagSource {
	return telemetry.LagSource{Group: p.cfg.Kafka.Group(p.cfg.Group)}
}
