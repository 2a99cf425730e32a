package engine

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/schemas"
)

// RestoreStallAfter is how long a restore may make no progress before it
// says so in the log and in ReadyErr.
const RestoreStallAfter = 30 * time.Second

// restore reads the changelog partitions from their start up to the last
// stable offset listed when it begins and loads the latest state of every
// key. It ends when the reader's position reaches each end, whatever the
// broker delivers or skips on the way: aborted transactions (with or
// without a marker), control records and compacted gaps all move the
// position. A restore that makes no progress keeps trying (the broker may
// be restarting) and says where it stands after RestoreStallAfter.
func (p *Processor[S]) restore(ctx context.Context, cl *kgo.Client, parts []int32) (int, error) {
	adm := kadm.NewClient(cl)
	changelog := p.cfg.Kafka.Topic(p.cfg.Changelog)
	lso, err := kafka.ListOffsets(ctx, adm.ListCommittedOffsets, changelog)
	if err != nil {
		return 0, err
	}
	starts, err := kafka.ListOffsets(ctx, adm.ListStartOffsets, changelog)
	if err != nil {
		return 0, err
	}
	from, to := map[int32]int64{}, map[int32]int64{}
	for _, part := range parts {
		o, ok := lso.Lookup(changelog, part)
		if !ok || o.Err != nil {
			return 0, fmt.Errorf("no end offset for %s/%d: %v", changelog, part, o.Err)
		}
		s, _ := starts.Lookup(changelog, part)
		from[part], to[part] = s.Offset, o.Offset
	}
	// A partition's keys are restored from scratch: whatever an earlier
	// owner period left of them is forgotten first.
	for _, part := range parts {
		p.dropPartition(part)
	}
	rctx, cancel := context.WithCancel(ctx)
	fetches := prefetch(rctx, kafka.NewPositionReader(cl, changelog, from, to), func(recs []*kgo.Record) ([]any, error) {
		return p.decodeAll(rctx, p.cfg.Kafka.In(recs))
	})
	defer func() {
		cancel()
		for range fetches { // the reader is done with cl when it closes them
		}
	}()
	progress := time.Now()
	warned := time.Time{}
	defer p.restoring.Store(nil)
	var g map[int32]map[string]*gathered[S]
	if p.parted != nil {
		g = map[int32]map[string]*gathered[S]{}
	}
	for f := range fetches {
		if f.err != nil {
			return 0, f.err
		}
		p.applyAll(f.recs, f.values, g)
		if f.moved {
			progress = time.Now()
			if !warned.IsZero() {
				p.log.Info("restore moves again", "changelog", p.cfg.Changelog, "left", f.left)
				warned = time.Time{}
			}
			p.restoring.Store(nil)
			continue
		}
		if stalled := time.Since(progress); stalled >= RestoreStallAfter {
			msg := fmt.Sprintf("restore of %s has made no progress for %s: %s", p.cfg.Changelog, stalled.Round(time.Second), f.left)
			p.restoring.Store(&msg)
			if time.Since(warned) >= RestoreStallAfter {
				p.log.Warn("restore stalled", "changelog", p.cfg.Changelog, "for", stalled.Round(time.Second), "left", f.left)
				warned = time.Now()
			}
		}
	}
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	if err := p.assembleAll(g); err != nil {
		return 0, err
	}
	n := 0
	for _, part := range parts {
		if int(part) < len(p.st.parts) {
			n += len(p.st.parts[part])
		}
	}
	return n, nil
}

// fetched is one answer of the changelog reader: its records and their
// decoded values, whether any position moved, and where the reader stands.
type fetched struct {
	recs   []*kgo.Record
	values []any
	moved  bool
	left   string
	err    error
}

// prefetch reads rd to its end in one goroutine and decodes its answers
// in another, each stage one answer ahead of the next: while the restore
// loop stores the states of one answer, decode makes the values of the
// next and the broker assembles the one after (with reading and decoding
// in one goroutine, a 500,000-key restore spent 1.15 s waiting for the
// broker's answers and 0.6 s decoding them, one after the other). The
// channel closes when every partition is read, after an error (the last
// answer sent) or when ctx ends, and only once the reader is done with
// rd's client.
func prefetch(ctx context.Context, rd *kafka.PositionReader, decode func([]*kgo.Record) ([]any, error)) <-chan fetched {
	read := make(chan fetched, 1)
	go func() {
		defer close(read)
		for !rd.Done() {
			recs, moved, err := rd.Fetch(ctx)
			if ctx.Err() != nil {
				return
			}
			f := fetched{recs: recs, moved: moved, err: err}
			if !moved {
				f.left = rd.Left()
			}
			select {
			case read <- f:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	ch := make(chan fetched, 1)
	go func() {
		defer close(ch)
		defer func() {
			for range read { // until the reader stops: ctx ends with the restore
			}
		}()
		for f := range read {
			if f.err == nil {
				f.values, f.err = decode(f.recs)
			}
			select {
			case ch <- f:
			case <-ctx.Done():
				return
			}
			if f.err != nil {
				return
			}
		}
	}()
	return ch
}

// decodeAll decodes the values of one answer's changelog records in as
// many goroutines as the process may run at once (at 500,000 keys
// decoding is most of a restore's CPU); a tombstone's value is nil.
func (p *Processor[S]) decodeAll(ctx context.Context, recs []*kgo.Record) ([]any, error) {
	values := make([]any, len(recs))
	workers := max(min(runtime.GOMAXPROCS(0), len(recs)/minDecodeShare), 1)
	per := (len(recs) + workers - 1) / workers
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*per, min((w+1)*per, len(recs))
		wg.Go(func() { errs[w] = p.decodeStates(ctx, recs[lo:hi], values[lo:hi]) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err // the earliest record's
		}
	}
	return values, nil
}

// applyAll applies one answer's changelog records in order, their values
// decoded. A Parted machine's records are gathered in g, to be assembled
// when the restore has read them all.
func (p *Processor[S]) applyAll(recs []*kgo.Record, values []any, g map[int32]map[string]*gathered[S]) {
	for i, r := range recs {
		if g != nil {
			p.gather(g, r, values[i])
			continue
		}
		p.load(r, values[i])
	}
}

// minDecodeShare is the fewest records worth a goroutine of their own.
const minDecodeShare = 512

// decodeStates decodes the value of each record into values; a
// tombstone's stays nil. It stops at the first value that is not a state
// (or, for a Parted machine, that is no record).
func (p *Processor[S]) decodeStates(ctx context.Context, recs []*kgo.Record, values []any) error {
	for i, r := range recs {
		if r.Value == nil || p.cfg.SkipDecode {
			continue
		}
		v, err := p.codec.DecodeStateAt(ctx, r.Topic, r.Partition, r.Offset, r.Value)
		if err != nil {
			return err
		}
		if _, ok := v.(S); !ok && p.parted == nil {
			return fmt.Errorf("%s/%d@%d: state is a %s", r.Topic, r.Partition, r.Offset, schemas.TypeName(v))
		}
		values[i] = v
	}
	return nil
}

// load applies one changelog record, its value decoded into v: a key's
// latest value replaces its slot, a tombstone removes it.
func (p *Processor[S]) load(r *kgo.Record, v any) {
	if r.Value == nil || p.cfg.SkipDecode {
		p.st.remove(r.Partition, string(r.Key))
		return
	}
	s := v.(S)
	p.restored(r.Partition, keyOf(s, r.Key), s)
}

// keyOf is a restored state's key: the state's own copy when it holds its
// key (keyed), so that restoring 500,000 keys makes no string of each.
func keyOf[S any](s S, key []byte) string {
	if k, ok := any(s).(keyed); ok {
		if own := k.StateKey(); own == string(key) {
			return own
		}
	}
	return string(key)
}

// restored makes s the state of a key, as a restore read it.
func (p *Processor[S]) restored(part int32, key string, s S) {
	// The earlier record's timer entry goes stale.
	old, _ := p.st.get(part, key)
	sl := slot[S]{s: s}
	sl.setHas(true)
	sl.wake = p.wakeOf(part, key, s, old.wake)
	p.st.put(part, key, old, sl)
}
