package journal

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A full batch is inserted and committed in flight, by its own goroutine,
// while Run polls and decodes the next one: ClickHouse parses and sorts a
// batch while the projector decodes the following, instead of each waiting
// for the other. At most one batch is in flight; the next waits for it to
// land before taking off, so offsets are still committed in order and only
// after their rows are in. Rebalances stay blocked while a batch is in
// flight (Run calls AllowRebalance only once it has landed), so its commit
// covers partitions this member still owns.

// errPutOff ends a flight cut short for a rebalance: its rows were not
// inserted and nothing was committed.
var errPutOff = errors.New("journal projector: flush put off for a rebalance")

// flight is a batch being inserted and committed.
type flight struct {
	b      batch
	traces traced // spans of the batch's records (telemetry.go)
	done   chan error
}

// takeOff waits for the batch in flight to land, then sends the pending
// batch off; pending starts again empty. A rebalance that wants to happen
// goes first: the rows stay pending.
func (p *Projector) takeOff(ctx context.Context, cl *kgo.Client, ins insertFunc) error {
	if err := p.land(); err != nil {
		return err
	}
	if p.rebalanceWanted.Load() {
		return nil
	}
	p.mu.Lock()
	if p.pending.records == 0 {
		p.mu.Unlock()
		return nil
	}
	f := &flight{b: p.pending, traces: p.traces, done: make(chan error, 1)}
	p.afterFull = f.b.len() >= p.cfg.BatchRows
	if p.spare.next == nil { // the last flight was put off, or none landed yet
		p.spare = newBatch()
	}
	p.pending, p.spare, p.traces = p.spare, batch{}, traced{}
	p.mu.Unlock()

	fctx, cancel := context.WithCancel(ctx)
	p.cancelMu.Lock()
	p.cancelFlush = cancel
	p.cancelMu.Unlock()
	p.inflight = f
	go func() {
		defer cancel()
		f.done <- p.flush(ctx, fctx, cl, ins, f)
	}()
	return nil
}

// landIfDone lands the batch in flight if it has finished, without waiting:
// Run learns of a failed flight (the projection gone) and allows rebalances
// again as soon as it polls after it.
func (p *Projector) landIfDone() error {
	if p.inflight == nil || len(p.inflight.done) == 0 {
		return nil
	}
	return p.land()
}

// land waits for the batch in flight, if any (its context ends with Run's).
// One put off for a rebalance goes back in front of the pending batch; a
// landed one is emptied and kept as the spare.
func (p *Projector) land() error {
	f := p.inflight
	if f == nil {
		return nil
	}
	err := <-f.done
	p.inflight = nil
	p.cancelMu.Lock()
	p.cancelFlush = nil
	p.cancelMu.Unlock()
	switch {
	case errors.Is(err, errPutOff):
		p.mu.Lock()
		p.pending.takeBack(&f.b)
		p.traces.takeBack(f.traces) // telemetry:
		p.mu.Unlock()
		return nil
	case err != nil:
		return err
	}
	f.b.reset()
	p.spare = f.b
	return nil
}
