package gateway

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/schemas"
)

// Publisher appends command records to Kafka. Publish returns once every
// record is acknowledged by the broker, so a 202 means the command is in
// the log.
type Publisher interface {
	Publish(ctx context.Context, recs ...schemas.Record) error
}

// KafkaPublisher is the Publisher of a running gateway: an idempotent
// producer (the broker drops a retried batch) and synchronous produces.
type KafkaPublisher struct {
	cl    *kgo.Client
	codec *schemas.Codec
	names kafka.Config // the records' physical topics
}

// NewKafkaPublisher connects a producer with cfg.
func NewKafkaPublisher(cfg kafka.Config) (*KafkaPublisher, error) {
	codec, err := cfg.Codec()
	if err != nil {
		return nil, fmt.Errorf("gateway publisher codec: %w", err)
	}
	// franz-go's producer is idempotent unless disabled; acks=all is what
	// idempotence requires and what "in the log" means.
	cl, err := kgo.NewClient(cfg.Opts(kgo.RequiredAcks(kgo.AllISRAcks()))...)
	if err != nil {
		return nil, fmt.Errorf("gateway publisher client: %w", err)
	}
	return &KafkaPublisher{cl: cl, codec: codec, names: cfg}, nil
}

// Publish encodes recs (with their headers, command_id among them) and
// produces them synchronously.
func (p *KafkaPublisher) Publish(ctx context.Context, recs ...schemas.Record) error {
	krs := make([]*kgo.Record, 0, len(recs))
	for _, r := range recs {
		r.Headers = traced(ctx, r) // telemetry: the command starts the job's trace
		kr, err := kafka.ToKafka(ctx, p.codec, r)
		if err != nil {
			return fmt.Errorf("publish: %w", err)
		}
		krs = append(krs, p.names.Out(kr))
	}
	if err := p.cl.ProduceSync(ctx, krs...).FirstErr(); err != nil {
		return fmt.Errorf("publish %d record(s): %w", len(krs), err)
	}
	return nil
}

// Ping checks that a broker answers, for /readyz.
func (p *KafkaPublisher) Ping(ctx context.Context) error {
	if err := p.cl.Ping(ctx); err != nil {
		return fmt.Errorf("kafka ping: %w", err)
	}
	return nil
}

// Client exposes the producer's client (EnsureTopics at start-up).
func (p *KafkaPublisher) Client() *kgo.Client { return p.cl }

// Close flushes nothing (every produce is synchronous) and closes the client.
func (p *KafkaPublisher) Close() { p.cl.Close() }
