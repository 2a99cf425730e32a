package poison

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/internal/testkit"
	"github.com/vmplane/vmplane/ops/roles"
	"github.com/vmplane/vmplane/processors/engine"
	"github.com/vmplane/vmplane/projectors/journal"
	"github.com/vmplane/vmplane/projectors/postgres"
	"github.com/vmplane/vmplane/schemas"
)

// stuckAfter is how long a consumer may take to move past one record.
const stuckAfter = 20 * time.Second

// FuzzConsumers feeds one hostile record per input to every processor and
// projector, each running as in a deployment, and waits for every consumer
// of its topic to move past it. The input drives which topic, which record
// type (one the topic carries or not), its field values, a byte mutation
// of its encoding or plain random bytes, its key, its headers and its
// partition (the key's or another).
//
// `go test` runs the seeds; `make test` also fuzzes for a short time:
//
//	go test -run '^$' -fuzz '^FuzzConsumers$' -fuzztime 30s -parallel 1 ./ops/poison/
func FuzzConsumers(f *testing.F) {
	if testing.Short() {
		f.Skip("runs the broker, Postgres and ClickHouse")
	}
	w := startWorld(f)
	for i, topic := range w.topics {
		spec, _ := schemas.TopicByName(topic)
		for j := range spec.Types {
			for mode := range byte(modes) {
				f.Add([]byte{byte(i), mode, byte(j), byte(i*7 + j), 0, 3, 1, 2, 0x80, 0x7f, 0xff})
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		kr, about := w.record(&source{b: data})
		w.send(t, kr, about)
	})
}

// world is the consumers under test and the clients that feed and watch
// them.
type world struct {
	kcfg   kafka.Config
	codec  *schemas.Codec
	cl     *kgo.Client // partitions by key, as the system's producers
	manual *kgo.Client // puts a record on the partition it names
	adm    *kadm.Client
	pool   *pgxpool.Pool
	// readers lists, for each input topic, the consumers that read it.
	readers map[string][]consumer
	topics  []string
	failed  chan error // a consumer whose Run returned
	// stuck is the first stuck partition: the inputs after it fail at once
	// instead of waiting for it again.
	stuck string
}

// consumer is one group and how to read its positions.
type consumer struct {
	group    string
	position func(ctx context.Context, topic string, partition int32) (int64, error)
}

func startWorld(f testing.TB) *world {
	kcfg, _ := testkit.Kafka(f)
	dsn := testkit.Postgres(f)
	chAddr, chDB := testkit.ClickHouse(f)
	logger := slog.New(slog.DiscardHandler)
	codec, err := kcfg.Codec()
	if err != nil {
		f.Fatal(err)
	}
	w := &world{kcfg: kcfg, codec: codec, readers: map[string][]consumer{}, failed: make(chan error, 16)}
	if w.cl, err = kgo.NewClient(kcfg.Opts()...); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(w.cl.Close)
	if w.manual, err = kgo.NewClient(kcfg.Opts(kgo.RecordPartitioner(kgo.ManualPartitioner()))...); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(w.manual.Close)
	w.adm = kadm.NewClient(w.cl)
	if w.pool, err = pgxpool.New(context.Background(), dsn); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(w.pool.Close)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	f.Cleanup(func() { cancel(); wg.Wait() })
	run := func(name string, r roles.Runner) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.Run(ctx); ctx.Err() == nil {
				w.failed <- fmt.Errorf("%s stopped: %v", name, err)
			}
		}()
	}
	committed := func(group string) func(context.Context, string, int32) (int64, error) {
		return func(ctx context.Context, topic string, partition int32) (int64, error) {
			offs, err := w.adm.FetchOffsets(ctx, group)
			if err != nil {
				return 0, err
			}
			o, _ := offs.Lookup(topic, partition)
			return o.At, o.Err
		}
	}

	opts := roles.Options{Kafka: kcfg, Logger: logger}
	var procs []roles.Processor
	for _, kind := range roles.ProcessorKinds {
		p, err := roles.NewProcessor(kind, opts, roles.Settings{}, engine.SystemClock{})
		if err != nil {
			f.Fatal(err)
		}
		in := p.(interface {
			Group() string
			Inputs() []string
		})
		for _, topic := range in.Inputs() {
			w.readers[topic] = append(w.readers[topic], consumer{in.Group(), committed(in.Group())})
		}
		procs = append(procs, p)
		run("processor-"+kind, p)
	}
	pg, err := postgres.New(postgres.Config{Kafka: kcfg, DSN: dsn, Logger: logger})
	if err != nil {
		f.Fatal(err)
	}
	stored := postgres.StoredLag(w.pool, kcfg, postgres.DefaultGroup)
	for _, topic := range postgres.Topics {
		w.readers[topic] = append(w.readers[topic], consumer{postgres.DefaultGroup,
			func(ctx context.Context, topic string, partition int32) (int64, error) {
				pos, err := stored.Positions(ctx)
				return pos[topic][partition], err
			}})
	}
	run("projector-postgres", pg)
	jp, err := journal.New(journal.Config{Kafka: kcfg, Addr: chAddr, Database: chDB, FlushInterval: 20 * time.Millisecond, Logger: logger})
	if err != nil {
		f.Fatal(err)
	}
	const journalGroup = "vmplane-projector-journal"
	for _, topic := range journal.Topics {
		w.readers[topic] = append(w.readers[topic], consumer{journalGroup, committed(journalGroup)})
	}
	run("projector-journal", jp)

	for topic := range w.readers {
		w.topics = append(w.topics, topic)
	}
	slices.Sort(w.topics)
	deadline := time.Now().Add(time.Minute)
	for _, p := range procs {
		for !p.Ready() {
			if time.Now().After(deadline) {
				f.Fatalf("processor not ready: %v", p.ReadyErr())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return w
}

// send produces kr and waits until every consumer of its topic has moved
// past it.
func (w *world) send(t *testing.T, kr *kgo.Record, about string) {
	if w.stuck != "" {
		t.Fatalf("an earlier record left a partition stuck: %s", w.stuck)
	}
	cl := w.cl
	if kr.Partition >= 0 {
		cl = w.manual
	}
	ctx, cancel := context.WithTimeout(t.Context(), stuckAfter)
	defer cancel()
	if err := cl.ProduceSync(ctx, kr).FirstErr(); err != nil {
		t.Fatalf("produce %s: %v", about, err)
	}
	for _, c := range w.readers[kr.Topic] {
		for {
			select {
			case err := <-w.failed:
				t.Fatalf("after %s: %v", about, err)
			default:
			}
			pos, err := c.position(ctx, kr.Topic, kr.Partition)
			if err == nil && pos > kr.Offset {
				break
			}
			if ctx.Err() != nil {
				w.stuck = fmt.Sprintf("%s stays at %d of %s/%d, the record is at %d (%s; last error %v)",
					c.group, pos, kr.Topic, kr.Partition, kr.Offset, about, err)
				t.Fatalf("stuck partition: %s", w.stuck)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// record builds the hostile record the input describes, and a description
// of it for failures.
func (w *world) record(src *source) (*kgo.Record, string) {
	topic := w.topics[int(src.byte())%len(w.topics)]
	spec, _ := schemas.TopicByName(topic)
	mode := src.byte() % modes
	types := spec.Types
	if mode == otherType || len(types) == 0 {
		types = allTypes
	}
	name := types[int(src.byte())%len(types)]
	v, _ := schemas.New(name)
	fill(reflectValue(v), src, "")
	value, err := w.codec.Encode(context.Background(), v)
	if err != nil {
		// A value the encoder refuses (none today) is sent as its name.
		value = []byte(name)
	}
	switch mode {
	case mutated:
		for n := int(src.byte() % 4); n >= 0 && len(value) > 0; n-- {
			i := int(src.byte()) % len(value)
			value[i] ^= src.byte() | 1
		}
		if src.byte()%3 == 0 {
			value = value[:int(src.byte())%len(value)]
		}
	case random:
		value = src.bytes(int(src.byte()))
	}
	kr := &kgo.Record{Topic: topic, Value: value, Partition: -1}
	kr.Key = []byte(pick(src, keys))
	if src.byte()%8 == 0 {
		kr.Key = src.bytes(int(src.byte() % 16))
	}
	kr.Headers = []kgo.RecordHeader{{Key: "type", Value: []byte(name)}}
	switch src.byte() % 6 {
	case 0:
		kr.Headers[0].Value = []byte(pick(src, allTypes))
	case 1:
		kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: "dlq.topic", Value: []byte(schemas.TopicVmCommands)})
	case 2:
		kr.Headers = nil
	}
	if src.byte()%4 == 0 {
		spec, _ := schemas.TopicByName(topic)
		kr.Partition = int32(src.byte()) % spec.PartitionsOf()
	}
	return kr, fmt.Sprintf("%s %s (mode %d) key %q partition %d value %x", topic, name, mode, kr.Key, kr.Partition, truncated(value))
}

const (
	validType = iota // a type the topic carries, valid values
	otherType        // any type
	mutated          // a valid encoding with bytes flipped or cut
	random           // random bytes
	modes
)

func truncated(b []byte) []byte { return b[:min(len(b), 64)] }
