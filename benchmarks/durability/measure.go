package durability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
)

// size is how much one broker takes of each load.
type size struct {
	produces  int // produces awaited one at a time
	pipelined int // records of the pipelined burst
	txns      int // transactional commit rounds
	syncs     int // appends and fsyncs of the disk's own figure
}

const (
	recordBytes = 200
	// partitions is the VM key class's (schemas.Partitions): a processor's
	// output topics have as many.
	partitions = 12
	keys       = 10_000
	// A round writes an event and a changelog record for each of
	// txnKeys keys: 10 records on 2 topics.
	txnKeys = 5
	// warmup produces and rounds, not timed: connections, producer ids,
	// the first batch of each partition.
	warmup = 50
	// batchMaxBytes is kfake's message.max.bytes (1 MiB): a larger batch
	// is refused.
	batchMaxBytes = 1 << 20
)

var (
	topicEvents    = "bench.durability.events"
	topicChangelog = "bench.durability.state"
)

// loads is what one broker measured.
type loads struct {
	produce   []time.Duration // each awaited produce
	pipelined time.Duration   // the whole burst, first Produce to Flush
	records   int             // records of the burst
	txn       []time.Duration // each round, Begin to End
	// txnPartitions is the partitions the timed rounds wrote, summed:
	// each takes a batch and a commit marker, each synced.
	txnPartitions int
}

// measure runs the three loads against a fresh broker at addrs.
func measure(ctx context.Context, addrs []string, sz size) (loads, error) {
	var l loads
	kcfg := kafka.Config{Brokers: addrs}
	if err := createTopics(ctx, kcfg); err != nil {
		return l, err
	}
	value := make([]byte, recordBytes)
	for i := range value {
		value[i] = byte(rand.N(256))
	}
	var err error
	if l.produce, err = produceOneAtATime(ctx, kcfg, value, sz.produces); err != nil {
		return l, fmt.Errorf("one produce at a time: %w", err)
	}
	if l.txn, l.txnPartitions, err = transactions(ctx, kcfg, value, sz.txns); err != nil {
		return l, fmt.Errorf("transactions: %w", err)
	}
	if l.pipelined, err = pipeline(ctx, kcfg, value, sz.pipelined); err != nil {
		return l, fmt.Errorf("pipelined produce: %w", err)
	}
	l.records = sz.pipelined
	return l, nil
}

func createTopics(ctx context.Context, kcfg kafka.Config) error {
	cl, err := kgo.NewClient(kcfg.Opts()...)
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopics(ctx, partitions, 1, nil, topicEvents, topicChangelog)
	if err != nil {
		return fmt.Errorf("create topics: %w", err)
	}
	return resp.Error()
}

func key() []byte { return fmt.Appendf(nil, "vm-%05d", rand.N(keys)) }

// produceOneAtATime times n ProduceSync calls of one keyed record, each
// awaited before the next, with the gateway's client options (acks=all,
// idempotent; ProduceSync does not linger).
func produceOneAtATime(ctx context.Context, kcfg kafka.Config, value []byte, n int) ([]time.Duration, error) {
	cl, err := kgo.NewClient(kcfg.Opts(kgo.RequiredAcks(kgo.AllISRAcks()))...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	took := make([]time.Duration, 0, n)
	for i := range warmup + n {
		r := &kgo.Record{Topic: topicEvents, Key: key(), Value: value}
		start := time.Now()
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			return nil, err
		}
		if i >= warmup {
			took = append(took, time.Since(start))
		}
	}
	return took, nil
}

// transactions times n rounds of a processor batch: BeginTransaction, an
// event and a changelog record for each of txnKeys keys, Flush and
// EndTransaction(TryCommit), with the runtime's transactional options. It
// also returns how many partitions the timed rounds wrote, summed.
func transactions(ctx context.Context, kcfg kafka.Config, value []byte, n int) (took []time.Duration, parts int, err error) {
	cl, err := kgo.NewClient(kcfg.Opts(kgo.TransactionalID("bench-durability"), kgo.TransactionTimeout(60*time.Second))...)
	if err != nil {
		return nil, 0, err
	}
	defer cl.Close()
	p := &producer{cl: cl}
	took = make([]time.Duration, 0, n)
	for i := range warmup + n {
		p.wrote = map[partition]bool{}
		start := time.Now()
		if err := cl.BeginTransaction(); err != nil {
			return nil, 0, err
		}
		for range txnKeys {
			k := key()
			p.produce(ctx, &kgo.Record{Topic: topicEvents, Key: k, Value: value})
			p.produce(ctx, &kgo.Record{Topic: topicChangelog, Key: k, Value: value})
		}
		if err := p.flush(ctx); err != nil {
			_ = cl.EndTransaction(ctx, kgo.TryAbort)
			return nil, 0, err
		}
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			return nil, 0, err
		}
		if i >= warmup {
			took = append(took, time.Since(start))
			parts += len(p.wrote)
		}
	}
	return took, parts, nil
}

// pipeline produces n keyed records without waiting for each (the roles'
// client options: 2 ms linger, acks=all, idempotent; batches of at most
// 1 MiB) and returns the time from the first Produce to Flush's return.
func pipeline(ctx context.Context, kcfg kafka.Config, value []byte, n int) (time.Duration, error) {
	cl, err := kgo.NewClient(kcfg.Opts(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchMaxBytes(batchMaxBytes))...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	for range warmup {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topicChangelog, Key: key(), Value: value}).FirstErr(); err != nil {
			return 0, err
		}
	}
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topicChangelog, Key: key(), Value: value}
	}
	p := &producer{cl: cl}
	start := time.Now()
	for _, r := range recs {
		p.produce(ctx, r)
	}
	if err := p.flush(ctx); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

type partition struct {
	topic string
	p     int32
}

// producer produces asynchronously and keeps the first error, so that a
// refused record fails the run instead of going unnoticed; with wrote
// set, it notes there the partitions written.
type producer struct {
	cl    *kgo.Client
	mu    sync.Mutex
	err   error
	wrote map[partition]bool
}

func (p *producer) produce(ctx context.Context, r *kgo.Record) {
	p.cl.Produce(ctx, r, func(r *kgo.Record, err error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if err != nil && p.err == nil {
			p.err = err
		}
		if err == nil && p.wrote != nil {
			p.wrote[partition{r.Topic, r.Partition}] = true
		}
	})
}

func (p *producer) flush(ctx context.Context) error {
	if err := p.cl.Flush(ctx); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// diskSyncs times n appends of recordBytes to a new file under varDir,
// each followed by fsync: what the disk itself takes for the smallest
// durable write, without a broker.
func diskSyncs(varDir string, n int) ([]time.Duration, error) {
	if err := os.MkdirAll(varDir, 0o755); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(varDir, "bench-durability-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }() // best effort: a scratch directory under var/
	f, err := os.OpenFile(filepath.Join(dir, "appends"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	took, err := syncedAppends(f, n)
	if cerr := f.Close(); err == nil && cerr != nil {
		return nil, cerr
	}
	return took, err
}

// syncedAppends times n appends of recordBytes to f, each followed by
// fsync.
func syncedAppends(f *os.File, n int) ([]time.Duration, error) {
	buf := make([]byte, recordBytes)
	took := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if _, err := f.Write(buf); err != nil {
			return nil, err
		}
		if err := f.Sync(); err != nil {
			return nil, err
		}
		took = append(took, time.Since(start))
	}
	return took, nil
}
