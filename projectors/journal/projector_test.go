package journal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/chserver"
	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/internal/testkit"
	"github.com/vmplane/vmplane/schemas"
)

// testClickHouse returns a connection to the test ClickHouse, its address
// and a fresh database (testkit drops it at the end of the test).
func testClickHouse(t *testing.T) (driver.Conn, string, string) {
	t.Helper()
	addr, db := testkit.ClickHouse(t)
	conn, err := Open(addr, chserver.Access{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn, addr, db
}

func broker(t *testing.T) (kafka.Config, *kgo.Client) {
	t.Helper()
	cfg, _ := testkit.Kafka(t)
	cl, err := kgo.NewClient(cfg.Opts()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cfg, cl
}

// jobEvents is the history of one Start job: accepted, three steps,
// succeeded, and the VM's state change. It is stepsPerJob journal rows.
func jobEvents(vm, job string, at int64) []any {
	ref := func(d int64) schemas.JobRef {
		return schemas.JobRef{JobID: job, VmID: vm, Account: "acme", JobType: "Start", Origin: schemas.OriginAPI, At: at + d}
	}
	return []any{
		&schemas.JobAccepted{JobRef: ref(0)},
		&schemas.JobStepped{JobRef: ref(1), Seq: 1, TaskState: "Scheduling", Step: "place", Text: "placing", Obj: `{}`},
		&schemas.JobStepped{JobRef: ref(2), Seq: 2, TaskState: "PoweringOn", Step: "start", Text: "starting on h1", Obj: `{"host_id":"h1"}`},
		&schemas.JobStepped{JobRef: ref(3), Seq: 3, TaskState: "PoweringOn", Step: "answer", Text: "h1 answered", Obj: `{}`},
		&schemas.JobSucceeded{JobRef: ref(4), VmState: "Running", StartedAt: at},
		&schemas.VmStateChanged{VmID: vm, VmState: "Running", PowerState: "PowerOn", HostID: "h1", JobID: job, UpdatedAt: at + 4},
	}
}

const stepsPerJob = 5

func produce(t *testing.T, cl *kgo.Client, key string, values ...any) {
	t.Helper()
	codec := schemas.NewCodec(nil)
	for _, v := range values {
		kr, err := kafka.ToKafka(t.Context(), codec, schemas.Record{Topic: schemas.TopicVmEvents, Key: key, Value: v})
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(t.Context(), kr).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// run starts p and returns a function that stops it and returns Run's error.
func run(t *testing.T, p *Projector) (stop func() error, done <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	ch := make(chan error, 1)
	go func() { ch <- p.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-ch:
			case <-time.After(30 * time.Second):
				err = fmt.Errorf("Run did not return")
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop, ch
}

func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func count(t *testing.T, conn driver.Conn, q string, args ...any) uint64 {
	t.Helper()
	var n uint64
	if err := conn.QueryRow(t.Context(), q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

func committed(t *testing.T, cl *kgo.Client, group string) int64 {
	t.Helper()
	offs, err := kadm.NewClient(cl).FetchOffsets(t.Context(), group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
	return sum
}

func newProjector(t *testing.T, kcfg kafka.Config, addr, db string) *Projector {
	t.Helper()
	p, err := New(Config{Kafka: kcfg, Addr: addr, Database: db, Group: "journal-test", FlushInterval: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	p.wait = backoff{first: 20 * time.Millisecond, max: 200 * time.Millisecond}
	return p
}

// TestReplayedBatchReadsOnce stops the projector after its first insert and
// before the commit, then runs another: the batch is inserted twice and the
// journal still shows every line once.
func TestReplayedBatchReadsOnce(t *testing.T) {
	conn, addr, db := testClickHouse(t)
	kcfg, cl := broker(t)
	jobs := []string{"job-a", "job-b", "job-c"}
	for i, job := range jobs {
		produce(t, cl, fmt.Sprintf("vm-%d", i), jobEvents(fmt.Sprintf("vm-%d", i), job, 1_760_000_000_000+int64(i)*1000)...)
	}
	records := len(jobs) * len(jobEvents("", "", 0))

	first := newProjector(t, kcfg, addr, db)
	var firstRows atomic.Int64
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	first.afterInsert = func() {
		firstRows.Store(1)
		cancel() // stop between the insert and the commit
	}
	firstDone := make(chan error, 1)
	go func() { firstDone <- first.Run(ctx) }()
	select {
	case err := <-firstDone:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("first projector never inserted")
	}
	if firstRows.Load() == 0 {
		t.Fatal("first projector stopped without inserting")
	}
	if n := committed(t, cl, "journal-test"); n != 0 {
		t.Fatalf("first projector committed %d offsets though it stopped before its commit", n)
	}
	inserted := count(t, conn, fmt.Sprintf("SELECT count() FROM %s.vm_events", quoteIdent(db)))
	if inserted == 0 {
		t.Fatal("first projector inserted nothing")
	}

	second := newProjector(t, kcfg, addr, db)
	var secondEvents atomic.Int64
	second.insert = func(ctx context.Context, r *rows) error {
		err := insert(ctx, conn, db, r)
		if err == nil {
			secondEvents.Add(int64(len(r.events)))
		}
		return err
	}
	stopSecond, _ := run(t, second)
	eventually(t, 20*time.Second, "second projector commits every record", func() bool {
		return committed(t, cl, "journal-test") == int64(records)
	})
	if err := stopSecond(); err != nil {
		t.Fatal(err)
	}
	// Nothing was committed before, so the second run read everything again,
	// including what the first had inserted.
	if got := secondEvents.Load(); got != int64(records) {
		t.Fatalf("second projector inserted %d event rows, want all %d", got, records)
	}
	if raw := count(t, conn, fmt.Sprintf("SELECT count() FROM %s.vm_events", quoteIdent(db))); raw < uint64(records) {
		t.Fatalf("vm_events holds %d rows, want at least %d", raw, records)
	}
	if n := count(t, conn, fmt.Sprintf("SELECT count() FROM %s.vm_events FINAL", quoteIdent(db))); n != uint64(records) {
		t.Fatalf("vm_events FINAL = %d rows, want %d", n, records)
	}

	r := NewReader(conn, db)
	for i, job := range jobs {
		entries, err := r.JobJournal(t.Context(), job)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != stepsPerJob {
			t.Fatalf("journal of %s has %d lines, want %d: %+v", job, len(entries), stepsPerJob, entries)
		}
		kinds := make([]string, len(entries))
		for k, e := range entries {
			kinds[k] = fmt.Sprintf("%s/%d", e.Kind, e.Seq)
			if e.VmID != fmt.Sprintf("vm-%d", i) || e.JobType != "Start" || e.Topic != schemas.TopicVmEvents {
				t.Errorf("%s line %d: %+v", job, k, e)
			}
		}
		if got, want := strings.Join(kinds, " "), "accepted/0 stepped/1 stepped/2 stepped/3 succeeded/1000000"; got != want {
			t.Errorf("journal of %s = %s, want %s", job, got, want)
		}
		if end := entries[len(entries)-1]; end.VmState != "Running" || !end.At.Equal(time.UnixMilli(1_760_000_000_000+int64(i)*1000+4)) {
			t.Errorf("end line of %s: %+v", job, end)
		}
	}
	var payload, state string
	if err := conn.QueryRow(t.Context(), fmt.Sprintf("SELECT payload, vm_state FROM %s.vm_events FINAL WHERE vm_id = ? AND \"type\" = ?", quoteIdent(db)),
		"vm-1", "VmStateChanged").Scan(&payload, &state); err != nil {
		t.Fatal(err)
	}
	if state != "Running" || !strings.Contains(payload, `"HostID":"h1"`) {
		t.Errorf("VmStateChanged row: vm_state %q payload %s", state, payload)
	}
}

// TestGarbageGoesToDLQ dead-letters an undecodable record and projects the
// records around it.
func TestGarbageGoesToDLQ(t *testing.T) {
	conn, addr, db := testClickHouse(t)
	kcfg, cl := broker(t)
	garbage := &kgo.Record{Topic: schemas.TopicVmEvents, Key: []byte("vm-9"), Value: []byte("not avro at all")}
	if err := cl.ProduceSync(t.Context(), garbage).FirstErr(); err != nil {
		t.Fatal(err)
	}
	produce(t, cl, "vm-9", jobEvents("vm-9", "job-z", 1_760_000_000_000)...)

	p := newProjector(t, kcfg, addr, db)
	stop, _ := run(t, p)
	r := NewReader(conn, db)
	eventually(t, 20*time.Second, "job-z projected", func() bool {
		e, err := r.JobJournal(t.Context(), "job-z")
		return err == nil && len(e) == stepsPerJob
	})
	eventually(t, 20*time.Second, "garbage offset committed", func() bool {
		return committed(t, cl, "journal-test") == 1+int64(len(jobEvents("", "", 0)))
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	dl, err := kgo.NewClient(kcfg.Opts(kgo.ConsumeTopics(schemas.TopicDLQ), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer dl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	fs := dl.PollFetches(ctx)
	recs := fs.Records()
	if len(recs) != 1 {
		t.Fatalf("dlq.v1 holds %d records, want 1 (fetch errors %v)", len(recs), fs.Errors())
	}
	d := recs[0]
	headers := map[string]string{}
	for _, h := range d.Headers {
		headers[h.Key] = string(h.Value)
	}
	if string(d.Value) != "not avro at all" || string(d.Key) != "vm-9" || headers["dlq.topic"] != schemas.TopicVmEvents ||
		headers["dlq.consumer"] != "journal-test" || headers["dlq.error"] == "" {
		t.Fatalf("dead letter: key %q value %q headers %v", d.Key, d.Value, headers)
	}
}

// TestInsertRetriedBeforeCommit fails every insert for a while: the
// projector keeps retrying, commits nothing meanwhile, and commits once the
// rows are in.
func TestInsertRetriedBeforeCommit(t *testing.T) {
	conn, addr, db := testClickHouse(t)
	kcfg, cl := broker(t)
	produce(t, cl, "vm-7", jobEvents("vm-7", "job-retry", 1_760_000_000_000)...)

	p := newProjector(t, kcfg, addr, db)
	var down atomic.Bool
	var failures atomic.Int64
	down.Store(true)
	p.insert = func(ctx context.Context, r *rows) error {
		if down.Load() {
			failures.Add(1)
			return errors.New("connection refused (simulated outage)")
		}
		return insert(ctx, conn, db, r)
	}
	stop, _ := run(t, p)
	eventually(t, 10*time.Second, "several failed inserts", func() bool { return failures.Load() >= 3 })
	if n := committed(t, cl, "journal-test"); n != 0 {
		t.Fatalf("committed %d offsets while inserts failed", n)
	}
	down.Store(false)
	eventually(t, 20*time.Second, "rows in and offsets committed", func() bool {
		e, err := NewReader(conn, db).JobJournal(t.Context(), "job-retry")
		return err == nil && len(e) == stepsPerJob && committed(t, cl, "journal-test") == int64(len(jobEvents("", "", 0)))
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// TestCatchUpEndsWithAnInsert holds a batch smaller than BatchRows for its
// flush interval, but flushes the last batch of a catch-up, the one after a
// full batch, as soon as a poll finds nothing more.
func TestCatchUpEndsWithAnInsert(t *testing.T) {
	_, addr, db := testClickHouse(t)
	kcfg, cl := broker(t)
	p := newProjector(t, kcfg, addr, db)
	p.cfg.FlushInterval, p.cfg.BatchRows = time.Minute, 20
	produce(t, cl, "vm-1", jobEvents("vm-1", "job-1", 1_760_000_000_000)...)
	run(t, p)
	time.Sleep(time.Second)
	if n := committed(t, cl, "journal-test"); n != 0 {
		t.Fatalf("a batch of %d rows, below BatchRows and its interval, committed %d offsets", stepsPerJob+1, n)
	}
	var want int64
	for i := range 5 {
		vm, job := fmt.Sprintf("vm-%d", i+2), fmt.Sprintf("job-%d", i+2)
		evs := jobEvents(vm, job, 1_760_000_000_000)
		produce(t, cl, vm, evs...)
		want += int64(len(evs))
	}
	want += int64(len(jobEvents("", "", 0)))
	eventually(t, 10*time.Second, "every offset committed well before the interval", func() bool {
		return committed(t, cl, "journal-test") == want
	})
}
