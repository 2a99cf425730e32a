package journal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vmplane/vmplane/internal/chserver"
	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/internal/telemetry"
	"github.com/vmplane/vmplane/schemas"
)

// Config configures a Projector. Zero fields take the defaults named.
type Config struct {
	Kafka kafka.Config
	// Addr is ClickHouse's native protocol address, host:port.
	Addr string
	// Access is the user, password and TLS it logs in with.
	Access chserver.Access
	// Database holds the tables; default "vmplane".
	Database string
	// Group is the Kafka consumer group; default "vmplane-projector-journal".
	Group string
	// InstanceID makes the projector a static member of its group
	// (group.instance.id "<group>-<InstanceID>"): restarted after a crash,
	// it takes its partitions back at once instead of after the dead
	// member's session timeout. Unique among running instances; empty: a
	// dynamic member.
	InstanceID string
	// BatchRows flushes a batch once it holds this many rows; default
	// 100,000. ClickHouse writes a part per insert and table, so large
	// batches are what makes a catch-up fast (and cheap for the server,
	// which merges the parts after); FlushInterval still bounds how long
	// a row waits.
	BatchRows int
	// FlushInterval flushes a batch this long after its first record at the
	// latest; default 1s. A batch that follows a full one flushes sooner,
	// once a poll finds nothing more to read (catchUpEnd).
	FlushInterval time.Duration
	Logger        *slog.Logger
}

// insertFunc writes a batch's rows.
type insertFunc func(ctx context.Context, r *rows) error

// Topics are the topics the journal projects: VM and job events, host
// status changes and lease notifications.
var Topics = []string{schemas.TopicVmEvents, schemas.TopicHostStatus, schemas.TopicLeaseEvents}

// fetchMaxBytes bounds one Kafka fetch, and one partition's share of it.
const fetchMaxBytes = 32 << 20

// attemptTimeout bounds one insert, DLQ produce or migration attempt.
const attemptTimeout = 30 * time.Second

// catchUpEnd is how long a poll waits for more records when the batch
// follows a full one, as in a catch-up: a poll that finds none has reached
// the end of the log, and the batch flushes then instead of waiting for
// FlushInterval. A catch-up ends with an insert rather than an idle second,
// and a live log, whose batches are not full, keeps one insert per
// interval. At most one such early flush follows a full batch, so a
// false end (a slow fetch) costs one small insert.
const catchUpEnd = 50 * time.Millisecond

// Projector consumes Topics and writes job_journal, vm_events, host_events
// and lease_events.
type Projector struct {
	cfg   Config
	log   *slog.Logger
	codec *schemas.Codec
	wait  backoff
	// retrying and inserting track retries that last, for Health: the poll
	// loop's, and the flights' inserts.
	retrying, inserting *telemetry.Retrying

	// insert, when set, replaces the ClickHouse insert; tests use it to
	// count or fail inserts.
	insert insertFunc
	// afterInsert runs between a batch's insert and its offset commit; tests
	// stop the projector there to replay a batch.
	afterInsert func()

	mu      sync.Mutex // guards pending against the revoke callback
	pending batch
	traces  traced // spans of pending's records (telemetry.go)

	// inflight is the batch being inserted and committed while the next
	// one is read (flight.go); spare is an emptied batch whose slices the
	// next pending batch reuses. Only Run's goroutine touches them.
	inflight *flight
	spare    batch
	// payloads holds the payloads of the rows read (payload.go).
	payloads payloads
	// afterFull says the last batch that took off was full: the pending
	// one flushes when a poll finds nothing more (catchUpEnd).
	afterFull bool

	// A rebalance waiting on a flight that retries cancels it: its rows go
	// back to pending, the revoked partitions' rows are dropped, and the
	// next owner re-reads them from the last commit.
	rebalanceWanted atomic.Bool
	cancelMu        sync.Mutex
	cancelFlush     context.CancelFunc
}

// New checks cfg and returns a projector; it connects to nothing until Run.
func New(cfg Config) (*Projector, error) {
	if len(cfg.Kafka.Brokers) == 0 {
		return nil, errors.New("journal projector: no Kafka brokers")
	}
	if cfg.Addr == "" {
		return nil, errors.New("journal projector: no ClickHouse address")
	}
	if cfg.Database == "" {
		cfg.Database = "vmplane"
	}
	if cfg.Group == "" {
		cfg.Group = "vmplane-projector-journal"
	}
	if cfg.BatchRows <= 0 {
		cfg.BatchRows = 100_000
	}
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	codec, err := cfg.Kafka.Codec()
	if err != nil {
		return nil, fmt.Errorf("journal projector: %w", err)
	}
	telemetry.PrepareConsumer(cfg.Group, Topics...)
	telemetry.PrepareConsumer(cfg.Group + "/insert")
	telemetry.PrepareProjector(cfg.Group, journalTables...)
	return &Projector{
		cfg:       cfg,
		log:       cfg.Logger.With("component", "projector.journal"),
		codec:     codec,
		wait:      backoff{first: 100 * time.Millisecond, max: 10 * time.Second},
		pending:   newBatch(),
		retrying:  &telemetry.Retrying{Consumer: cfg.Group},
		inserting: &telemetry.Retrying{Consumer: cfg.Group + "/insert"},
	}, nil
}

// Health is nil unless the projector has been retrying the same work (an
// insert ClickHouse refuses, a dead letter the broker refuses) for longer
// than telemetry.RetryAlarm: /readyz turns red with what it retries and
// why. Inserts run beside the poll loop's own retries (tables, dead
// letters), so each has its own record: one succeeding never hides the
// other.
func (p *Projector) Health() error {
	now := time.Now()
	return errors.Join(p.retrying.Err(now, telemetry.RetryAlarm), p.inserting.Err(now, telemetry.RetryAlarm))
}

// Run creates the tables (retrying while ClickHouse is down) and projects
// Topics until ctx ends; it returns nil then. Rows inserted but not yet
// committed are inserted again by the next run, which the tables absorb.
func (p *Projector) Run(ctx context.Context) error {
	conn, err := Open(p.cfg.Addr, p.cfg.Access)
	if err != nil {
		return err
	}
	defer conn.Close()
	ins := p.insert
	if ins == nil {
		ins = func(ctx context.Context, r *rows) error {
			return goneOr(insert(ctx, conn, p.cfg.Database, r))
		}
	}
	p.mu.Lock()
	p.pending = newBatch() // what an earlier Run left is re-read from the commit
	p.untrace(nil)         // telemetry:
	p.mu.Unlock()
	p.spare = newBatch()
	fresh := false
	err = retry(ctx, p.log, p.retrying, "create clickhouse tables", p.wait, attemptTimeout, func(ctx context.Context) error {
		exists, err := journalExists(ctx, conn, p.cfg.Database)
		if err != nil {
			return err
		}
		fresh = !exists
		return Migrate(ctx, conn, p.cfg.Database)
	})
	if err != nil {
		return doneOr(ctx, err)
	}
	adjust := func(_ context.Context, o map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
		return o, nil
	}
	if fresh {
		// New tables project nothing yet, whatever the group committed
		// before: the first assignment of this run reads the log from its
		// start.
		p.log.Info("journal tables created: projecting the log from its start", "database", p.cfg.Database)
		adjust = fromStartOnce()
	}

	group := p.cfg.Kafka.Group(p.cfg.Group)
	cl, err := kgo.NewClient(p.cfg.Kafka.Opts(append(kafka.StaticMember(group, p.cfg.InstanceID),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(p.cfg.Kafka.Topics(Topics...)...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		// A catch-up reads the log in fetches as large as a batch rather
		// than 1 MiB per partition (the default): fewer round trips
		// between polls, each bounded by what one batch holds anyway.
		kgo.FetchMaxBytes(fetchMaxBytes),
		kgo.FetchMaxPartitionBytes(fetchMaxBytes),
		// Between a poll and AllowRebalance no partition can move, so a flush
		// commits only partitions this member owns.
		kgo.BlockRebalanceOnPoll(),
		kgo.AdjustFetchOffsetsFn(adjust),
		kgo.OnPartitionsRevoked(p.dropPartitions),
		kgo.OnPartitionsLost(p.dropPartitions),
		kgo.OnPartitionsCallbackBlocked(func(context.Context, *kgo.Client) { p.yieldToRebalance() }),
	)...)...)
	if err != nil {
		return fmt.Errorf("journal projector: kafka client: %w", err)
	}
	defer cl.CloseAllowingRebalance()
	// Whatever ends the run, the batch in flight stops before the client
	// closes; what it did not commit is read again by the next run.
	defer func() {
		p.cancelInflight()
		_ = p.land()
	}()

	for {
		pctx, cancel := context.WithTimeout(ctx, p.untilDue())
		fs := cl.PollRecords(pctx, p.cfg.BatchRows)
		cancel()
		err := p.handle(ctx, cl, fs, ins)
		if err == nil && p.rebalanceWanted.Load() {
			err = p.land() // yieldToRebalance cut the flight short
		}
		if err == nil {
			err = p.landIfDone()
		}
		// While a batch is in flight its commit must not cross a
		// rebalance: the next polls keep rebalances blocked (and read the
		// next batch) until it has landed.
		if p.inflight == nil {
			p.rebalanceWanted.Store(false)
			cl.AllowRebalance()
		}
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// handle takes one poll's records into the batch and flushes it when due.
func (p *Projector) handle(ctx context.Context, cl *kgo.Client, fs kgo.Fetches, ins insertFunc) error {
	if fs.IsClientClosed() {
		return errors.New("journal projector: kafka client closed")
	}
	fs.EachError(func(topic string, partition int32, err error) {
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			p.log.Warn("fetch failed", "topic", topic, "partition", partition, "err", err)
		}
	})
	krs := p.cfg.Kafka.In(fs.Records())
	p.mu.Lock()
	p.pending.grow(krs)
	p.mu.Unlock()
	for _, kr := range krs {
		if err := p.take(ctx, cl, kr); err != nil {
			return err
		}
	}
	if p.due() || (len(krs) == 0 && p.atEnd()) {
		return p.takeOff(ctx, cl, ins)
	}
	return nil
}

// take adds a record's rows to the batch, or dead-letters a record that
// cannot be decoded or projected; either way its offset joins the batch.
func (p *Projector) take(ctx context.Context, cl *kgo.Client, kr *kgo.Record) error {
	var rr recordRows
	if kafka.RedriveSkips(kr, p.cfg.Group) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.pending.add(kr, &rr) // applied before: its offset only
		return nil
	}
	rec, err := kafka.FromKafka(ctx, p.codec, kr)
	if err == nil {
		rr, err = recordRowsOf(rec, &p.payloads)
	}
	if err != nil {
		p.log.Error("dead-lettering a record", "partition", kr.Partition, "offset", kr.Offset, "err", err)
		dead := p.cfg.Kafka.Out(kafka.DeadLetter(kr, err, p.cfg.Group))
		telemetry.DeadLettered(p.cfg.Group, kr.Topic, err) // telemetry:
		perr := retry(ctx, p.log, p.retrying, "produce to "+schemas.TopicDLQ, p.wait, attemptTimeout, func(ctx context.Context) error {
			return cl.ProduceSync(ctx, dead).FirstErr()
		})
		if perr != nil {
			return perr
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		rr = recordRows{}
	} else {
		p.traceRecord(ctx, kr, rec) // telemetry:
	}
	p.pending.add(kr, &rr)
	return nil
}

// recordRowsOf is the rows of one decoded record, by its topic, their
// payloads rendered into ps.
func recordRowsOf(rec schemas.Record, ps *payloads) (recordRows, error) {
	var rr recordRows
	var err error
	switch rec.Topic {
	case schemas.TopicHostStatus:
		rr.host, err = hostRowOf(rec, ps)
		rr.hasHost = true
	case schemas.TopicLeaseEvents:
		rr.lease, err = leaseRowOf(rec, ps)
		rr.hasLease = true
	default:
		rr.hasJob, rr.event, err = rowsOf(rec, ps, &rr.job)
		rr.hasEvent = true
	}
	return rr, err
}

// flush inserts f's batch, then commits the offsets of exactly its
// records. It never commits before the insert succeeded. fctx is the
// flight's context, which yieldToRebalance cancels: the insert then ends
// with errPutOff and the batch goes back to pending (land).
func (p *Projector) flush(ctx, fctx context.Context, cl *kgo.Client, ins insertFunc, f *flight) error {
	b := &f.b
	insertStart := time.Now()                                          // telemetry:
	ictx, traced := p.startInsert(fctx, &b.rows, b.records, &f.traces) // telemetry:
	err := retry(ictx, p.log, p.inserting, "insert into clickhouse", p.wait, attemptTimeout, func(ctx context.Context) error {
		return ins(ctx, &b.rows)
	})
	traced(err) // telemetry:
	if errors.Is(err, errProjectionGone) {
		return err // the next run recreates the tables and replays the log
	}
	if err != nil {
		if ctx.Err() == nil {
			p.log.Info("flush put off for a rebalance", "rows", b.len())
			return errPutOff
		}
		return ctx.Err()
	}
	p.inserted(insertStart, &b.rows, b.records) // telemetry:
	if p.afterInsert != nil {
		p.afterInsert()
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err := commit(ctx, cl, p.cfg.Kafka, b.next); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// The rows are in ClickHouse; whoever owns the partitions now
		// inserts them again, which the tables absorb.
		p.log.Warn("offset commit failed after insert", "err", err)
	}
	p.log.Debug("flushed", "job_rows", len(b.jobs), "event_rows", len(b.events), "host_rows", len(b.hosts),
		"lease_rows", len(b.leases), "records", b.records)
	return nil
}

// commit commits next, keyed by logical topics, under kcfg's physical names.
func commit(ctx context.Context, cl *kgo.Client, kcfg kafka.Config, next map[string]map[int32]kgo.EpochOffset) error {
	physical := make(map[string]map[int32]kgo.EpochOffset, len(next))
	for t, ps := range next {
		physical[kcfg.Topic(t)] = ps
	}
	var errs error
	cl.CommitOffsetsSync(ctx, physical,
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err != nil {
				errs = err
				return
			}
			for _, t := range resp.Topics {
				for _, pt := range t.Partitions {
					if err := kerr.ErrorForCode(pt.ErrorCode); err != nil {
						errs = errors.Join(errs, fmt.Errorf("commit %s/%d: %w", t.Topic, pt.Partition, err))
					}
				}
			}
		})
	return errs
}

// dropPartitions forgets the pending rows of partitions this member no
// longer owns: their offsets were not committed, so the next owner reads
// and inserts them again.
func (p *Projector) dropPartitions(_ context.Context, _ *kgo.Client, gone map[string][]int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	logical := make(map[string][]int32, len(gone))
	for t, ps := range gone {
		logical[p.cfg.Kafka.Logical(t)] = ps
	}
	p.pending.drop(logical)
	p.untrace(logical) // telemetry:
}

func (p *Projector) yieldToRebalance() {
	p.rebalanceWanted.Store(true)
	p.cancelInflight()
}

// cancelInflight cuts the batch in flight short, if any: its insert ends
// and it goes back to pending uncommitted.
func (p *Projector) cancelInflight() {
	p.cancelMu.Lock()
	defer p.cancelMu.Unlock()
	if p.cancelFlush != nil {
		p.cancelFlush()
	}
}

// due reports whether the batch is full or old enough to flush.
func (p *Projector) due() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := &p.pending
	return b.records > 0 && (b.len() >= p.cfg.BatchRows || time.Since(b.started) >= p.cfg.FlushInterval)
}

// atEnd reports whether a batch that follows a full one has records: an
// empty poll then means the catch-up has read the end of the log.
func (p *Projector) atEnd() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.afterFull && p.pending.records > 0
}

// untilDue is how long a poll may wait before the batch must be flushed.
func (p *Projector) untilDue() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending.records == 0 {
		return p.cfg.FlushInterval
	}
	wait := time.Until(p.pending.started.Add(p.cfg.FlushInterval))
	if p.afterFull {
		wait = min(wait, catchUpEnd)
	}
	return max(wait, time.Millisecond)
}

// doneOr returns nil when ctx ended (a normal stop), else err.
func doneOr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}
