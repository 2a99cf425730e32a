package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/internal/testkit"
	"github.com/vmplane/vmplane/schemas"
)

// feedTest is a fanout fed by Run from a real (kfake) broker, and a
// transactional producer of vm.events.v1.
type feedTest struct {
	t     *testing.T
	f     *Fanout
	cfg   kafka.Config
	codec *schemas.Codec
	prod  *kgo.Client
	asked atomic.Int32 // owner lookups
	at    PositionLookup
}

func newFeedTest(t *testing.T) *feedTest {
	cfg, _ := testkit.Kafka(t)
	codec, err := cfg.Codec()
	if err != nil {
		t.Fatal(err)
	}
	prod, err := kgo.NewClient(cfg.Opts(kgo.TransactionalID("feed-test"))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prod.Close)
	ft := &feedTest{t: t, f: NewFanout(slog.New(slog.DiscardHandler), 1000), cfg: cfg, codec: codec, prod: prod}
	ft.f.grace = 300 * time.Millisecond
	return ft
}

// run starts Run; the VM "vm-late" belongs to acct-late in its owner
// lookup, and the read model's position is ft.at's (nil: none).
func (ft *feedTest) run() {
	ctx, cancel := context.WithCancel(ft.t.Context())
	done := make(chan error, 1)
	go func() {
		done <- ft.f.Run(ctx, ft.cfg, func(_ context.Context, vm string) (string, error) {
			ft.asked.Add(1)
			if vm == "vm-late" {
				return "acct-late", nil
			}
			return "", nil
		}, ft.at)
	}()
	ft.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			ft.t.Errorf("Run: %v", err)
		}
	})
}

// commit produces recs in one transaction.
func (ft *feedTest) commit(recs ...schemas.Record) {
	ft.t.Helper()
	if err := ft.tryCommit(recs...); err != nil {
		ft.t.Fatal(err)
	}
}

func (ft *feedTest) tryCommit(recs ...schemas.Record) error {
	ctx := ft.t.Context()
	if err := ft.prod.BeginTransaction(); err != nil {
		return err
	}
	if err := (kafka.Config{}).Produce(ctx, ft.prod, ft.codec, recs...); err != nil {
		return err
	}
	return ft.prod.EndTransaction(ctx, kgo.TryCommit)
}

func observed(vm string, n int) schemas.Record {
	return schemas.Record{Topic: schemas.TopicVmEvents, Key: vm,
		Value: &schemas.PowerStateObserved{VmID: vm, HostID: "h1", PowerState: "PowerOn", Count: int32(n)}}
}

func created(vm, account string) schemas.Record {
	return schemas.Record{Topic: schemas.TopicVmEvents, Key: vm,
		Value: &schemas.VmStateChanged{VmID: vm, Account: account, VmState: "Running"}}
}

// next waits for the subscription's next event.
func next(t *testing.T, s *subscription) Event {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		if got, _ := s.take(nil); len(got) > 0 {
			// Put back what the caller has not asked for yet.
			s.mu.Lock()
			s.queue = append(got[1:], s.queue...)
			s.mu.Unlock()
			return got[0]
		}
		select {
		case <-s.wake:
		case <-deadline:
			t.Fatal("no event within 10 s")
		}
	}
}

func (f *Fanout) running() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stop != nil
}

// TestFeedRunsOnlyForStreams: with no stream open the fanout consumes
// nothing; the first stream starts it, and every event committed after
// Subscribe returns reaches the stream, once and in order, while a
// producer commits all along; the feed stops after the grace period of
// the last stream, and a stream after that resumes with a gap.
func TestFeedRunsOnlyForStreams(t *testing.T) {
	ft := newFeedTest(t)
	f := ft.f
	ft.run()
	ft.commit(created("vm-a", "acct-a"), observed("vm-a", 0))
	time.Sleep(300 * time.Millisecond)
	if f.running() || len(f.ordered()) != 0 {
		t.Fatalf("with no stream open the feed runs (%v) or the ring holds %d events", f.running(), len(f.ordered()))
	}

	// A producer commits one event per transaction, all to one partition,
	// while the first stream subscribes.
	var begun atomic.Int64 // the last event whose transaction has begun
	stopProducing := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 1; ; i++ {
			select {
			case <-stopProducing:
				return
			default:
			}
			begun.Store(int64(i))
			if err := ft.tryCommit(observed("vm-a", i)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	time.Sleep(50 * time.Millisecond)
	sub, backlog, gap, err := f.Subscribe(t.Context(), func(Event) bool { return true }, "")
	if err != nil || len(backlog) != 0 || gap {
		t.Fatalf("Subscribe: %v, backlog %d, gap %v", err, len(backlog), gap)
	}
	after := begun.Load() // every event after this one began after Subscribe returned
	for deadline := time.Now().Add(10 * time.Second); begun.Load() < after+5 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	close(stopProducing)
	wg.Wait()
	last := begun.Load()
	if last <= after+1 {
		t.Fatalf("the producer committed only %d events after Subscribe returned", last-after)
	}
	var prev int64 = -1
	var lastEvent Event
	for prev != last {
		e := next(t, sub)
		n := int64(e.body.value.(*schemas.PowerStateObserved).Count)
		if prev >= 0 && n != prev+1 || prev < 0 && n > after+1 {
			t.Fatalf("after event %d came %d (Subscribe returned when event %d had begun)", prev, n, after)
		}
		prev, lastEvent = n, e
	}
	if got, _ := sub.take(nil); len(got) != 0 {
		t.Fatalf("%d events more than committed", len(got))
	}

	// An event without an account of a VM first seen now: its account
	// comes from the owner lookup, asked once.
	asked := ft.asked.Load()
	ft.commit(observed("vm-late", 1), observed("vm-late", 2))
	for range 2 {
		if e := next(t, sub); e.VmID != "vm-late" || e.Account != "acct-late" {
			t.Fatalf("event %s of %s with account %q, want vm-late's of acct-late", e.ID, e.VmID, e.Account)
		}
	}
	if n := ft.asked.Load() - asked; n != 1 {
		t.Fatalf("the owner lookup was asked %d times for vm-late, want once", n)
	}

	// Closing the last stream stops the feed after the grace period; a
	// stream that comes back at once resumes from the ring.
	sub.Close()
	sub, backlog, gap, err = f.Subscribe(t.Context(), func(Event) bool { return true }, lastEvent.ID)
	if err != nil || gap || len(backlog) != 2 || backlog[0].VmID != "vm-late" {
		t.Fatalf("resume within the grace: %v, gap %v, backlog %v", err, gap, backlog)
	}
	sub.Close()
	waitUntil(t, "the feed stops after the grace", func() bool { return !f.running() })
	lastID := backlog[1].ID

	// A stream resuming from before an idle spell gets a gap (whether
	// events were committed meanwhile is not known), then live events.
	ft.commit(observed("vm-a", 1000))
	sub, backlog, gap, err = f.Subscribe(t.Context(), func(Event) bool { return true }, lastID)
	if err != nil || !gap || len(backlog) != 0 {
		t.Fatalf("resume after an idle spell: %v, gap %v, backlog %d", err, gap, len(backlog))
	}
	ft.commit(observed("vm-a", 1001))
	if e := next(t, sub); e.body.value.(*schemas.PowerStateObserved).Count != 1001 {
		t.Fatalf("the stream after an idle spell got %s first, want event 1001", e.ID)
	}
	sub.Close()
}

// TestFeedRunAgain: a Run that ended (its role restarted) leaves the
// fanout ready for the next: a stream that subscribes between the two
// waits for the next Run's feed and gets what is committed after.
func TestFeedRunAgain(t *testing.T) {
	ft := newFeedTest(t)
	f := ft.f
	owner := func(context.Context, string) (string, error) { return "", nil }
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	// As a gateway does before it serves streams: else a Subscribe that
	// comes before the goroutine's Run gets to it takes live events
	// only, and one committed before the feed starts is never seen
	// (this test failed so on a loaded machine).
	f.FedByRun()
	go func() { done <- f.Run(ctx, ft.cfg, owner, nil) }()
	sub, _, _, err := f.Subscribe(t.Context(), func(Event) bool { return true }, "")
	if err != nil {
		t.Fatal(err)
	}
	ft.commit(observed("vm-a", 1))
	if e := next(t, sub); e.body.value.(*schemas.PowerStateObserved).Count != 1 {
		t.Fatalf("first run: got %s", e.ID)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if f.running() {
		t.Fatal("a feed runs after Run returned")
	}
	sub.Close()

	subscribed := make(chan *subscription, 1)
	go func() {
		s, _, _, err := f.Subscribe(t.Context(), func(Event) bool { return true }, "")
		if err != nil {
			t.Error(err)
		}
		subscribed <- s
	}()
	time.Sleep(100 * time.Millisecond) // the stream waits: no Run
	select {
	case <-subscribed:
		t.Fatal("Subscribe returned with no Run to feed it")
	default:
	}
	go func() { done <- f.Run(t.Context(), ft.cfg, owner, nil) }()
	sub = <-subscribed
	if sub == nil {
		t.FailNow()
	}
	ft.commit(observed("vm-a", 2))
	if e := next(t, sub); e.body.value.(*schemas.PowerStateObserved).Count != 2 {
		t.Fatalf("second run: got %s", e.ID)
	}
	sub.Close()
}

// TestFeedDown: a stream that waits for a feed that cannot start (no
// broker) fails within the fanout's wait and leaves no subscription; one
// whose client leaves while it waits returns at once.
func TestFeedDown(t *testing.T) {
	_, b := testkit.Kafka(t)
	ft := newFeedTest(t)
	ft.cfg.Brokers = b.Addrs()
	b.Close()
	ft.f.wait = 500 * time.Millisecond
	ft.run()
	waitUntil(t, "Run feeds the fanout", func() bool { ft.f.mu.Lock(); defer ft.f.mu.Unlock(); return ft.f.fed })
	start := time.Now()
	_, _, _, err := ft.f.Subscribe(t.Context(), func(Event) bool { return true }, "")
	if !errors.Is(err, errFeedDown) {
		t.Fatalf("Subscribe with no broker: %v, want errFeedDown", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Subscribe failed after %v, want about the wait (500ms)", d)
	}
	ft.f.mu.Lock()
	n := len(ft.f.subs)
	ft.f.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d subscriptions left after a failed Subscribe", n)
	}

	ft.f.wait = time.Minute
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start = time.Now()
	if _, _, _, err := ft.f.Subscribe(ctx, func(Event) bool { return true }, ""); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Subscribe whose client left: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Subscribe whose client left returned after %v", d)
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
	}
}

// TestLearnOwner: an answer is kept, "not known" too; after a failed
// lookup none is asked until the pause ends; a lookup cut short by the
// feed's stop neither pauses nor is kept.
func TestLearnOwner(t *testing.T) {
	f := NewFanout(slog.New(slog.DiscardHandler), 10)
	var asked []string
	fail := false
	owner := func(_ context.Context, vm string) (string, error) {
		asked = append(asked, vm)
		if fail {
			return "", errors.New("database down")
		}
		if vm == "vm-a" {
			return "acct-a", nil
		}
		return "", nil
	}
	ctx := t.Context()
	for range 2 {
		f.learnOwner(ctx, "vm-a", owner)
		f.learnOwner(ctx, "vm-gone", owner)
	}
	if fmt.Sprint(asked) != "[vm-a vm-gone]" || f.owners["vm-a"] != "acct-a" || f.owners["vm-gone"] != "" {
		t.Fatalf("asked %v, owners %v", asked, f.owners)
	}

	stopped, stop := context.WithCancel(ctx)
	stop()
	f.learnOwner(stopped, "vm-b", owner)
	if _, kept := f.owners["vm-b"]; kept || !f.ownerPause.IsZero() {
		t.Fatalf("a stopped feed's lookup was kept (%v) or paused lookups (%v)", kept, f.ownerPause)
	}

	fail, asked = true, nil
	f.learnOwner(ctx, "vm-c", owner)
	f.learnOwner(ctx, "vm-d", owner)
	if fmt.Sprint(asked) != "[vm-c]" {
		t.Fatalf("after a failed lookup asked %v, want only vm-c", asked)
	}
	fail, f.ownerPause = false, time.Now() // the pause is over
	f.learnOwner(ctx, "vm-c", owner)
	if fmt.Sprint(asked) != "[vm-c vm-c]" {
		t.Fatalf("after the pause asked %v", asked)
	}
}

// TestFeedStartsWhereTheReadModelIs: a feed starts in each partition at
// the read model's position, so that the events committed before it but
// not applied by the projector yet are in the ring; without that position
// (none, or it cannot be read) it starts at the committed end.
func TestFeedStartsWhereTheReadModelIs(t *testing.T) {
	ft := newFeedTest(t)
	f := ft.f
	var mu sync.Mutex
	var position map[int32]int64 // the read model's; nil: it cannot be read
	ft.at = func(context.Context) (map[int32]int64, error) {
		mu.Lock()
		defer mu.Unlock()
		if position == nil {
			return nil, errors.New("database down")
		}
		return position, nil
	}
	f.FedByRun() // before Run: the first Subscribe waits for the feed
	ft.run()
	all := func(Event) bool { return true }
	// No position: the first feed starts at the end, and takes what is
	// committed after.
	sub, _, _, err := f.Subscribe(t.Context(), all, "")
	if err != nil {
		t.Fatal(err)
	}
	var seen []Event
	for i := range 5 {
		ft.commit(observed("vm-a", i)) // one transaction each: markers take offsets
		seen = append(seen, next(t, sub))
	}
	sub.Close()
	waitUntil(t, "the feed stops after the grace", func() bool { return !f.running() })

	// The projector has applied the first two: the next feed starts at
	// the third, which a job stream's snapshot then lacks.
	p := seen[2].partition
	mu.Lock()
	position = map[int32]int64{p: seen[2].offset}
	mu.Unlock()
	sub, backlog, cover, err := f.subscribeAll(t.Context(), all)
	if err != nil || len(backlog) != 0 || cover[p] != seen[2].offset {
		t.Fatalf("subscribeAll: %v, backlog %d, cover %v (want %d in partition %d)", err, len(backlog), cover, seen[2].offset, p)
	}
	for _, want := range seen[2:] {
		if e := next(t, sub); e.ID != want.ID {
			t.Fatalf("the feed from the read model's position sent %s, want %s", e.ID, want.ID)
		}
	}
	ft.commit(observed("vm-a", 5))
	if e := next(t, sub); e.body.value.(*schemas.PowerStateObserved).Count != 5 {
		t.Fatalf("after the replay came %s, want the event committed after", e.ID)
	}
	sub.Close()
}

// TestFeedStarts: the read model's position, bounded by what the ring
// holds and by the committed end; the end when there is no position.
func TestFeedStarts(t *testing.T) {
	f := NewFanout(slog.New(slog.DiscardHandler), 10)
	ends := map[int32]int64{0: 100, 1: 5, 2: 0, 3: 7}
	at := func(context.Context) (map[int32]int64, error) {
		return map[int32]int64{0: 50, 1: 3, 3: 9}, nil
	}
	if got := fmt.Sprint(f.feedStarts(t.Context(), ends, at)); got != "map[0:90 1:3 2:0 3:7]" {
		t.Fatalf("starts %s", got)
	}
	if got := fmt.Sprint(f.feedStarts(t.Context(), ends, nil)); got != fmt.Sprint(ends) {
		t.Fatalf("without a position: %s", got)
	}
	down := func(context.Context) (map[int32]int64, error) { return nil, errors.New("down") }
	if got := fmt.Sprint(f.feedStarts(t.Context(), ends, down)); got != fmt.Sprint(ends) {
		t.Fatalf("position unreadable: %s", got)
	}
}
