package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/internal/telemetry"
)

// Observation of the projector: a span per applied batch, a process span
// per record that carried a traceparent (a child of the processor span that
// wrote it, so the read-model write is part of the job's trace), the
// per-topic counts, apply latency and batch sizes. The call sites in
// projector.go are marked "telemetry:".

// observeBatch starts the spans of batch; the returned function ends them
// once the batch is committed.
func (p *Projector) observeBatch(ctx context.Context, batch []decoded) func() {
	start := time.Now()
	var links []trace.Link
	var spans []trace.Span
	for _, d := range batch {
		if l, ok := telemetry.Link(d.rec.Headers); ok {
			if len(links) < 32 {
				links = append(links, l)
			}
			_, span := telemetry.StartProcess(ctx, d.rec.Headers, telemetry.Message{
				Topic: d.kr.Topic, Partition: d.kr.Partition, Offset: d.kr.Offset,
				Key: string(d.kr.Key), Group: p.cfg.Group,
			})
			spans = append(spans, span)
		}
	}
	_, batchSpan := telemetry.StartBatch(ctx, p.cfg.Group, len(batch), links)
	return func() {
		for _, d := range batch {
			if d.ok {
				telemetry.RecordsProcessed.With(p.cfg.Group, d.kr.Topic).Inc()
			}
		}
		telemetry.ProjectorApplySeconds.With(p.cfg.Group).Observe(time.Since(start).Seconds())
		telemetry.ProjectorBatchRecords.With(p.cfg.Group).Observe(float64(len(batch)))
		for _, s := range spans {
			s.End()
		}
		batchSpan.End()
	}
}

// deadLettered counts a record sent to dlq.v1.
func (p *Projector) deadLettered(topic string, err error) {
	telemetry.DeadLettered(p.cfg.Group, topic, err)
}

// LagSource reports the group's lag from the positions stored beside the
// rows (consumer_offsets), which are the truth for this projector: its
// Kafka group commits nothing.
func (p *Projector) LagSource() telemetry.LagSource {
	return StoredLag(p.pool, p.cfg.Kafka, p.cfg.Group)
}

// StoredLag is the lag source of a Postgres projector group whose
// positions are in the consumer_offsets table of pool's database, under
// logical names; the lag is reported under kcfg's physical ones.
func StoredLag(pool *pgxpool.Pool, kcfg kafka.Config, group string) telemetry.LagSource {
	return telemetry.LagSource{
		Group:  kcfg.Group(group),
		Topics: kcfg.Topics(Topics...),
		Positions: func(ctx context.Context) (map[string]map[int32]int64, error) {
			stored, err := readOffsets(ctx, pool, group)
			if err != nil {
				return nil, err
			}
			out := map[string]map[int32]int64{}
			for tp, n := range stored {
				t := kcfg.Topic(tp.topic)
				if out[t] == nil {
					out[t] = map[int32]int64{}
				}
				out[t][tp.partition] = n
			}
			return out, nil
		},
	}
}
