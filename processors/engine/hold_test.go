package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/schemas"
)

// holdRecorder keeps what OnHold is told.
type holdRecorder struct {
	NopHooks
	mu      sync.Mutex
	held    [][]int32
	holding int
}

func (r *holdRecorder) OnHold(parts []int32, held bool, holding int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if held {
		r.held = append(r.held, slices.Clone(parts))
	}
	r.holding = holding
}

// seedDueTimers has a processor step a report of each key at the clock's
// time, so that each key's state has a timer an hour on, and stops it;
// then the clock moves two hours: every timer is due.
func seedDueTimers(t *testing.T, cfg kafka.Config, clock *fakeClock, keys ...string) {
	t.Helper()
	produceReportsOf(t, cfg, keys...)
	ctx, stop := context.WithCancel(t.Context())
	_, done := runProcessor(t, ctx, cfg, "a", clock)
	readEvents(t, cfg, len(keys))
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	clock.Add(2 * time.Hour)
}

// produceReportInTxn writes a report for key in a committed transaction,
// so that its partition of vm.power.v1 ends with a marker.
func produceReportInTxn(t *testing.T, cfg kafka.Config, key string, seq int64) {
	t.Helper()
	cl, err := kgo.NewClient(cfg.Opts(kgo.TransactionalID("hold-test-producer"))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	r, err := kafka.ToKafka(t.Context(), schemas.NewCodec(nil), schemas.Record{Topic: schemas.TopicVmPower, Key: key,
		Value: &schemas.PowerReport{VmID: key, PowerState: schemas.PowerOn, ReportSeq: seq}})
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(t.Context(), cfg.Out(r)).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := cl.EndTransaction(t.Context(), kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
}

// fetchNames says whether a Fetch request asks for topic (by name or id).
func fetchNames(req kmsg.Request, topic string, id [16]byte) bool {
	for _, ft := range req.(*kmsg.FetchRequest).Topics {
		if ft.Topic == topic || ft.TopicID == id {
			return true
		}
	}
	return false
}

// slowInputFetches makes the broker answer the fetches of vm.power.v1 no
// sooner than d from now, as when a dead member's transaction holds the
// group's offsets (the host storm's 5 s): the session cannot read its
// inputs for a while after the restore.
func slowInputFetches(t *testing.T, b *kafka.Broker, cfg kafka.Config, d time.Duration) {
	t.Helper()
	cl, err := kgo.NewClient(cfg.Opts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	topic := cfg.Topic(schemas.TopicVmPower)
	td, err := kadm.NewClient(cl).ListTopics(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	id := td[topic].ID
	until := time.Now().Add(d)
	b.Cluster().ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if wait := time.Until(until); wait > 0 && fetchNames(req, topic, id) {
			b.Cluster().SleepControl(func() { time.Sleep(wait) })
		}
		return nil, nil, false
	})
}

// alertsOf counts the Quiet alerts per key and the latest count of each
// key's reports.
func alertsOf(evs []schemas.Record) (alerts map[string]int, counts map[string]int32) {
	alerts, counts = map[string]int{}, map[string]int32{}
	for _, e := range evs {
		switch v := e.Value.(type) {
		case *schemas.AlertRaised:
			alerts[e.Key]++
		case *schemas.PowerStateObserved:
			counts[e.Key] = max(counts[e.Key], v.Count)
		}
	}
	return alerts, counts
}

// TestRestoredTimersWaitForTheirInputs: a state whose timer is due when
// its partition is assigned, and a report for it waiting in the input
// (written before the new owner came, in a transaction, so that the
// partition ends with a marker) that moves the timer an hour on: the
// report is stepped before the timer is looked at, so no alert. A key
// with a due timer and nothing waiting alerts once its partition's inputs
// are read to where they stood at the assignment (its position known
// from the group's committed offset alone when nothing is waiting).
func TestRestoredTimersWaitForTheirInputs(t *testing.T) {
	b, cfg := startBroker(t)
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	seedDueTimers(t, cfg, clock, "vm-0", "vm-1", "vm-2", "vm-3")
	produceReportInTxn(t, cfg, "vm-0", 1)
	slowInputFetches(t, b, cfg, 3*time.Second)

	rec := &holdRecorder{}
	p, err := New(Config{Name: "test", Inputs: []string{schemas.TopicVmPower}, Changelog: schemas.TopicVmState,
		Kafka: cfg, InstanceID: "b", Clock: clock, SessionTimeout: 2 * time.Second, Hooks: rec},
		Machine[*schemas.VmRecord](counter{alarmAfter: time.Hour}))
	if err != nil {
		t.Fatal(err)
	}
	go p.Run(t.Context())
	// The seeding's 4 counts, vm-0's second count, an alert each of the
	// other keys.
	alerts, counts := alertsOf(readEvents(t, cfg, 4+1+3))
	if alerts["vm-0"] != 0 || counts["vm-0"] != 2 {
		t.Fatalf("vm-0: %d alerts, count %d; want its waiting report stepped (count 2) and no alert", alerts["vm-0"], counts["vm-0"])
	}
	for _, k := range []string{"vm-1", "vm-2", "vm-3"} {
		if alerts[k] != 1 {
			t.Fatalf("%s: %d alerts, want 1 (all: %v)", k, alerts[k], alerts)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.held) == 0 || rec.holding != 0 {
		t.Fatalf("holds %v, %d still held; want the restored partitions held, then none", rec.held, rec.holding)
	}
}

// TestHoldEndsWithoutAListing: a broker that never lists the inputs' end
// offsets holds the timers for the stall bound, not for ever, and holds
// neither the poll loop nor the records: reports for other keys of the
// held partitions, written all along, neither fire the timers early nor
// keep them held past the bound.
func TestHoldEndsWithoutAListing(t *testing.T) {
	b, cfg := startBroker(t)
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	seedDueTimers(t, cfg, clock, "vm-0", "vm-1")
	input := cfg.Topic(schemas.TopicVmPower)
	b.Cluster().ControlKey(int16(kmsg.ListOffsets), func(req kmsg.Request) (kmsg.Response, error, bool) {
		b.Cluster().KeepControl()
		r := req.(*kmsg.ListOffsetsRequest)
		resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
		listsInput := false
		for _, rt := range r.Topics {
			st := kmsg.NewListOffsetsResponseTopic()
			st.Topic = rt.Topic
			listsInput = listsInput || rt.Topic == input
			for _, rp := range rt.Partitions {
				sp := kmsg.NewListOffsetsResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = kerr.UnknownServerError.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, listsInput
	})

	p, err := New(Config{Name: "test", Inputs: []string{schemas.TopicVmPower}, Changelog: schemas.TopicVmState,
		Kafka: cfg, InstanceID: "b", Clock: clock, SessionTimeout: 2 * time.Second, Hooks: NopHooks{}},
		Machine[*schemas.VmRecord](counter{alarmAfter: time.Hour}))
	if err != nil {
		t.Fatal(err)
	}
	// Well past the group's join (about 2 s here), so that timers fired
	// without a hold come before it.
	p.held.stallAfter = 4 * time.Second
	traffic, stop := context.WithCancel(t.Context())
	defer stop()
	go produceAlongside(traffic, t, cfg, "vm-0", "vm-1")
	go p.Run(t.Context())
	took, alerts := waitAlerts(t, cfg, "vm-0", "vm-1")
	stop()
	if alerts["vm-0"] != 1 || alerts["vm-1"] != 1 {
		t.Fatalf("alerts %v after %s, want one of each key once the hold gave up", alerts, took.Round(time.Millisecond))
	}
	if took < p.held.stallAfter {
		t.Fatalf("alerts after %s, before the hold's bound %s: the timers were not held", took, p.held.stallAfter)
	}
	if took > 3*p.held.stallAfter {
		t.Fatalf("alerts after %s: the reports kept the hold past its bound", took)
	}
}

// produceAlongside writes a report every 100 ms, until ctx ends, for keys
// other than keys on the partitions of vm.power.v1 that keys are on.
func produceAlongside(ctx context.Context, t *testing.T, cfg kafka.Config, keys ...string) {
	cl, err := kgo.NewClient(cfg.Opts()...)
	if err != nil {
		t.Error(err)
		return
	}
	defer cl.Close()
	var n int32
	for _, tp := range schemas.Topics {
		if tp.Name == schemas.TopicVmPower {
			n = tp.PartitionsOf()
		}
	}
	var others []string
	for _, k := range keys {
		want := schemas.PartitionOf([]byte(k), n)
		for i := 0; ; i++ {
			o := fmt.Sprintf("other-%d", i)
			if schemas.PartitionOf([]byte(o), n) == want {
				others = append(others, o)
				break
			}
		}
	}
	for seq := int64(0); ; seq++ {
		for _, o := range others {
			r, err := kafka.ToKafka(ctx, schemas.NewCodec(nil), schemas.Record{Topic: schemas.TopicVmPower, Key: o,
				Value: &schemas.PowerReport{VmID: o, PowerState: schemas.PowerOn, ReportSeq: seq}})
			if err != nil {
				t.Error(err)
				return
			}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				return // ctx ended
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitAlerts reads vm.events.v1 until every key has an alert, for 30 s at
// most, and says how long that took and the alerts per key.
func waitAlerts(t *testing.T, cfg kafka.Config, keys ...string) (time.Duration, map[string]int) {
	t.Helper()
	start := time.Now()
	cl, err := kgo.NewClient(cfg.Opts(kgo.ConsumeTopics(schemas.TopicVmEvents), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var evs []schemas.Record
	for ctx.Err() == nil {
		for _, r := range cl.PollFetches(ctx).Records() {
			rec, err := kafka.FromKafka(ctx, schemas.NewCodec(nil), r)
			if err != nil {
				t.Fatal(err)
			}
			evs = append(evs, rec)
		}
		alerts, _ := alertsOf(evs)
		if !slices.ContainsFunc(keys, func(k string) bool { return alerts[k] == 0 }) {
			return time.Since(start), alerts
		}
	}
	alerts, _ := alertsOf(evs)
	return time.Since(start), alerts
}

// TestHeldTimersSurviveLossAndReassignment: partitions lost while held
// are held no longer, and held again when assigned again; a held
// partition's timers neither fire nor are lost while the loop looks past
// them, and every one is due once the hold ends.
func TestHeldTimersSurviveLossAndReassignment(t *testing.T) {
	_, cfg := startBroker(t)
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	keys := []string{"vm-0", "vm-1", "vm-2", "vm-3", "vm-4"}
	seedDueTimers(t, cfg, clock, keys...)
	rec := &holdRecorder{}
	p, err := New(Config{Name: "test", Inputs: []string{schemas.TopicVmPower}, Changelog: schemas.TopicVmState,
		Kafka: cfg, InstanceID: "b", Clock: clock, Hooks: rec}, Machine[*schemas.VmRecord](counter{alarmAfter: time.Hour}))
	if err != nil {
		t.Fatal(err)
	}
	p.held.stallAfter = 500 * time.Millisecond
	cl, err := kgo.NewClient(cfg.Opts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	all := map[string][]int32{schemas.TopicVmPower: {}}
	for _, tp := range schemas.Topics {
		if tp.Name == schemas.TopicVmPower {
			for i := range tp.PartitionsOf() {
				all[schemas.TopicVmPower] = append(all[schemas.TopicVmPower], i)
			}
		}
	}
	n := len(all[schemas.TopicVmPower])
	holding := func() int { rec.mu.Lock(); defer rec.mu.Unlock(); return rec.holding }
	now := clock.Now().UnixNano()

	p.onAssigned(all)
	if err := p.applyAssignments(t.Context(), cl); err != nil {
		t.Fatal(err)
	}
	if holding() != n || len(p.held.m) != n {
		t.Fatalf("%d partitions held after the restore, want %d", len(p.held.m), n)
	}
	if _, ok := p.timers.peek(p.scheduledUnheld); ok {
		t.Fatal("a held timer is scheduled")
	}
	p.onDropped(all)
	if err := p.applyAssignments(t.Context(), cl); err != nil {
		t.Fatal(err)
	}
	if holding() != 0 || len(p.held.m) != 0 {
		t.Fatalf("%d partitions held after they were lost", len(p.held.m))
	}
	p.onAssigned(all)
	if err := p.applyAssignments(t.Context(), cl); err != nil {
		t.Fatal(err)
	}
	if len(p.held.m) != n {
		t.Fatalf("%d partitions held after they came back, want %d", len(p.held.m), n)
	}
	if due := p.timers.due(now, p.claimUnheld, nil); len(due) != 0 {
		t.Fatalf("%d held timers due", len(due))
	}
	// This client is no group member: it knows no committed offset, so
	// the partitions the seeding wrote to wait for the stall bound.
	deadline := time.Now().Add(10 * time.Second)
	for len(p.held.m) > 0 && time.Now().Before(deadline) {
		p.releaseHeld(cl)
		time.Sleep(20 * time.Millisecond)
	}
	if len(p.held.m) != 0 || holding() != 0 {
		t.Fatalf("%d partitions still held", len(p.held.m))
	}
	var got []string
	for _, e := range p.timers.due(now, p.claimUnheld, nil) {
		got = append(got, e.key)
	}
	slices.Sort(got)
	if !slices.Equal(got, keys) {
		t.Fatalf("timers due after the hold: %v, want %v", got, keys)
	}
}
