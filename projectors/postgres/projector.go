package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/internal/telemetry"
	"github.com/vmplane/vmplane/schemas"
)

// DefaultGroup is the consumer group of the Postgres projector.
const DefaultGroup = "vmplane-projector-postgres"

// Topics are the topics the projector folds into read models.
var Topics = []string{
	schemas.TopicVmEvents, schemas.TopicVmCommands, schemas.TopicHostStatus,
	schemas.TopicPlacementEvents, schemas.TopicCatalog, schemas.TopicAccounts, schemas.TopicLeaseEvents, schemas.TopicAlertAcks,
	schemas.TopicSettings,
}

// Config configures a Projector.
type Config struct {
	Kafka kafka.Config
	// DSN is the Postgres connection string of the read models.
	DSN string
	// Group is the consumer group; empty means DefaultGroup. The group only
	// spreads partitions over instances: positions live in consumer_offsets.
	Group string
	// InstanceID makes the projector a static member of its group
	// (group.instance.id "<group>-<InstanceID>"): restarted after a crash,
	// it takes its partitions back at once instead of after the dead
	// member's session timeout. Unique among running instances; empty: a
	// dynamic member.
	InstanceID string
	Logger     *slog.Logger
	// MaxBatch caps the records applied in one transaction (default 10000).
	MaxBatch int
	// RetryAlarm is how long the same work may be retried before Health
	// reports it (default 30 s).
	RetryAlarm time.Duration
}

// Projector applies the log to the read models exactly once.
type Projector struct {
	cfg   Config
	log   *slog.Logger
	codec *schemas.Codec
	pool  *pgxpool.Pool
	cl    *kgo.Client

	// next mirrors consumer_offsets for this group after each commit; it
	// only keeps replays out of dlq.v1; the table decides what is applied.
	mu   sync.Mutex
	next map[topicPartition]int64

	closed bool

	retrying *telemetry.Retrying

	// afterCommit, when set by tests, is called after each committed batch.
	afterCommit func(records int)
	// beforePoll, when set by tests, is called before each poll.
	beforePoll func(cl *kgo.Client)

	closeOnce sync.Once
}

type topicPartition struct {
	topic     string
	partition int32
}

// New builds a projector; it connects lazily, in Run.
func New(cfg Config) (*Projector, error) {
	if cfg.Group == "" {
		cfg.Group = DefaultGroup
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 10000
	}
	if cfg.RetryAlarm <= 0 {
		cfg.RetryAlarm = telemetry.RetryAlarm
	}
	codec, err := cfg.Kafka.Codec()
	if err != nil {
		return nil, fmt.Errorf("projector codec: %w", err)
	}
	pcfg, err := pgxpool.ParseConfig(cfg.DSN)
	if err != nil {
		return nil, fmt.Errorf("projector postgres pool: %w", err)
	}
	// No wait for the WAL flush at commit: rows and offsets commit
	// together, and a crash loses only whole last transactions, offsets
	// included, which are then projected again from the log. The log stays
	// the durable copy; the read model only has to be consistent with an
	// offset. (A setting of the session rather than of each transaction:
	// one statement less per batch.)
	pcfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	pool, err := pgxpool.NewWithConfig(context.Background(), pcfg)
	if err != nil {
		return nil, fmt.Errorf("projector postgres pool: %w", err)
	}
	telemetry.PrepareConsumer(cfg.Group, Topics...)
	telemetry.PrepareProjector(cfg.Group)
	return &Projector{cfg: cfg, log: cfg.Logger.With("component", "projector/postgres"), codec: codec, pool: pool,
		next: map[topicPartition]int64{}, retrying: &telemetry.Retrying{Consumer: cfg.Group}}, nil
}

// connect makes the group client. It runs after Migrate: joining the group
// reads consumer_offsets, which must exist by then.
func (p *Projector) connect() error {
	// The offsets table names the group and topics by their logical names
	// (the read model is the install's, whatever its prefix); Kafka by
	// their physical ones.
	group := p.cfg.Kafka.Group(p.cfg.Group)
	cl, err := kgo.NewClient(p.cfg.Kafka.Opts(append(kafka.StaticMember(group, p.cfg.InstanceID),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(p.cfg.Kafka.Topics(Topics...)...),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.AdjustFetchOffsetsFn(p.storedOffsets),
		// A fetch in flight holds back partitions assigned meanwhile; a
		// short long-poll keeps a freshly (re)assigned partition from
		// waiting on idle ones.
		kgo.FetchMaxWait(time.Second),
	)...)...)
	if err != nil {
		return fmt.Errorf("projector kafka client: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		cl.Close()
		return errors.New("projector closed")
	}
	p.cl = cl
	return nil
}

// Close releases the Kafka client and the pool. Run calls it on return.
func (p *Projector) Close() {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		cl := p.cl
		p.closed = true
		p.mu.Unlock()
		if cl != nil {
			// A poll that returned records blocks rebalances until allowed,
			// and leaving the group on Close waits for that.
			cl.AllowRebalance()
			cl.Close()
		}
		p.pool.Close()
	})
}

// Run migrates the schema and projects until ctx is done, which is a clean
// stop (nil). A database that fails is retried with backoff; a record it
// refuses for its data is a dead letter (poison.go).
func (p *Projector) Run(ctx context.Context) error {
	defer p.Close()
	if err := p.retry(ctx, "migrate", func() error { return Migrate(ctx, p.cfg.DSN) }); err != nil {
		return nil // only ctx ends a retry
	}
	if err := p.connect(); err != nil {
		return err
	}
	for {
		if p.beforePoll != nil {
			p.beforePoll(p.cl)
		}
		fetches := p.cl.PollRecords(ctx, p.cfg.MaxBatch)
		if ctx.Err() != nil {
			return nil
		}
		if fetches.IsClientClosed() {
			return errors.New("projector: kafka client closed")
		}
		fetches.EachError(func(topic string, partition int32, err error) {
			if !errors.Is(err, context.Canceled) {
				p.log.Warn("fetch error", "topic", topic, "partition", partition, "err", err)
			}
		})
		records := p.cfg.Kafka.In(fetches.Records())
		if len(records) > 0 {
			if err := p.apply(ctx, records); err != nil {
				return nil // only ctx ends apply with an error
			}
			if p.afterCommit != nil {
				p.afterCommit(len(records))
			}
		}
		p.cl.AllowRebalance()
	}
}

// storedOffsets replaces the group's (unused) Kafka offsets of newly
// assigned partitions with the positions stored beside the rows.
func (p *Projector) storedOffsets(ctx context.Context, assigned map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	var stored map[topicPartition]int64
	err := p.retry(ctx, "read consumer offsets", func() error {
		var err error
		stored, err = readOffsets(ctx, p.pool, p.cfg.Group)
		return err
	})
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for topic, parts := range assigned {
		for part := range parts {
			tp := topicPartition{p.cfg.Kafka.Logical(topic), part}
			if n, ok := stored[tp]; ok {
				parts[part] = kgo.NewOffset().At(n).WithEpoch(-1)
				p.next[tp] = n
			} else {
				// An exact 0 rather than AtStart: partitions needing a
				// ListOffsets first would join the fetch session only after a
				// long-poll of the others returned (FetchMaxWait, 5s). A log
				// that no longer starts at 0 resets to its start.
				parts[part] = kgo.NewOffset().At(0).WithEpoch(-1)
				delete(p.next, tp)
			}
		}
	}
	return assigned, nil
}

func readOffsets(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, group string) (map[topicPartition]int64, error) {
	rows, err := q.Query(ctx, `SELECT topic, "partition", next_offset FROM consumer_offsets WHERE "group" = $1`, group)
	if err != nil {
		return nil, fmt.Errorf("read consumer offsets of %s: %w", group, err)
	}
	defer rows.Close()
	out := map[topicPartition]int64{}
	for rows.Next() {
		var tp topicPartition
		var n int64
		if err := rows.Scan(&tp.topic, &tp.partition, &n); err != nil {
			return nil, fmt.Errorf("read consumer offsets of %s: %w", group, err)
		}
		out[tp] = n
	}
	return out, rows.Err()
}

// decoded is a consumed record after decoding; ok is false for a dead letter.
type decoded struct {
	kr  *kgo.Record
	rec schemas.Record
	ok  bool
}

// apply decodes the poll, sends what cannot be decoded to dlq.v1 and writes
// the rest with the new offsets in one transaction (several when the
// database refuses a record and the poll is split to find it), retrying
// until it commits or ctx ends.
func (p *Projector) apply(ctx context.Context, records []*kgo.Record) error {
	p.mu.Lock()
	known := make(map[topicPartition]int64, len(p.next))
	for k, v := range p.next {
		known[k] = v
	}
	p.mu.Unlock()

	batch := make([]decoded, 0, len(records))
	var dead []*kgo.Record
	for _, kr := range records {
		if n, ok := known[topicPartition{kr.Topic, kr.Partition}]; ok && kr.Offset < n {
			continue // a replay of what is already applied
		}
		if kafka.RedriveSkips(kr, p.cfg.Group) {
			batch = append(batch, decoded{kr: kr}) // applied before: its offset only
			continue
		}
		rec, err := kafka.FromKafka(ctx, p.codec, kr)
		if err != nil {
			p.log.Warn("dead letter", "topic", kr.Topic, "partition", kr.Partition, "offset", kr.Offset, "err", err)
			dead = append(dead, kafka.DeadLetter(kr, err, p.cfg.Group))
			p.deadLettered(kr.Topic, err) // telemetry:
		}
		batch = append(batch, decoded{kr: kr, rec: rec, ok: err == nil})
	}
	if err := p.produceDead(ctx, dead); err != nil {
		return err
	}
	observed := p.observeBatch(ctx, batch) // telemetry:
	committed, err := p.writeBisecting(ctx, batch, known)
	if err != nil {
		return err
	}
	observed() // telemetry:
	p.mu.Lock()
	for k, v := range committed {
		p.next[k] = v
	}
	p.mu.Unlock()
	return nil
}

// produceDead sends dead letters. They go out before the offsets of their
// records commit: a crash in between repeats a dead letter, which is
// better than losing one.
func (p *Projector) produceDead(ctx context.Context, dead []*kgo.Record) error {
	if len(dead) == 0 {
		return nil
	}
	p.cfg.Kafka.OutAll(dead)
	return p.retry(ctx, "produce dead letters", func() error {
		return p.cl.ProduceSync(ctx, dead...).FirstErr()
	})
}

// Health is nil unless the projector has been retrying the same work
// (the database refusing a batch, the broker a dead letter) for longer
// than Config.RetryAlarm: /readyz turns red with what it retries and why.
func (p *Projector) Health() error { return p.retrying.Err(time.Now(), p.cfg.RetryAlarm) }

// retry runs f until it succeeds or ctx ends, backing off from 100ms to 5s.
// It returns an error only when ctx ended.
func (p *Projector) retry(ctx context.Context, what string, f func() error) error {
	wait := 100 * time.Millisecond
	for {
		err := f()
		if err == nil {
			p.retrying.Succeeded()
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		p.retrying.Failed(what, err, time.Now())
		p.log.Warn("retrying", "what", what, "in", wait, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}
