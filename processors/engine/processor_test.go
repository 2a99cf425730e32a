package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/internal/testkit"
	"github.com/vmplane/vmplane/schemas"
)

// counter is a toy machine: it counts the reports of each key in Epoch,
// emits the count, and raises an alert AlarmAfter past the last report
// (the time of the alert kept in PowerStateUpdateTime).
type counter struct{ alarmAfter time.Duration }

func (c counter) Step(s *schemas.VmRecord, in schemas.Record, now time.Time) (*schemas.VmRecord, []schemas.Record) {
	if s == nil {
		s = &schemas.VmRecord{VmID: in.Key}
	}
	s.Epoch++
	s.UpdatedAt = now.UnixMilli()
	s.PowerStateUpdateTime = now.Add(c.alarmAfter).UnixMilli()
	return s, []schemas.Record{{Topic: schemas.TopicVmEvents, Key: in.Key,
		Value: &schemas.PowerStateObserved{VmID: in.Key, Count: int32(s.Epoch), At: now.UnixMilli()}}}
}

func (c counter) Tick(s *schemas.VmRecord, key string, now time.Time) (*schemas.VmRecord, []schemas.Record) {
	s.PowerStateUpdateTime = 0
	return s, []schemas.Record{{Topic: schemas.TopicVmEvents, Key: key, Value: &schemas.AlertRaised{VmID: key, Kind: "Quiet", At: now.UnixMilli()}}}
}

func (c counter) Wake(s *schemas.VmRecord) time.Time {
	if s.PowerStateUpdateTime == 0 {
		return time.Time{}
	}
	return time.UnixMilli(s.PowerStateUpdateTime)
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeClock) Now() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.t }
func (f *fakeClock) Add(d time.Duration) {
	f.mu.Lock()
	f.t = f.t.Add(d)
	f.mu.Unlock()
}

func startBroker(t *testing.T) (*kafka.Broker, kafka.Config) {
	cfg, b := testkit.Kafka(t)
	return b, cfg
}

func produceReports(t *testing.T, cfg kafka.Config, keys, each int) {
	t.Helper()
	var keyList []string
	for i := 0; i < each; i++ {
		for k := 0; k < keys; k++ {
			keyList = append(keyList, fmt.Sprintf("vm-%d", k))
		}
	}
	produceReportsOf(t, cfg, keyList...)
}

// produceReportsOf writes a PowerReport for each key, in one produce: a
// key's n-th report has ReportSeq n-1.
func produceReportsOf(t *testing.T, cfg kafka.Config, keys ...string) {
	t.Helper()
	var rs []*schemas.PowerReport
	seq := map[string]int64{}
	for _, key := range keys {
		rs = append(rs, &schemas.PowerReport{VmID: key, PowerState: schemas.PowerOn, ReportSeq: seq[key]})
		seq[key]++
	}
	produceValues(t, cfg, keys, rs)
}

// produceGarbage writes a record for vm-0 that does not decode.
func produceGarbage(t *testing.T, cfg kafka.Config) {
	t.Helper()
	cl, err := kgo.NewClient(cfg.Opts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: schemas.TopicVmPower, Key: []byte("vm-0"), Value: []byte("garbage bytes")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// readEvents reads vm.events.v1 (read_committed) until want records arrived.
func readEvents(t *testing.T, cfg kafka.Config, want int) []schemas.Record {
	t.Helper()
	cl, err := kgo.NewClient(cfg.Opts(kgo.ConsumeTopics(schemas.TopicVmEvents), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []schemas.Record
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for len(out) < want && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		for _, r := range fs.Records() {
			rec, err := kafka.FromKafka(ctx, schemas.NewCodec(nil), r)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, rec)
		}
	}
	// Anything beyond want would be a duplicate: give it a moment to show.
	ctx2, cancel2 := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel2()
	for _, r := range cl.PollFetches(ctx2).Records() {
		rec, _ := kafka.FromKafka(ctx, schemas.NewCodec(nil), r)
		out = append(out, rec)
	}
	return out
}

// pollCommitted returns the committed records of topic up to the last
// stable offsets listed when it is called, failing the test if they are not
// all read within the bound. One poll is not enough: a fetch may answer
// for some partitions only.
func pollCommitted(t *testing.T, cfg kafka.Config, topic string, within time.Duration) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), within)
	defer cancel()
	cl, err := kgo.NewClient(cfg.Opts(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	listed, err := kafka.ListOffsets(ctx, kadm.NewClient(cl).ListCommittedOffsets, topic)
	if err != nil {
		t.Fatal(err)
	}
	left := map[int32]int64{}
	listed.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			left[o.Partition] = o.Offset
		}
	})
	var out []*kgo.Record
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s: partitions %v not read to their last stable offsets within %v", topic, left, within)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if end, ok := left[r.Partition]; ok && r.Offset+1 >= end {
				delete(left, r.Partition)
			}
			if !r.Attrs.IsControl() {
				out = append(out, r)
			}
		})
	}
	return out
}

// checkCounts asserts each key's counts are exactly 1..each, once each.
func checkCounts(t *testing.T, evs []schemas.Record, keys, each int) {
	t.Helper()
	seen := map[string]map[int32]int{}
	for _, e := range evs {
		o, ok := e.Value.(*schemas.PowerStateObserved)
		if !ok {
			continue
		}
		if seen[e.Key] == nil {
			seen[e.Key] = map[int32]int{}
		}
		seen[e.Key][o.Count]++
	}
	if len(seen) != keys {
		t.Fatalf("%d keys seen, want %d", len(seen), keys)
	}
	for k, counts := range seen {
		for i := 1; i <= each; i++ {
			if counts[int32(i)] != 1 {
				t.Fatalf("key %s count %d seen %d times (all: %v)", k, i, counts[int32(i)], counts)
			}
		}
		if len(counts) != each {
			t.Fatalf("key %s: counts %v", k, counts)
		}
	}
}

// newProcessor is the tests' VM-state processor, not started.
func newProcessor(tb testing.TB, cfg kafka.Config, id string, clock Clock) *Processor[*schemas.VmRecord] {
	tb.Helper()
	p, err := New(Config{Name: "test", Inputs: []string{schemas.TopicVmPower}, Changelog: schemas.TopicVmState,
		Kafka: cfg, InstanceID: id, Clock: clock, SessionTimeout: 2 * time.Second, MaxPollRecords: 50}, Machine[*schemas.VmRecord](counter{alarmAfter: time.Hour}))
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func runProcessor(t *testing.T, ctx context.Context, cfg kafka.Config, id string, clock Clock) (*Processor[*schemas.VmRecord], chan error) {
	p := newProcessor(t, cfg, id, clock)
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	return p, done
}

func TestExactlyOnceAcrossRestart(t *testing.T) {
	_, cfg := startBroker(t)
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	produceReports(t, cfg, 20, 5)

	ctx1, stop1 := context.WithCancel(t.Context())
	p1, done1 := runProcessor(t, ctx1, cfg, "a", clock)
	readEvents(t, cfg, 100)
	stop1()
	if err := <-done1; err != nil {
		t.Fatal(err)
	}
	if p1.Stats().Commits.Load() == 0 {
		t.Fatal("no commit")
	}

	produceReports(t, cfg, 20, 5)
	p2, done2 := runProcessor(t, t.Context(), cfg, "b", clock)
	evs := readEvents(t, cfg, 200)
	checkCounts(t, evs, 20, 10)
	if p2.Stats().Restored.Load() != 20 {
		t.Fatalf("restored %d keys, want 20", p2.Stats().Restored.Load())
	}
	_ = done2
}

func TestAbortedTransactionIsRedone(t *testing.T) {
	b, cfg := startBroker(t)
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	// Fail the first transactional offset commit with an abortable error
	// (a rebalance in progress): the session aborts the batch, which must be
	// redone from restored state without duplicates or gaps.
	var once sync.Once
	b.Cluster().ControlKey(int16(kmsg.TxnOffsetCommit), func(req kmsg.Request) (kmsg.Response, error, bool) {
		b.Cluster().KeepControl()
		var resp kmsg.Response
		handled := false
		once.Do(func() {
			r := req.(*kmsg.TxnOffsetCommitRequest)
			rr := r.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
			for _, t := range r.Topics {
				rt := kmsg.NewTxnOffsetCommitResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
					rp.Partition = p.Partition
					rp.ErrorCode = kerr.RebalanceInProgress.Code
					rt.Partitions = append(rt.Partitions, rp)
				}
				rr.Topics = append(rr.Topics, rt)
			}
			resp, handled = rr, true
		})
		return resp, nil, handled
	})
	produceReports(t, cfg, 10, 3)
	p, done := runProcessor(t, t.Context(), cfg, "a", clock)
	deadline := time.After(30 * time.Second)
	for p.Stats().Commits.Load() == 0 {
		select {
		case err := <-done:
			t.Fatalf("processor stopped: %v", err)
		case <-deadline:
			t.Fatal("no commit")
		case <-time.After(50 * time.Millisecond):
		}
	}
	evs := readEvents(t, cfg, 30)
	checkCounts(t, evs, 10, 3)
	if p.Stats().Aborts.Load() == 0 {
		t.Fatal("the fault did not abort a transaction")
	}
}

func TestGarbageGoesToDLQ(t *testing.T) {
	_, cfg := startBroker(t)
	produceGarbage(t, cfg)
	produceReports(t, cfg, 1, 2)
	runProcessor(t, t.Context(), cfg, "a", &fakeClock{t: time.Unix(1_700_000_000, 0)})
	checkCounts(t, readEvents(t, cfg, 2), 1, 2)

	rs := pollCommitted(t, cfg, schemas.TopicDLQ, 10*time.Second)
	if len(rs) != 1 || string(rs[0].Value) != "garbage bytes" {
		t.Fatalf("dlq: %d records", len(rs))
	}
	h := map[string]string{}
	for _, x := range rs[0].Headers {
		h[x.Key] = string(x.Value)
	}
	if h["dlq.topic"] != schemas.TopicVmPower || h["dlq.error"] == "" {
		t.Fatalf("dlq headers %v", h)
	}
}

func TestTimersFireFromInjectedClock(t *testing.T) {
	_, cfg := startBroker(t)
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	produceReports(t, cfg, 3, 1)
	runProcessor(t, t.Context(), cfg, "a", clock)
	readEvents(t, cfg, 3)
	clock.Add(2 * time.Hour)
	evs := readEvents(t, cfg, 6)
	alerts := 0
	for _, e := range evs {
		if _, ok := e.Value.(*schemas.AlertRaised); ok {
			alerts++
		}
	}
	if alerts != 3 {
		t.Fatalf("%d alerts, want 3", alerts)
	}
}

// relay is a stateless machine: it forwards and keeps nothing.
type relay struct{}

func (relay) Step(_ *schemas.VmRecord, in schemas.Record, now time.Time) (*schemas.VmRecord, []schemas.Record) {
	return nil, []schemas.Record{{Topic: schemas.TopicVmEvents, Key: in.Key, Value: &schemas.PowerStateObserved{VmID: in.Key, Count: 1, At: now.UnixMilli()}}}
}
func (relay) Tick(s *schemas.VmRecord, _ string, _ time.Time) (*schemas.VmRecord, []schemas.Record) {
	return s, nil
}
func (relay) Wake(*schemas.VmRecord) time.Time { return time.Time{} }

func TestStatelessMachineWritesNoChangelog(t *testing.T) {
	_, cfg := startBroker(t)
	produceReports(t, cfg, 5, 2)
	p, err := New(Config{Name: "relay", Inputs: []string{schemas.TopicVmPower}, Changelog: schemas.TopicVmState,
		Kafka: cfg, InstanceID: "a", SessionTimeout: 2 * time.Second}, Machine[*schemas.VmRecord](relay{}))
	if err != nil {
		t.Fatal(err)
	}
	go p.Run(t.Context())
	if got := len(readEvents(t, cfg, 10)); got != 10 {
		t.Fatalf("%d outputs, want 10", got)
	}
	cl, err := kgo.NewClient(cfg.Opts(kgo.ConsumeTopics(schemas.TopicVmState), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	if n := len(cl.PollFetches(ctx).Records()); n != 0 {
		t.Fatalf("%d changelog records for a stateless machine, want 0", n)
	}
}

// oversize is a counter whose output for the key "vm-big" is larger than
// the broker takes, so that producing it fails.
type oversize struct{ counter }

func (o oversize) Step(s *schemas.VmRecord, in schemas.Record, now time.Time) (*schemas.VmRecord, []schemas.Record) {
	s, outs := o.counter.Step(s, in, now)
	if in.Key == "vm-big" {
		outs[0].Value.(*schemas.PowerStateObserved).VmID = strings.Repeat("x", 2<<20)
	}
	return s, outs
}

// A batch one of whose records fails to produce commits none of them: the
// other records' outputs and states would else be in the log without the
// failed one, and the offsets past it.
func TestFailedRecordAbortsTheBatch(t *testing.T) {
	_, cfg := startBroker(t)
	// Written before the processor starts: its first poll takes them all,
	// as one batch.
	produceReportsOf(t, cfg, "vm-0", "vm-1", "vm-big", "vm-2")
	p, err := New(Config{Name: "oversize", Inputs: []string{schemas.TopicVmPower}, Changelog: schemas.TopicVmState,
		Kafka: cfg, InstanceID: "a", SessionTimeout: 2 * time.Second}, Machine[*schemas.VmRecord](oversize{}))
	if err != nil {
		t.Fatal(err)
	}
	go p.Run(t.Context())
	deadline := time.After(30 * time.Second)
	for p.Stats().Aborts.Load() == 0 {
		select {
		case <-deadline:
			t.Fatal("no transaction aborted")
		case <-time.After(20 * time.Millisecond):
		}
	}
	if n := p.Stats().Commits.Load(); n != 0 {
		t.Fatalf("%d transactions committed", n)
	}
	if n := len(pollCommitted(t, cfg, schemas.TopicVmEvents, 10*time.Second)); n != 0 {
		t.Fatalf("%d outputs of a batch with a failed record committed, want 0", n)
	}
}

// TestRedriveReachesOnlyWhoRefusedIt: a redriven record is applied by a
// processor that dead-lettered its original and passed by one that
// applied it (kafka.RedriveSkips); the offset moves on either way.
func TestRedriveReachesOnlyWhoRefusedIt(t *testing.T) {
	_, cfg := startBroker(t)
	cl, err := kgo.NewClient(cfg.Opts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var rs []*kgo.Record
	for i, forWhom := range []string{"", "vmplane-test", "vmplane-projector-postgres,vmplane-other"} {
		r, err := kafka.ToKafka(t.Context(), schemas.NewCodec(nil), schemas.Record{Topic: schemas.TopicVmPower, Key: "vm-0",
			Value: &schemas.PowerReport{VmID: "vm-0", PowerState: schemas.PowerOn, ReportSeq: int64(i)}})
		if err != nil {
			t.Fatal(err)
		}
		if forWhom != "" {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: kafka.DLQRedrivenFrom, Value: []byte(fmt.Sprintf("0@%d", i))},
				kgo.RecordHeader{Key: kafka.DLQRedriveFor, Value: []byte(forWhom)})
		}
		rs = append(rs, r)
	}
	if err := cl.ProduceSync(t.Context(), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	p, _ := runProcessor(t, t.Context(), cfg, "a", &fakeClock{t: time.Unix(1_700_000_000, 0)})
	checkCounts(t, readEvents(t, cfg, 2), 1, 2)
	if n := p.Stats().Decoded.Load(); n != 2 {
		t.Fatalf("stepped %d records, want the original and the redrive for this processor", n)
	}
}

// reusing is a counter that is an engine.Reuser: StepReusing counts in the
// given record, Step in a copy, and each says how often it was called.
type reusing struct {
	counter
	pure, reused *atomic.Int64
}

func (r reusing) Step(s *schemas.VmRecord, in schemas.Record, now time.Time) (*schemas.VmRecord, []schemas.Record) {
	r.pure.Add(1)
	if s != nil {
		c := *s
		s = &c
	}
	return r.counter.Step(s, in, now)
}

func (r reusing) StepReusing(s *schemas.VmRecord, in schemas.Record, now time.Time) (*schemas.VmRecord, []schemas.Record) {
	r.reused.Add(1)
	return r.counter.Step(s, in, now)
}

// TestReuserIsSteppedInPlace: the runtime steps a Reuser with StepReusing
// only, and the states it changed in place are what the changelog holds
// for the next owner.
func TestReuserIsSteppedInPlace(t *testing.T) {
	_, cfg := startBroker(t)
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	run := func(ctx context.Context, id string) (reusing, *Processor[*schemas.VmRecord], chan error) {
		m := reusing{counter: counter{alarmAfter: time.Hour}, pure: new(atomic.Int64), reused: new(atomic.Int64)}
		p, err := New(Config{Name: "test", Inputs: []string{schemas.TopicVmPower}, Changelog: schemas.TopicVmState,
			Kafka: cfg, InstanceID: id, Clock: clock, SessionTimeout: 2 * time.Second, MaxPollRecords: 50}, Machine[*schemas.VmRecord](m))
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		return m, p, done
	}
	produceReports(t, cfg, 10, 4)
	ctx1, stop1 := context.WithCancel(t.Context())
	m1, _, done1 := run(ctx1, "a")
	readEvents(t, cfg, 40)
	stop1()
	if err := <-done1; err != nil {
		t.Fatal(err)
	}
	if m1.pure.Load() != 0 || m1.reused.Load() != 40 {
		t.Fatalf("first owner: Step %d times, StepReusing %d times; want 0 and 40", m1.pure.Load(), m1.reused.Load())
	}
	produceReports(t, cfg, 10, 2)
	m2, p2, _ := run(t.Context(), "b")
	checkCounts(t, readEvents(t, cfg, 60), 10, 6)
	if p2.Stats().Restored.Load() != 10 || m2.pure.Load() != 0 {
		t.Fatalf("second owner: restored %d keys, Step called %d times", p2.Stats().Restored.Load(), m2.pure.Load())
	}
}
