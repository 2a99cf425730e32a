package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/internal/testkit"
	"github.com/vmplane/vmplane/schemas"
)

func TestMain(m *testing.M) {
	testkit.BrokerMain()
	os.Exit(m.Run())
}

// A broker killed with a transaction open on the changelog aborts it when
// it reloads its log, and writes no marker: the last offsets below the
// last stable offset are never delivered to a read_committed reader. The
// restore must end anyway (it once waited for a record at end-1 forever).
func TestRestoreEndsPastAnAbortWithoutMarker(t *testing.T) {
	b := testkit.StartBrokerProcess(t, t.TempDir())
	cfg := b.Config()
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	produceReports(t, cfg, 10, 2)
	ctx1, stop1 := context.WithCancel(t.Context())
	_, done1 := runProcessor(t, ctx1, cfg, "a", clock)
	readEvents(t, cfg, 20)
	stop1()
	if err := <-done1; err != nil {
		t.Fatal(err)
	}

	// A producer dies with the broker in the middle of a transaction on
	// every changelog partition. Its values are not states: a restore that
	// loaded them would fail to decode.
	parts := int32(0)
	for _, tp := range schemas.Topics {
		if tp.Name == schemas.TopicVmState {
			parts = tp.PartitionsOf()
		}
	}
	z, err := kgo.NewClient(cfg.Opts(kgo.TransactionalID("zombie"), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := z.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for p := range parts {
		r := &kgo.Record{Topic: schemas.TopicVmState, Partition: p, Key: []byte("zombie"), Value: []byte("not a state")}
		if err := z.ProduceSync(t.Context(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	b.Kill()
	z.Close()
	b.Start()

	// The reproduction holds: the aborted records end the log, the last
	// stable offset is past them, and no marker follows.
	checkAbortedTail(t, cfg, parts)

	p2, done2 := runProcessor(t, t.Context(), cfg, "a", clock)
	deadline := time.After(30 * time.Second)
	for !p2.Ready() {
		select {
		case err := <-done2:
			t.Fatalf("processor stopped: %v", err)
		case <-deadline:
			t.Fatalf("not restored within 30 s: %v", p2.ReadyErr())
		case <-time.After(20 * time.Millisecond):
		}
	}
	if got := p2.Stats().Restored.Load(); got != 10 {
		t.Fatalf("restored %d keys, want 10", got)
	}
	// And it goes on exactly once from where it was.
	produceReports(t, cfg, 10, 1)
	checkCounts(t, readEvents(t, cfg, 30), 10, 3)
}

// checkAbortedTail checks that the last record of the changelog partitions
// holding the aborted transaction is one of its records (no marker), and
// that the last stable offset is the end of the log.
func checkAbortedTail(t *testing.T, cfg kafka.Config, parts int32) {
	t.Helper()
	cl, err := kgo.NewClient(cfg.Opts(kgo.FetchIsolationLevel(kgo.ReadUncommitted()), kgo.KeepControlRecords(),
		kgo.ConsumeTopics(schemas.TopicVmState), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	lso, err := kafka.ListOffsets(t.Context(), adm.ListCommittedOffsets, schemas.TopicVmState)
	if err != nil {
		t.Fatal(err)
	}
	hwm, err := kafka.ListOffsets(t.Context(), adm.ListEndOffsets, schemas.TopicVmState)
	if err != nil {
		t.Fatal(err)
	}
	last := map[int32]*kgo.Record{}
	left := int(parts)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for left > 0 && ctx.Err() == nil {
		for _, r := range cl.PollFetches(ctx).Records() {
			last[r.Partition] = r
			if e, _ := hwm.Lookup(r.Topic, r.Partition); r.Offset+1 == e.Offset {
				left--
			}
		}
	}
	for p := range parts {
		l, _ := lso.Lookup(schemas.TopicVmState, p)
		h, _ := hwm.Lookup(schemas.TopicVmState, p)
		r := last[p]
		if r == nil || l.Offset != h.Offset || r.Attrs.IsControl() || string(r.Key) != "zombie" {
			t.Fatalf("partition %d: last stable %d, end %d, last record %+v: not an aborted tail without a marker", p, l.Offset, h.Offset, r)
		}
	}
}

// A processor whose producer is fenced (here by a client that takes its
// transactional id; after a crash, by a broker that reloaded its log)
// starts a new session on its own and goes on exactly once.
func TestFencedProcessorStartsAgain(t *testing.T) {
	_, cfg := startBroker(t)
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	produceReports(t, cfg, 10, 2)
	p, done := runProcessor(t, t.Context(), cfg, "a", clock)
	readEvents(t, cfg, 20)

	z, err := kgo.NewClient(cfg.Opts(kgo.TransactionalID("vmplane-test-a"))...)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	if _, _, err := z.ProducerID(t.Context()); err != nil {
		t.Fatal(err)
	}
	aborts := p.Stats().Aborts.Load()
	produceReports(t, cfg, 10, 2)
	checkCounts(t, readEvents(t, cfg, 40), 10, 4)
	select {
	case err := <-done:
		t.Fatalf("processor stopped: %v", err)
	default:
	}
	if p.Stats().Aborts.Load() == aborts {
		t.Fatal("the fenced transaction did not fail: the test fenced nothing")
	}
}

// TestRestoreTakesStateWrittenBeforeTheRules: a changelog record holding a
// string the strings' rules refuse (state an older vmplane wrote: a NUL
// in a job's parameters) is restored, not refused; refusing it would fail
// every restore and stop the processor for good.
func TestRestoreTakesStateWrittenBeforeTheRules(t *testing.T) {
	_, cfg := startBroker(t)
	cl, err := kgo.NewClient(cfg.Opts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	old := &schemas.VmRecord{VmID: "vm-old", Epoch: 4, Job: &schemas.JobState{JobID: "j1", Params: map[string]string{"host_id": "h\x00x"}}}
	kr, err := kafka.ToKafka(t.Context(), schemas.NewCodec(nil), schemas.Record{Topic: schemas.TopicVmState, Key: "vm-old", Value: old})
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(t.Context(), kr).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if _, err := schemas.NewCodec(nil).Decode(t.Context(), kr.Value); err == nil {
		t.Fatal("the rules accept the old state: the test proves nothing")
	}
	p, _ := runProcessor(t, t.Context(), cfg, "a", &fakeClock{t: time.Unix(1_700_000_000, 0)})
	deadline := time.Now().Add(20 * time.Second)
	for !p.Ready() {
		if time.Now().After(deadline) {
			t.Fatalf("not ready: %v", p.ReadyErr())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := p.Stats().Restored.Load(); n != 1 {
		t.Fatalf("restored %d keys, want 1", n)
	}
}

// Partitions assigned while the loop polls quiet inputs are restored at
// once: the assignment ends the poll, which would otherwise wait out its
// TickInterval first (as long as a minute here).
func TestAssignmentEndsTheQuietPoll(t *testing.T) {
	_, cfg := startBroker(t)
	p, err := New(Config{Name: "quiet", Inputs: []string{schemas.TopicVmPower}, Changelog: schemas.TopicVmState,
		Kafka: cfg, InstanceID: "a", TickInterval: time.Minute, SessionTimeout: 2 * time.Second}, Machine[*schemas.VmRecord](counter{}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	var assigned time.Time
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if assigned.IsZero() && p.Assigned() > 0 {
			assigned = time.Now()
		}
		if !assigned.IsZero() && p.ReadyErr() == nil {
			if took := time.Since(assigned); took > 10*time.Second {
				t.Fatalf("ready %s after the assignment", took)
			}
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("not ready within 30 s: %v", p.ReadyErr())
}

// A restore decodes an answer's values in several goroutines and applies
// them in offset order: a key's last version wins, a tombstone after it
// removes it, however the records fall between the decoders.
func TestRestoreAppliesDecodedValuesInOrder(t *testing.T) {
	_, cfg := startBroker(t)
	cl, err := kgo.NewClient(cfg.Opts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const keys = 3000
	codec := schemas.NewCodec(nil)
	var recs []*kgo.Record
	state := func(i int, epoch int64) *kgo.Record {
		r, err := kafka.ToKafka(t.Context(), codec, schemas.Record{Topic: schemas.TopicVmState, Key: fmt.Sprintf("vm-%d", i),
			Value: &schemas.VmRecord{VmID: fmt.Sprintf("vm-%d", i), Epoch: epoch}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for i := range keys {
		recs = append(recs, state(i, int64(i)))
	}
	for i := 0; i < keys; i += 3 {
		recs = append(recs, state(i, int64(i)+keys))
	}
	for i := 0; i < keys; i += 5 {
		recs = append(recs, &kgo.Record{Topic: schemas.TopicVmState, Key: []byte(fmt.Sprintf("vm-%d", i))})
	}
	if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	ctx, stop := context.WithCancel(t.Context())
	p, done := runProcessor(t, ctx, cfg, "a", &fakeClock{t: time.Unix(1_700_000_000, 0)})
	deadline := time.Now().Add(30 * time.Second)
	for p.ReadyErr() != nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, m := range p.st.parts {
		for k, sl := range m {
			got[k] = sl.s.Epoch
		}
	}
	for i := range keys {
		k := fmt.Sprintf("vm-%d", i)
		want, kept := int64(i), i%5 != 0
		if i%3 == 0 {
			want += keys
		}
		if e, ok := got[k]; ok != kept || (kept && e != want) {
			t.Fatalf("%s restored %v with epoch %d, want %v with %d", k, ok, e, kept, want)
		}
	}
	if len(got) != keys-keys/5 {
		t.Fatalf("restored %d keys, want %d", len(got), keys-keys/5)
	}
}

// TestRestoreOverManyAnswers: a partition of several MiB comes in many
// answers, read, decoded and stored in stages (prefetch); the latest
// value of each key wins across them, and an undecodable record in a
// later answer ends the restore with an error that says where it is,
// while the reader may still be fetching the answers after it.
func TestRestoreOverManyAnswers(t *testing.T) {
	_, cfg := startBroker(t)
	cl, err := kgo.NewClient(cfg.Opts(kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	codec := schemas.NewCodec(nil)
	filler := strings.Repeat("x", 1000)
	state := func(i int, epoch int64) *kgo.Record {
		r, err := kafka.ToKafka(t.Context(), codec, schemas.Record{Topic: schemas.TopicVmState, Key: fmt.Sprintf("vm-%d", i),
			Value: &schemas.VmRecord{VmID: fmt.Sprintf("vm-%d", i), Name: filler, Epoch: epoch}})
		if err != nil {
			t.Fatal(err)
		}
		r.Partition = 0
		return r
	}
	const keys = 4000 // about 4 MiB: four answers at least
	var recs []*kgo.Record
	for i := range keys {
		recs = append(recs, state(i, int64(i)))
	}
	for i := 0; i < keys; i += 7 {
		recs = append(recs, state(i, int64(i)+keys))
	}
	if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	p := newProcessor(t, cfg, "a", clock)
	n, err := p.restore(t.Context(), cl, []int32{0})
	if err != nil {
		t.Fatal(err)
	}
	if n != keys {
		t.Fatalf("restored %d keys, want %d", n, keys)
	}
	for i := range keys {
		want := int64(i)
		if i%7 == 0 {
			want += keys
		}
		if sl, ok := p.st.get(0, fmt.Sprintf("vm-%d", i)); !ok || sl.s.Epoch != want {
			t.Fatalf("vm-%d restored %v with epoch %d, want %d", i, ok, sl.s.Epoch, want)
		}
	}

	// A record that does not decode, after another 3,000 that do: the
	// reader is ahead of the decoder when the decoder fails.
	bad := &kgo.Record{Topic: schemas.TopicVmState, Partition: 0, Key: []byte("vm-1"), Value: []byte("garbage bytes")}
	recs = []*kgo.Record{bad}
	for i := range 3000 {
		recs = append(recs, state(i, int64(i)+2*keys))
	}
	if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err = newProcessor(t, cfg, "a", clock).restore(ctx, cl, []int32{0})
	var de *schemas.DecodeError
	if !errors.As(err, &de) || de.Partition != 0 || de.Offset != bad.Offset {
		t.Fatalf("restore ended with %v, want the decode error of partition 0 at offset %d", err, bad.Offset)
	}
	if ctx.Err() != nil {
		t.Fatal("the restore waited for its deadline")
	}
}
