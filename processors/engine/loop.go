package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/internal/telemetry"
	"github.com/vmplane/vmplane/schemas"
)

// iterate runs one round of the poll loop: poll, then, when records came
// or timers are due, one transaction that steps the records, ticks the
// timers, writes the changed states to the changelog and commits them with
// the outputs and the consumed offsets. A phase that fails aborts the
// transaction, so that a batch is in the log whole or not at all.
func (p *Processor[S]) iterate(ctx context.Context, sess *kgo.GroupTransactSession, restorer *kgo.Client) error {
	records, polled, err := p.poll(ctx, sess, restorer)
	if err != nil || !polled {
		return err
	}
	settings, ferr := p.feed.take()
	settings = p.cfg.Kafka.In(settings)
	if ferr != nil {
		p.log.Warn("settings fetch error", "topic", p.cfg.Settings, "err", ferr)
	}
	now := p.cfg.Clock.Now()
	p.releaseHeld(sess.Client())
	p.due = p.timers.due(now.UnixNano(), p.claimUnheld, p.due[:0])
	if len(records) == 0 && len(p.due) == 0 && len(settings) == 0 {
		return nil
	}
	tx, err := p.begin(ctx, sess)
	if err != nil {
		return err
	}
	p.applySettings(tx, settings)
	if !p.ownsAll(records) {
		// Assigned while we polled and not restored yet, or revoked:
		// never step or skip a record without its state; abort, and
		// the session fetches it again.
		return p.abort(tx, nil)
	}
	if err := p.step(tx, records, now); err != nil {
		return p.abort(tx, err)
	}
	if err := p.tick(tx, now); err != nil {
		return p.abort(tx, err)
	}
	if err := p.changelog(tx); err != nil {
		return p.abort(tx, err)
	}
	return p.commit(tx)
}

// poll waits for records no longer than until the next timer is due (or
// TickInterval), so that timers fire on time in a quiet loop. It then
// applies what the group changed meanwhile before any record is stepped:
// a revoked partition's states go, an assigned one's are restored and its
// timers held. polled is false when ctx ended.
func (p *Processor[S]) poll(ctx context.Context, sess *kgo.GroupTransactSession, restorer *kgo.Client) (records []*kgo.Record, polled bool, err error) {
	wait := p.cfg.TickInterval
	if next, ok := p.timers.peek(p.scheduledUnheld); ok {
		if d := time.Duration(next - p.cfg.Clock.Now().UnixNano()); d < wait {
			wait = max(d, time.Millisecond)
		}
	}
	pctx, cancel := context.WithTimeout(ctx, wait)
	p.pollingUntil(cancel)
	fetches := sess.PollRecords(pctx, p.cfg.MaxPollRecords)
	p.pollingUntil(nil)
	cancel()
	if ctx.Err() != nil {
		return nil, false, nil
	}
	if err := p.applyAssignments(ctx, restorer); err != nil {
		return nil, false, err
	}
	if err := p.fetchErr(fetches); err != nil {
		return nil, false, err
	}
	return p.readPositions(p.cfg.Kafka.In(fetches.Records())), true, nil
}

// pollingUntil sets what ends the poll in flight early (nil: none in
// flight). Partitions assigned during a poll end it, so that their restore
// starts at once rather than when the poll times out: an assignment comes
// while the poll waits, and before a storm the inputs are quiet, so it
// waited the whole TickInterval. Partitions assigned before the poll
// began end it at once.
func (p *Processor[S]) pollingUntil(cancel context.CancelFunc) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endPoll = cancel
	if cancel != nil && len(p.pending) > 0 {
		cancel()
	}
}

// fetchErr logs the poll's fetch errors, which the client retries itself,
// and returns the one that ends the session: the client closed. The poll's
// own timeout is no error.
func (p *Processor[S]) fetchErr(fetches kgo.Fetches) error {
	var fatal error
	fetches.EachError(func(t string, part int32, err error) {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return
		}
		p.log.Warn("fetch error", "topic", t, "partition", part, "err", err)
		if errors.Is(err, kgo.ErrClientClosed) {
			fatal = err
		}
	})
	return fatal
}

// txn is one batch's transaction, what the phases between Begin and End
// share.
type txn struct {
	ctx  context.Context
	sess *kgo.GroupTransactSession
	// names gives produced records their physical topics (the records
	// of the batch carry logical ones).
	names *kafka.Config
	// produced keeps the first error of the batch's records. A failed
	// record leaves the transaction nothing to do but abort, so franz-go
	// fails the records still buffered at once rather than sending them.
	// Its WaitGroup costs an atomic add and done per record, about 2 % of
	// a loop's CPU profile, what the hand-written mutex saved by
	// committing a batch that had lost a record.
	produced *kgo.FirstErrPromise
	// slab and recs are the changelog buffer and records (changelog),
	// handed back to the processor once End has finished every record.
	slab []byte
	recs []kgo.Record
}

// produce adds a record to the transaction.
func (t *txn) produce(kr *kgo.Record) { t.sess.Produce(t.ctx, t.names.Out(kr), t.produced.Promise()) }

// begin opens a batch's transaction and a new list of the keys it touches.
func (p *Processor[S]) begin(ctx context.Context, sess *kgo.GroupTransactSession) (*txn, error) {
	if err := sess.Begin(); err != nil {
		return nil, fmt.Errorf("%s: begin transaction: %w", p.cfg.Name, err)
	}
	// touched lists each key stepped in this batch with whether it had
	// state before: a key that had none and has none after needs no
	// changelog record (a stateless machine, like the host relay, costs no
	// writes). The last batch's entries go, states and all.
	clear(p.touched)
	p.touched = p.touched[:0]
	return &txn{ctx: ctx, sess: sess, names: &p.cfg.Kafka, produced: kgo.AbortingFirstErrPromise(sess.Client())}, nil
}

// ownsAll says whether every record's partition is owned and restored.
func (p *Processor[S]) ownsAll(records []*kgo.Record) bool {
	last := int32(-1)
	for _, kr := range records {
		if kr.Partition == last {
			continue // records come grouped by partition
		}
		last = kr.Partition
		if !p.owns(kr.Partition) {
			return false
		}
	}
	return true
}

// step applies each record to its key's state and produces the outputs. A
// record that does not decode can never be stepped: it goes to dlq.v1 with
// the reason, and the batch goes on.
func (p *Processor[S]) step(tx *txn, records []*kgo.Record, now time.Time) error {
	for _, kr := range records {
		p.stats.Records.Add(1)
		if kafka.RedriveSkips(kr, p.Group()) {
			continue // a redrive for the consumers that refused it; this one applied it
		}
		in, err := p.decode(tx.ctx, kr)
		if err != nil {
			p.deadLetter(tx, kr, err)
			continue
		}
		p.stats.Decoded.Add(1)
		sl, _ := p.st.get(kr.Partition, in.Key)
		sctx := p.hooks.OnStep(tx.ctx, in)
		var s S
		var outs []schemas.Record
		if p.reuser != nil {
			s, outs = p.reuser.StepReusing(sl.s, in, now)
		} else {
			s, outs = p.m.Step(sl.s, in, now)
		}
		p.hooks.OnStepped(sctx, in, outs)
		p.setState(kr.Partition, in.Key, sl, s)
		if err := p.emit(tx, outs, in.Headers); err != nil {
			return err
		}
	}
	return nil
}

// deadLetter sends a record that can never be applied to dlq.v1 with the
// reason, in the batch's transaction.
func (p *Processor[S]) deadLetter(tx *txn, kr *kgo.Record, err error) {
	p.stats.DeadLettered.Add(1)
	p.hooks.OnDeadLetter(kr, err)
	p.log.WarnContext(telemetry.RecordContext(tx.ctx, kr), "dead letter", "topic", kr.Topic, "partition", kr.Partition, "offset", kr.Offset, "err", err)
	tx.produce(kafka.DeadLetter(kr, err, p.Group()))
}

// tick runs the timers that came due. It runs after the batch's steps,
// which may have moved a key's wake time: such a key is scheduled again
// rather than ticked early.
func (p *Processor[S]) tick(tx *txn, now time.Time) error {
	for _, e := range p.due {
		sl, _ := p.st.get(e.part, e.key)
		if !sl.has() {
			continue
		}
		if w := p.m.Wake(sl.s); w.IsZero() || w.After(now) {
			p.reschedule(e.part, e.key, sl)
			continue
		}
		p.stats.Ticks.Add(1)
		s, outs := p.m.Tick(sl.s, e.key, now)
		p.hooks.OnTick(e.key, outs)
		p.setState(e.part, e.key, sl, s)
		if err := p.emit(tx, outs, nil); err != nil {
			return err
		}
	}
	return nil
}

// emit produces a Step's or a Tick's outputs. An output without headers
// gets the ones that follow a job (trace, command id) from the input's.
func (p *Processor[S]) emit(tx *txn, outs []schemas.Record, from map[string]string) error {
	for _, o := range outs {
		if o.Headers == nil {
			o.Headers = CarryHeaders(from)
		}
		kr, err := kafka.ToKafka(tx.ctx, p.codec, o)
		if err != nil {
			return fmt.Errorf("%s: machine output: %w", p.cfg.Name, err)
		}
		tx.produce(kr)
	}
	return nil
}

// changelog produces one record per key the batch touched: its new state,
// or a tombstone for a key stepped to no state, so that a restore finds
// what the batch left. The values share one buffer, the previous batch's
// when it is free, else one sized from it: no allocation per key (or its
// regrowths) and none per batch in a busy loop. A value's slice is capped,
// so the next append never writes into it, and the records keep the buffer
// alive until sent. The keys go into the same buffer, the records into one
// array.
func (p *Processor[S]) changelog(tx *txn) error {
	if p.parted != nil {
		return p.changelogParts(tx)
	}
	slab, recs := p.changelogBuffers(len(p.touched))
	for i, tk := range p.touched {
		if !tk.has {
			// Stepped to no state: the slot goes now.
			p.st.remove(tk.part, tk.key)
			if !tk.had {
				continue
			}
		}
		kr := &recs[i]
		kr.Topic, kr.Partition = p.cfg.Changelog, tk.part
		start := len(slab)
		slab = append(slab, tk.key...)
		kr.Key = slab[start:len(slab):len(slab)]
		if tk.has {
			start = len(slab)
			var err error
			if slab, err = p.codec.AppendEncode(tx.ctx, slab, tk.s); err != nil {
				return fmt.Errorf("%s: encode state of %s: %w", p.cfg.Name, tk.key, err)
			}
			kr.Value = slab[start:len(slab):len(slab)]
			kr.Headers = p.typeHeader(tk.s)
		}
		tx.produce(kr)
	}
	p.slabHint = len(slab) + len(slab)/8
	tx.slab, tx.recs = slab, recs
	return nil
}

// commit ends the batch's transaction. A batch that did not commit leaves
// the states in memory ahead of the log while its inputs will be fetched
// again, so every state is restored.
func (p *Processor[S]) commit(tx *txn) error {
	start := time.Now()
	committed, err := p.end(tx)
	took := time.Since(start)
	if err == nil {
		p.slab, p.recs = tx.slab, tx.recs
	}
	if err == nil {
		err = tx.produced.Err()
	}
	p.hooks.OnEnd(took, err == nil && committed, p.st.n)
	if err != nil || !committed {
		p.stats.Aborts.Add(1)
		if err != nil {
			p.log.Warn("transaction failed", "err", err)
		}
		p.resetAll()
		if err != nil && tx.ctx.Err() == nil {
			return fmt.Errorf("%s: end transaction: %w", p.cfg.Name, err)
		}
		return nil
	}
	p.stats.Commits.Add(1)
	return nil
}

// end flushes the batch's records and ends its transaction: a commit when
// every record was written, else an abort, since a commit would lose the
// failed record. The explicit flush sends the last records at once, where
// waiting for their promises alone would wait out the producer's linger.
// When end returns without error, every record of the batch is finished.
func (p *Processor[S]) end(tx *txn) (committed bool, err error) {
	if err := tx.sess.Client().Flush(tx.ctx); err != nil {
		return false, err
	}
	return tx.sess.End(tx.ctx, tx.produced.Err() == nil)
}

// abort ends the batch's transaction without committing it. The states
// in memory ran ahead of the log, so every one is restored.
func (p *Processor[S]) abort(tx *txn, cause error) error {
	_, _ = tx.sess.End(tx.ctx, kgo.TryAbort)
	p.stats.Aborts.Add(1)
	p.resetAll()
	return cause
}

// changelogBuffers returns an empty buffer for a batch's changelog keys
// and values and n zeroed records: the last batch's when they are free and
// large enough, else new ones. It takes them from p, so that a batch that
// fails leaves nothing to reuse.
func (p *Processor[S]) changelogBuffers(n int) ([]byte, []kgo.Record) {
	slab, recs := p.slab[:0], p.recs
	p.slab, p.recs = nil, nil
	if want := min(p.slabHint, maxSlab); cap(slab) < want {
		slab = make([]byte, 0, want)
	}
	if cap(recs) < n {
		recs = make([]kgo.Record, n)
	} else {
		recs = recs[:n]
		clear(recs)
	}
	return slab, recs
}

// maxSlab bounds the changelog buffer a batch starts with; a batch of
// larger states grows it by appending.
const maxSlab = 64 << 20

// typeHeader returns the changelog headers of a state or part value.
func (p *Processor[S]) typeHeader(v any) []kgo.RecordHeader {
	name := schemas.TypeName(v)
	h, ok := p.typeHeaders[name]
	if !ok {
		if p.typeHeaders == nil {
			p.typeHeaders = map[string][]kgo.RecordHeader{}
		}
		h = []kgo.RecordHeader{{Key: "type", Value: []byte(name)}}
		p.typeHeaders[name] = h
	}
	return h
}

// decode turns a consumed record into the machine's input.
func (p *Processor[S]) decode(ctx context.Context, kr *kgo.Record) (schemas.Record, error) {
	if p.cfg.SkipDecode {
		return schemas.Record{Topic: kr.Topic, Key: string(kr.Key), Partition: kr.Partition, Offset: kr.Offset}, nil
	}
	return kafka.FromKafka(ctx, p.codec, kr)
}

// CarryHeaders keeps the headers that follow a job from record to record
// (trace, command id): an output without headers of its own gets these
// from its input.
func CarryHeaders(h map[string]string) map[string]string {
	var out map[string]string
	for _, k := range []string{"traceparent", "command_id"} {
		if v, ok := h[k]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}
