package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/schemas"
)

// Config says what a processor consumes and where it keeps its state.
type Config struct {
	// Name names the processor: group "vmplane-<Name>", transactional id
	// "vmplane-<Name>-<InstanceID>".
	Name string
	// Inputs are the consumed topics; they must be co-partitioned.
	Inputs []string
	// Changelog is the compacted topic holding the state per key.
	Changelog string
	// Settings is the topic of operator settings (settings.v1), read whole
	// by every instance when the machine is Configurable; empty for none.
	Settings string
	Kafka    kafka.Config
	// InstanceID makes the transactional id; a restarted instance with the
	// same id fences its predecessor. Default: the host name.
	InstanceID string
	Clock      Clock
	// TickInterval bounds how long timers wait to be checked (default 200 ms).
	TickInterval time.Duration
	// MaxPollRecords bounds one transaction's batch (default 5000).
	MaxPollRecords int
	// SessionTimeout of the group membership (default 10 s): how long a
	// crashed owner's partitions wait before moving.
	SessionTimeout time.Duration
	Logger         *slog.Logger
	// SkipDecode hands records to Step undecoded (Value nil, key and
	// position set) and restores no state: the engine's own cost (polling,
	// transactions, changelog writes, offset commits) with a null machine,
	// the limit `make bench` compares the real processors with. Never set
	// it for a real machine.
	SkipDecode bool
	// Hooks observe the loop; nil: the metrics and spans of
	// internal/telemetry.
	Hooks Hooks
}

// Processor drives one Machine exactly once.
type Processor[S any] struct {
	cfg   Config
	group string // the consumer group, made once: the poll loop asks per record
	m     Machine[S]
	// reuser is m when it can step a state in place, else nil.
	reuser Reuser[S]
	// forgetter is m when it keeps something per key, else nil.
	forgetter Forgetter
	// parted is m when its state is written in parts, else nil.
	parted Parted[S]
	codec  *schemas.Codec
	log    *slog.Logger
	hooks  Hooks

	// Owned by the poll loop.
	st     store[S]
	timers timerHeap
	// held are the restored partitions whose timers wait for their
	// inputs (hold.go).
	held holds
	// touched lists the keys the current batch stepped or ticked, with
	// their latest state: the changelog records it needs.
	touched []touchedKey[S]
	due     []timerEntry // reused between batches
	// feed brings the session's new settings (nil when the machine takes
	// none).
	feed *settingsFeed

	mu       sync.Mutex
	assigned map[int32]bool // from the group callbacks
	pending  map[int32]bool // assigned, not yet restored
	dropped  map[int32]bool // revoked or lost, state to drop
	// changes counts the callbacks' changes per partition: a restore whose
	// partition changed while it read (lost and assigned again) is stale.
	changes map[int32]uint64
	// endPoll ends the poll in flight, if any (pollingUntil).
	endPoll context.CancelFunc

	ready atomic.Bool
	// restoring describes a restore that has stalled, for ReadyErr.
	restoring atomic.Pointer[string]
	stats     Stats

	// slab and recs are the changelog buffer and records of the last
	// batch, reused by the next one (iterate): by the time End returns
	// without error every record of the batch is finished, since End
	// flushes (or aborts) the buffered records before it ends the
	// transaction. After an error they are dropped, as a record may still
	// be in flight. slabHint sizes a new buffer.
	slab     []byte
	recs     []kgo.Record
	slabHint int
	// partBuf and writes are a Parted machine's parts and records of the
	// last batch, reused by the next one.
	partBuf []schemas.Part
	writes  []partWrite
	// typeHeaders holds the changelog's `type` header per record name,
	// shared by every record of that type (franz-go only reads headers).
	typeHeaders map[string][]kgo.RecordHeader
}

// Stats are counters of a processor, for metrics and tests.
type Stats struct {
	Records, Decoded, DeadLettered, Ticks, Commits, Aborts, Restored atomic.Int64
	// Settings counts the settings records the machine took, in a
	// restore or live.
	Settings atomic.Int64
}

// New returns a processor of m.
func New[S any](cfg Config, m Machine[S]) (*Processor[S], error) {
	if cfg.Name == "" || len(cfg.Inputs) == 0 || cfg.Changelog == "" {
		return nil, errors.New("engine: Name, Inputs and Changelog are required")
	}
	if cfg.InstanceID == "" {
		h, _ := os.Hostname()
		cfg.InstanceID = h
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.TickInterval == 0 {
		cfg.TickInterval = 200 * time.Millisecond
	}
	if cfg.MaxPollRecords == 0 {
		cfg.MaxPollRecords = 5000
	}
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	codec, err := cfg.Kafka.Codec()
	if err != nil {
		return nil, err
	}
	p := &Processor[S]{
		cfg: cfg, m: m, codec: codec, hooks: cfg.Hooks,
		group:    cfg.Kafka.Group("vmplane-" + cfg.Name),
		log:      cfg.Logger.With("processor", cfg.Name),
		assigned: map[int32]bool{},
		pending:  map[int32]bool{},
		dropped:  map[int32]bool{},
		changes:  map[int32]uint64{},
	}
	if p.hooks == nil {
		p.hooks = newTelemetryHooks(cfg.Name, p.Group(), cfg.Inputs)
	}
	p.parted = p.partedMachine()
	p.reuser, _ = m.(Reuser[S])
	p.forgetter, _ = m.(Forgetter)
	return p, nil
}

// Ready reports whether every assigned partition's state is restored.
func (p *Processor[S]) Ready() bool { return p.ready.Load() }

// ReadyErr is nil when the processor consumes: Ready, with at least one
// partition. Else it says why not: no partition assigned, a restore
// running, or one that has made no progress for RestoreStallAfter, with
// the partitions and offsets where it stands.
func (p *Processor[S]) ReadyErr() error {
	if p.ready.Load() {
		// Nothing pending is not enough: an instance just restarted, before
		// its group assigned it anything, has nothing pending either; a
		// standby instance, which the group gives none, stays not ready.
		if p.Assigned() == 0 {
			return errors.New("no partitions assigned by the group")
		}
		return nil
	}
	if msg := p.restoring.Load(); msg != nil {
		return errors.New(*msg)
	}
	return errors.New("state of assigned partitions not restored")
}

// Stats returns the processor's counters.
func (p *Processor[S]) Stats() *Stats { return &p.stats }

// Assigned returns how many partitions of the inputs the group gave this
// instance; with Ready it tells that the instance is consuming.
func (p *Processor[S]) Assigned() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.assigned)
}

// Group is the consumer group of the processor.
func (p *Processor[S]) Group() string { return p.group }

// Inputs are the topics the processor consumes.
func (p *Processor[S]) Inputs() []string { return slices.Clone(p.cfg.Inputs) }

// Run consumes until ctx ends. It returns nil on cancellation. A session
// that fails — the producer fenced by a broker that reloaded its log after
// a crash, a transaction the broker refused, a restore that failed — is
// dropped with every state it restored, and a new one starts after a pause
// (0.5 s, doubling to 10 s while sessions keep failing early), as a
// restarted process would; each failure is logged and shown by ReadyErr.
func (p *Processor[S]) Run(ctx context.Context) error {
	pause := 500 * time.Millisecond
	for {
		started := time.Now()
		err := p.session(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			return nil
		}
		if time.Since(started) > time.Minute {
			pause = 500 * time.Millisecond
		}
		p.forgetAll()
		msg := fmt.Sprintf("session failed, starting a new one in %s: %v", pause, err)
		p.restoring.Store(&msg)
		p.log.Warn("session failed, starting a new one", "in", pause, "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(pause):
		}
		pause = min(2*pause, 10*time.Second)
	}
}

// forgetAll drops every state and assignment between two sessions: the
// next session's group assigns and restores afresh.
func (p *Processor[S]) forgetAll() {
	p.dropStates()
	p.timers = timerHeap{}
	p.forgetHolds()
	p.slab, p.recs = nil, nil
	p.mu.Lock()
	p.assigned, p.pending, p.dropped = map[int32]bool{}, map[int32]bool{}, map[int32]bool{}
	p.changes = map[int32]uint64{}
	p.mu.Unlock()
	p.ready.Store(false)
}

// transactionTimeout bounds how long a dead instance's open transaction
// holds back its partitions' readers (as Kafka Streams' exactly-once
// default, 10 s).
const transactionTimeout = 10 * time.Second

// session runs one group transact session until ctx ends or it fails.
func (p *Processor[S]) session(ctx context.Context) error {
	// A static member named like the transactional id: an instance
	// restarted after a crash (or a new session of this one) takes its
	// partitions back at once, with no rebalance. A clean stop does not
	// leave the group either: its partitions move to other instances after
	// SessionTimeout.
	opts := p.cfg.Kafka.Opts(append(kafka.StaticMember(p.Group(), p.cfg.InstanceID),
		kgo.ConsumerGroup(p.Group()),
		kgo.ConsumeTopics(p.cfg.Kafka.Topics(p.cfg.Inputs...)...),
		kgo.TransactionalID(p.Group()+"-"+p.cfg.InstanceID),
		// The transaction of an instance killed mid-batch and not
		// restarted (its successor has another transactional id, so it
		// cannot fence it) stays open until this runs out, and every
		// read_committed reader of its partitions, its successor's
		// restore among them, waits that long: 60 s made a hand-over take
		// a minute. A batch's transaction lasts milliseconds.
		kgo.TransactionTimeout(transactionTimeout),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// The markers move a held partition's position (hold.go); the
		// poll drops them before anything is stepped.
		kgo.KeepControlRecords(),
		kgo.SessionTimeout(p.cfg.SessionTimeout),
		kgo.HeartbeatInterval(p.cfg.SessionTimeout/5),
		kgo.RecordPartitioner(kafka.Partitioner(p.cfg.Kafka.Topic(p.cfg.Changelog))),
		// A state record is one key's whole state: a zone of thousands of
		// hosts is over a megabyte, the client's and the broker's default.
		kgo.ProducerBatchMaxBytes(kafka.StateMaxBytes),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			p.onAssigned(m)
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			p.onDropped(m)
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			p.onDropped(m)
		}),
	)...)
	sess, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		return fmt.Errorf("%s: client: %w", p.cfg.Name, err)
	}
	defer sess.Close()
	// The transactional producer is initialised before anything is
	// restored or consumed: it fences the previous incarnation of this
	// transactional id (a process killed, or still running somewhere) and
	// has its open transaction aborted, so the last stable offsets the
	// restore reads to are final and no zombie commits behind it.
	if err := p.initProducer(ctx, sess.Client()); err != nil {
		return err
	}
	restorer, err := kgo.NewClient(p.cfg.Kafka.Opts()...)
	if err != nil {
		return fmt.Errorf("%s: restore client: %w", p.cfg.Name, err)
	}
	defer restorer.Close()
	// Every setting is in the machine before the first record is stepped,
	// so a restarted processor decides with the settings it had.
	fctx, stopFeed := context.WithCancel(ctx)
	defer stopFeed()
	if p.feed, err = p.restoreSettings(fctx, restorer); err != nil {
		return err
	}

	for ctx.Err() == nil {
		if err := p.iterate(ctx, sess, restorer); err != nil {
			if ctx.Err() != nil {
				break
			}
			return err
		}
	}
	return nil
}

// initProducer obtains the producer id and epoch of the processor's
// transactional id, trying again while the broker cannot answer (it may be
// restarting) and saying so in the log.
func (p *Processor[S]) initProducer(ctx context.Context, cl *kgo.Client) error {
	for attempt := 0; ; attempt++ {
		id, epoch, err := cl.ProducerID(ctx)
		if err == nil {
			p.restoring.Store(nil)
			p.log.Info("transactional producer ready", "producer_id", id, "epoch", epoch)
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		msg := fmt.Sprintf("initialising the transactional producer: %v", err)
		p.restoring.Store(&msg)
		p.log.Warn("transactional producer not ready", "attempt", attempt+1, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(time.Duration(attempt+1)*500*time.Millisecond, 5*time.Second)):
		}
	}
}

func (p *Processor[S]) onAssigned(m map[string][]int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	// Every input has the same partitions; the first one is enough.
	for _, parts := range m {
		for _, part := range parts {
			if !p.assigned[part] {
				p.assigned[part] = true
				p.pending[part] = true
				p.changes[part]++
			}
		}
	}
	p.ready.Store(false)
	if p.endPoll != nil && len(p.pending) > 0 {
		p.endPoll()
	}
}

func (p *Processor[S]) onDropped(m map[string][]int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, parts := range m {
		for _, part := range parts {
			if p.assigned[part] {
				delete(p.assigned, part)
				delete(p.pending, part)
				p.dropped[part] = true
				p.changes[part]++
			}
		}
	}
}

// dropPartition drops the states of partition part, telling a Forgetter
// machine each of its keys first.
func (p *Processor[S]) dropPartition(part int32) {
	if p.forgetter != nil {
		p.st.keys(part, p.forgetter.Forget)
	}
	p.st.drop(part)
}

// dropStates drops every state, telling a Forgetter machine each key.
func (p *Processor[S]) dropStates() {
	for part := range p.st.parts {
		p.dropPartition(int32(part))
	}
	p.st = store[S]{}
}

// resetAll forgets every state and marks every owned partition for restore.
func (p *Processor[S]) resetAll() {
	p.dropStates()
	p.timers = timerHeap{}
	p.mu.Lock()
	for part := range p.assigned {
		p.pending[part] = true
	}
	p.mu.Unlock()
	p.ready.Store(false)
}

func (p *Processor[S]) owns(part int32) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.assigned[part] && !p.pending[part]
}

// touchedKey is a key stepped or ticked in the current batch. It carries
// the key's latest state, so that the changelog phase writes the batch's
// records without looking every key up again (at 500,000 keys a lookup
// is a cache miss or two).
type touchedKey[S any] struct {
	key  string
	s    S
	part int32
	had  bool // it had state before the batch
	has  bool // it has state now
}

// entry returns the index of a key's entry in touched, if the current
// batch has listed it: its slot's index names an entry of this key.
func (p *Processor[S]) entry(part int32, key string, sl slot[S]) (int, bool) {
	i := sl.entry()
	if i < 0 || i >= len(p.touched) || p.touched[i].part != part || p.touched[i].key != key {
		return 0, false
	}
	return i, true
}

// setState stores s as the new state of a key whose slot was old, lists
// the key for the batch's changelog records and schedules its timer.
func (p *Processor[S]) setState(part int32, key string, old slot[S], s S) {
	sl := old
	i, listed := p.entry(part, key, sl)
	if !listed {
		i = len(p.touched)
		p.touched = append(p.touched, touchedKey[S]{key: key, part: part, had: old.has()})
		sl.setEntry(i)
	}
	if NoState(s) {
		var zero S
		sl.s, sl.wake = zero, 0
		sl.setHas(false)
	} else {
		sl.s = s
		sl.setHas(true)
		sl.wake = p.wakeOf(part, key, s, sl.wake)
	}
	p.touched[i].s, p.touched[i].has = sl.s, sl.has()
	p.st.put(part, key, old, sl)
}

// reschedule puts a key's timer back (a due entry that is not due).
func (p *Processor[S]) reschedule(part int32, key string, sl slot[S]) {
	old := sl
	sl.wake = p.wakeOf(part, key, sl.s, sl.wake)
	p.st.put(part, key, old, sl)
}

// wakeOf returns the wake time of s in Unix nanoseconds (0 for none),
// pushing a timer entry when it differs from the scheduled one.
func (p *Processor[S]) wakeOf(part int32, key string, s S, scheduled int64) int64 {
	w := p.m.Wake(s)
	if w.IsZero() {
		return 0
	}
	at := max(w.UnixNano(), 1) // 0 means none
	if at != scheduled {
		p.timers.push(timerEntry{at: at, key: key, part: part})
	}
	return at
}

// scheduled says whether a timer entry is its key's live schedule.
func (p *Processor[S]) scheduled(e timerEntry) bool {
	sl, ok := p.st.get(e.part, e.key)
	return ok && sl.has() && sl.wake == e.at
}

// claim takes a due entry if it is live, clearing the key's schedule so
// that another entry of the same time is stale.
func (p *Processor[S]) claim(e timerEntry) bool {
	sl, ok := p.st.get(e.part, e.key)
	if !ok || !sl.has() || sl.wake != e.at {
		return false
	}
	old := sl
	sl.wake = 0
	p.st.put(e.part, e.key, old, sl)
	return true
}

// applyAssignments drops revoked partitions' state and restores newly
// assigned partitions from the changelog, holding their timers until
// their inputs are read to where they stand now (hold.go).
func (p *Processor[S]) applyAssignments(ctx context.Context, restorer *kgo.Client) error {
	p.mu.Lock()
	dropped := p.dropped
	p.dropped = map[int32]bool{}
	var pending []int32
	seen := map[int32]uint64{}
	for part := range p.pending {
		pending = append(pending, part)
		seen[part] = p.changes[part]
	}
	p.mu.Unlock()
	// A dropped partition's timer entries go stale with its slots.
	for part := range dropped {
		p.dropPartition(part)
	}
	p.unhold(dropped)
	if len(pending) == 0 {
		p.ready.Store(true)
		return nil
	}
	p.holdTimers(ctx, restorer, pending)
	start := time.Now()
	n, err := p.restore(ctx, restorer, pending)
	if err != nil {
		return fmt.Errorf("%s: restore: %w", p.cfg.Name, err)
	}
	// A partition lost (and maybe assigned again) while it was read stays
	// pending, or is dropped: the next round drops what this one restored
	// of it and reads it again.
	p.mu.Lock()
	for _, part := range pending {
		if p.changes[part] == seen[part] {
			delete(p.pending, part)
		}
	}
	left := len(p.pending)
	p.mu.Unlock()
	p.stats.Restored.Add(int64(n))
	p.ready.Store(left == 0)
	p.log.Info("state restored", "partitions", pending, "keys", n, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// NoState reports whether a state value is "no state": a nil pointer, map,
// slice or interface, which a machine returns to delete its key.
func NoState[S any](s S) bool {
	v := reflect.ValueOf(s)
	if !v.IsValid() {
		return true
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface:
		return v.IsNil()
	}
	return false
}
