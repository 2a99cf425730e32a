package rebuild

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/schemas"
)

// eventLog is a broker holding a history: the input every repetition
// replays.
type eventLog struct {
	broker     *kafka.Broker
	kcfg       kafka.Config
	events     int
	vms, hosts int
	took       time.Duration
	perTopic   map[string]int
}

// batchMaxBytes keeps producer batches within kfake's message.max.bytes
// (1 MiB): a larger batch is refused, and only the produce callback says so.
const batchMaxBytes = 1 << 20

// writeLog starts a kfake broker with the topic table applied and produces
// a history of n records into it.
func writeLog(ctx context.Context, n int) (*eventLog, error) {
	start := time.Now()
	b, err := kafka.StartBroker("127.0.0.1:0", "")
	if err != nil {
		return nil, err
	}
	l := &eventLog{broker: b, kcfg: kafka.Config{Brokers: b.Addrs()}, events: n, perTopic: map[string]int{}}
	cl, err := kgo.NewClient(l.kcfg.Opts(kgo.ProducerBatchMaxBytes(batchMaxBytes), kgo.MaxBufferedRecords(200_000))...)
	if err != nil {
		b.Close()
		return nil, err
	}
	defer cl.Close()
	if err := l.kcfg.EnsureTopics(ctx, cl, schemas.Topics, kafka.TopicOptions{Replication: 1}); err != nil {
		b.Close()
		return nil, err
	}
	codec := schemas.NewCodec(nil)
	var mu sync.Mutex
	var perr error
	fail := func(err error) {
		mu.Lock()
		if perr == nil {
			perr = err
		}
		mu.Unlock()
	}
	l.vms, l.hosts = history(n, func(topic, key string, v any) {
		kr, err := kafka.ToKafka(ctx, codec, schemas.Record{Topic: topic, Key: key, Value: v})
		if err != nil {
			fail(err)
			return
		}
		l.perTopic[topic]++
		cl.Produce(ctx, l.kcfg.Out(kr), func(_ *kgo.Record, err error) {
			if err != nil {
				fail(err)
			}
		})
	})
	if err := cl.Flush(ctx); err != nil {
		fail(err)
	}
	if perr != nil {
		b.Close()
		return nil, fmt.Errorf("produce the history: %w", perr)
	}
	l.took = time.Since(start)
	return l, nil
}

func (l *eventLog) close() { l.broker.Close() }
