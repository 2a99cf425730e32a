package gateway

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

// The feed consumes vm.events.v1 into the fanout (every partition, no
// consumer group: each gateway instance sees every event), but only while
// a stream is open and for feedGrace after the last one closes: a gateway
// nobody streams from decodes nothing, and a client that reconnects within
// the grace resumes from the ring without a gap. A feed starts with an
// empty ring, so a Last-Event-ID from before an idle spell gets the
// stream's "gap" event. It starts in each partition where the read model
// is (the projector's next offset), not at the committed end: the events
// the projector has not applied yet are then in the ring, after the
// snapshot a job stream reads of the read model (join.go). A projector
// further behind than the ring holds is not waited for so: the feed then
// starts that many offsets before the end.
const (
	feedGrace = time.Minute
	// feedWait bounds how long a new stream waits for the feed to start.
	feedWait = 10 * time.Second
	// ownerWait bounds an owner lookup; ownerPause is how long the feed
	// asks none after one failed.
	ownerWait  = time.Second
	ownerPause = 10 * time.Second
	// positionWait bounds the read of the read model's position when a
	// feed starts.
	positionWait = time.Second
)

// Subscribe's answers when it cannot wait for the feed.
var (
	errFeedDown = errors.New("the event feed did not start in time (is Kafka reachable?); try again")
	errDraining = errors.New("the gateway is shutting down; reconnect")
)

// OwnerLookup returns the account of a VM, "" when the VM is not known.
// The feed asks it for an event without an account (PowerStateObserved)
// of a VM whose account it has not seen, such as one created while the
// feed was idle.
type OwnerLookup func(ctx context.Context, vmID string) (string, error)

// PositionLookup returns the read model's position in vm.events.v1: the
// next offset the projector applies in each partition.
type PositionLookup func(ctx context.Context) (map[int32]int64, error)

// PositionFrom reads the projector's position from the read model.
func PositionFrom(rm ReadModel) PositionLookup { return rm.EventsPosition }

// OwnersFrom looks VM accounts up in the read model.
func OwnersFrom(rm ReadModel) OwnerLookup {
	return func(ctx context.Context, vmID string) (string, error) {
		v, err := rm.VM(ctx, vmID)
		if errors.Is(err, readmodel.ErrNotFound) {
			return "", nil
		}
		return v.Account, err
	}
}

// FedByRun says that Run feeds f: from then on a new stream waits for
// Run's feed (up to feedWait, else it fails), also before Run starts,
// between two runs, and after Run failed. Call it before serving streams;
// without it (tests that Publish) streams take what Publish hands over.
func (f *Fanout) FedByRun() {
	f.mu.Lock()
	f.fed = true
	f.mu.Unlock()
}

// Run feeds the fanout from Kafka whenever a stream asks for it, until ctx
// ends. owner may be nil: events without an account then reach only the
// admin streams until the VM's account is seen. at may be nil, or fail: a
// feed then starts at the committed end of every partition, and a job
// stream whose snapshot is behind it waits for the projector (join.go).
func (f *Fanout) Run(ctx context.Context, cfg kafka.Config, owner OwnerLookup, at PositionLookup) error {
	codec, err := cfg.Codec()
	if err != nil {
		return fmt.Errorf("fanout codec: %w", err)
	}
	admin, err := kgo.NewClient(cfg.Opts()...)
	if err != nil {
		return fmt.Errorf("fanout client: %w", err)
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)

	f.FedByRun()
	f.mu.Lock()
	if len(f.subs) > 0 {
		f.wantLocked()
	}
	f.mu.Unlock()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-f.demand:
		}
		f.mu.Lock()
		wanted := len(f.subs) > 0 && !closed(f.ready)
		f.mu.Unlock()
		if !wanted {
			continue // the streams that asked have left, or a feed runs
		}
		err := f.feed(ctx, cfg, codec, adm, owner, at)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			// The streams that asked still wait (up to f.wait): try
			// again for them after a second.
			f.log.Warn("event feed", "err", err)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Second):
			}
			f.mu.Lock()
			if len(f.subs) > 0 && !closed(f.ready) {
				f.wantLocked()
			}
			f.mu.Unlock()
		}
	}
}

// feed runs one feed: from where the read model is in every partition
// (feedStarts) until the grace period after the last stream ends it, or
// ctx does.
func (f *Fanout) feed(ctx context.Context, cfg kafka.Config, codec *schemas.Codec, adm *kadm.Client, owner OwnerLookup, at PositionLookup) error {
	ends, err := committedEnds(ctx, adm, cfg.Topic(schemas.TopicVmEvents), f.wait)
	if err != nil {
		return err
	}
	starts := f.feedStarts(ctx, ends, at)
	offsets := make(map[int32]kgo.Offset, len(starts))
	for p, o := range starts {
		offsets[p] = kgo.NewOffset().At(o)
	}
	cl, err := kgo.NewClient(cfg.Opts(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{cfg.Topic(schemas.TopicVmEvents): offsets}))...)
	if err != nil {
		return fmt.Errorf("fanout client: %w", err)
	}
	defer cl.Close()
	fctx, stop := context.WithCancel(ctx)
	defer stop()
	gen := f.started(stop, starts)
	defer f.ended(gen)
	for {
		fetches := cl.PollFetches(fctx)
		if fctx.Err() != nil {
			return nil
		}
		fetches.EachError(func(t string, p int32, err error) {
			f.log.Warn("fanout fetch", "topic", t, "partition", p, "err", err)
		})
		for _, kr := range cfg.In(fetches.Records()) {
			if fctx.Err() != nil {
				break // stopped: the rest of the fetch would be dropped
			}
			if kafka.RedriveSkips(kr, "") {
				continue // streamed when it was first written
			}
			rec, err := kafka.FromKafka(fctx, codec, kr)
			if err != nil {
				f.log.Warn("fanout decode", "partition", kr.Partition, "offset", kr.Offset, "err", err)
				continue
			}
			e := eventOf(rec)
			if e.Account == "" && e.VmID != "" && owner != nil {
				f.learnOwner(fctx, e.VmID, owner)
			}
			f.mu.Lock()
			if gen == f.gen {
				f.publishLocked(e)
			}
			f.mu.Unlock()
		}
	}
}

// committedEnds lists the last stable offset of every partition of
// vm.events.v1 (its physical name: topic; an event committed after the
// listing is at or after it), asking again for up to wait while the new
// client's metadata learns the topic.
func committedEnds(ctx context.Context, adm *kadm.Client, topic string, wait time.Duration) (map[int32]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	listed, err := kafka.ListOffsets(ctx, adm.ListCommittedOffsets, topic)
	if err != nil {
		return nil, err
	}
	ends := map[int32]int64{}
	listed.Each(func(o kadm.ListedOffset) { ends[o.Partition] = o.Offset })
	if len(ends) == 0 {
		return nil, fmt.Errorf("%s has no partitions", topic)
	}
	return ends, nil
}

// feedStarts is where a feed starts in each partition: the read model's
// next offset, so that the events a snapshot of it lacks are fed; no
// further back than the ring holds (a projector that far behind is waited
// for by the streams that need it), and no later than the committed end.
// Without the read model's position (at is nil or fails) it is the end.
func (f *Fanout) feedStarts(ctx context.Context, ends map[int32]int64, at PositionLookup) map[int32]int64 {
	if at == nil {
		return ends
	}
	actx, cancel := context.WithTimeout(ctx, positionWait)
	defer cancel()
	next, err := at(actx)
	if err != nil {
		f.log.Warn("fanout: read the read model's position; the feed starts at the end", "err", err)
		return ends
	}
	starts := make(map[int32]int64, len(ends))
	for p, end := range ends {
		starts[p] = min(end, max(next[p], end-int64(len(f.ring))))
	}
	return starts
}

// started makes a feed positioned at starts the running one: the ring
// starts empty (what it held came before an idle spell) and holds every
// event from starts on, and streams waiting in Subscribe go on. It returns
// the feed's generation.
func (f *Fanout) started(stop context.CancelFunc, starts map[int32]int64) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gen++
	clear(f.ring)
	f.next, f.full = 0, false
	f.from = maps.Clone(starts)
	f.stop = stop
	close(f.ready)
	if len(f.subs) == 0 {
		f.idleLocked() // every waiting stream left
	}
	return f.gen
}

// ended forgets feed gen if it is still the running one (it ended with
// Run's ctx); a feed stopped for idleness was forgotten when stopped.
func (f *Fanout) ended(gen uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if gen == f.gen {
		f.stopLocked()
	}
}

// stopLocked stops the running feed: its last events are dropped, and the
// next stream waits for a new feed.
func (f *Fanout) stopLocked() {
	if f.stop == nil {
		return
	}
	f.stop()
	f.stop = nil
	f.gen++
	f.ready = make(chan struct{})
}

// idleLocked starts the grace period of a running feed with no stream.
func (f *Fanout) idleLocked() {
	if f.stop == nil || f.idle != nil {
		return
	}
	var t *time.Timer
	t = time.AfterFunc(f.grace, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.idle != t {
			return // stopped by a stream, and maybe armed again since
		}
		f.idle = nil
		if len(f.subs) == 0 {
			f.stopLocked()
		}
	})
	f.idle = t
}

// wantLocked asks Run for a feed.
func (f *Fanout) wantLocked() {
	select {
	case f.demand <- struct{}{}:
	default:
	}
}

// await waits in Subscribe for the feed that sub asked for. The feed
// starts after sub was registered, so everything it publishes reaches
// sub's queue and the ring holds nothing older: there is no backlog, and
// a stream resuming from before the idle spell gets a gap (whether events
// were committed in between is not known: transaction markers take
// offsets too).
func (f *Fanout) await(ctx context.Context, sub *subscription, ready <-chan struct{}, lastID string) (gap bool, err error) {
	f.mu.Lock()
	f.wantLocked()
	f.mu.Unlock()
	t := time.NewTimer(f.wait)
	defer t.Stop()
	select {
	case <-ready:
		return lastID != "", nil
	case <-ctx.Done():
		sub.Close()
		return false, ctx.Err()
	case <-draining(ctx):
		sub.Close()
		return false, errDraining
	case <-t.C:
		sub.Close()
		return false, errFeedDown
	}
}

// learnOwner asks owner for the account of a VM the fanout has not seen.
// The answer is kept, also "not known" (such a VM's events reach only
// admin streams until one of them names its account). After a failed
// lookup the feed asks nothing for ownerPause, so that a database outage
// does not stall it on every event.
func (f *Fanout) learnOwner(ctx context.Context, vmID string, owner OwnerLookup) {
	f.mu.Lock()
	_, known := f.owners[vmID]
	paused := time.Now().Before(f.ownerPause)
	f.mu.Unlock()
	if known || paused {
		return
	}
	lctx, cancel := context.WithTimeout(ctx, ownerWait)
	defer cancel()
	account, err := owner(lctx, vmID)
	if ctx.Err() != nil {
		return // the feed stopped
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		f.log.Warn("fanout: look up the VM's account; asking none for a while", "vm", vmID, "pause", ownerPause, "err", err)
		f.ownerPause = time.Now().Add(ownerPause)
		return
	}
	if _, known := f.owners[vmID]; !known {
		f.owners[vmID] = account
	}
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
