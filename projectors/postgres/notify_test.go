package postgres

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

func TestQueueJobNotifications(t *testing.T) {
	var stepped []string
	for i := range 500 {
		stepped = append(stepped, strings.Repeat("x", 30)+string(rune('a'+i%26))+strings.Repeat("y", i%7))
	}
	ended := []string{"job-e1", "job-e2"}
	b := &pgx.Batch{}
	queueJobNotifications(b, ended, stepped)
	// The ended jobs: one statement planned for its ids, between the
	// switches of queueJoin; then the stepped ids.
	if len(b.QueuedQueries) != 4 || b.QueuedQueries[0].SQL != sqlCustomPlans || b.QueuedQueries[2].SQL != sqlCachedPlans {
		t.Fatalf("%d statements, want the ended jobs' join and one of stepped ids", len(b.QueuedQueries))
	}
	if q := b.QueuedQueries[1]; q.SQL != sqlNotifyEnded || strings.Join(q.Arguments[0].([]string), " ") != "job-e1 job-e2" || q.Arguments[1] != maxNotifyPayload {
		t.Fatalf("ended jobs notified by %q %v", q.SQL, q.Arguments)
	}
	q := b.QueuedQueries[3]
	var got []string
	for _, a := range q.Arguments {
		payload := a.(string)
		if len(payload) > maxNotifyPayload {
			t.Fatalf("payload of %d bytes, limit %d", len(payload), maxNotifyPayload)
		}
		got = append(got, strings.Fields(payload)...)
	}
	if len(q.Arguments) < 2 || strings.Count(q.SQL, "pg_notify('"+jobSteppedChannel+"'") != len(q.Arguments) {
		t.Fatalf("%d payloads in %q; want the stepped jobs over several, each its own pg_notify", len(q.Arguments), q.SQL)
	}
	if strings.Join(got, " ") != strings.Join(stepped, " ") {
		t.Fatalf("stepped %d of %d", len(got), len(stepped))
	}
	only := &pgx.Batch{}
	queueJobNotifications(only, ended, nil)
	if len(only.QueuedQueries) != 3 {
		t.Fatalf("ended jobs alone: %d statements, want 3", len(only.QueuedQueries))
	}
	empty := &pgx.Batch{}
	queueJobNotifications(empty, nil, nil)
	if len(empty.QueuedQueries) != 0 {
		t.Fatal("a batch without jobs notifies")
	}
}

// TestJobWatchWakesAtCommit runs the projector and a JobWatch on a real
// database: a job's step wakes only the watcher that asked for steps, its
// end hands both the final row as the reader reads it once committed, a
// row too large for a notification wakes its watchers to read again, and a
// watcher of another job hears nothing.
func TestJobWatchWakesAtCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Postgres")
	}
	kcfg := testBroker(t)
	dsn := testDB(t)
	if err := Migrate(t.Context(), dsn); err != nil {
		t.Fatal(err)
	}
	w := readmodel.NewJobWatch(dsn, nil)
	// The watchers are registered before the watch runs: its first LISTEN
	// wakes the watchers there are then, and a loaded machine may run the
	// connection before the registrations that follow it (CI, with the
	// race detector, saw "the watch did not connect").
	end, stopEnd := w.Watch("job-1", false)
	defer stopEnd()
	steps, stopSteps := w.Watch("job-1", true)
	defer stopSteps()
	other, stopOther := w.Watch("job-other", true)
	defer stopOther()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	// The watch connects in the background: until it listens, a commit is
	// not heard. Its first LISTEN wakes every watcher (a reconnect may have
	// missed commits), which tells that it listens.
	for _, ch := range []<-chan *readmodel.Job{end, steps, other} {
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatal("the watch did not connect")
		}
	}
	quiet := func(name string, ch <-chan *readmodel.Job) {
		t.Helper()
		select {
		case <-ch:
			t.Fatalf("%s was woken", name)
		case <-time.After(200 * time.Millisecond):
		}
	}
	woken := func(name string, ch <-chan *readmodel.Job) *readmodel.Job {
		t.Helper()
		select {
		case j := <-ch:
			return j
		case <-time.After(20 * time.Second):
			t.Fatalf("%s was not woken", name)
		}
		return nil
	}

	startProjector(t, Config{Kafka: kcfg, DSN: dsn, Group: "watch"}, nil)
	p := newProducer(t, kcfg)
	job := schemas.JobRef{JobID: "job-1", VmID: "vm-1", Account: "acme", JobType: "Reboot", Origin: "api", At: 1_700_000_000_000}
	p.send(schemas.TopicVmEvents, "vm-1", &schemas.JobStepped{JobRef: job, Seq: 1, TaskState: "Rebooting", Step: "RebootVm"})
	if j := woken("the steps watcher", steps); j != nil {
		t.Fatalf("a step handed over a row: %+v", j)
	}
	quiet("the end watcher by a step", end)

	p.send(schemas.TopicVmEvents, "vm-1", &schemas.JobSucceeded{JobRef: job, VmState: "Active"})
	ended := woken("the end watcher", end)
	atEnd := woken("the steps watcher at the end", steps)
	rm, err := readmodel.NewReader(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer rm.Close()
	j, err := rm.Job(t.Context(), "job-1")
	if err != nil || j.State != "succeeded" {
		t.Fatalf("woken before the row committed: %+v, %v", j, err)
	}
	sameJob(t, ended, j)
	sameJob(t, atEnd, j)
	quiet("a watcher of another job", other)

	// A row over the payload limit comes as the job's id: read again.
	big, stopBig := w.Watch("job-2", false)
	defer stopBig()
	job2 := schemas.JobRef{JobID: "job-2", VmID: "vm-1", Account: "acme", JobType: "Stop", Origin: "api", At: 1_700_000_001_000}
	p.send(schemas.TopicVmEvents, "vm-1", &schemas.JobFailed{JobRef: job2, Reason: "AgentError", Detail: strings.Repeat("d", 2*maxNotifyPayload)})
	if j := woken("the watcher of a large row", big); j != nil {
		t.Fatalf("a row over the limit was handed over (%d bytes of detail)", len(j.Detail))
	}
	if j, err := rm.Job(t.Context(), "job-2"); err != nil || j.State != "failed" || len(j.Detail) != 2*maxNotifyPayload {
		t.Fatalf("the large row: %v, %d bytes of detail, %v", j.State, len(j.Detail), err)
	}
}

// sameJob fails unless a notification's row is the reader's.
func sameJob(t *testing.T, got *readmodel.Job, want readmodel.Job) {
	t.Helper()
	if got == nil {
		t.Fatal("the end handed over no row")
	}
	g := *got
	times := g.CreatedAt.Equal(want.CreatedAt) && g.UpdatedAt.Equal(want.UpdatedAt) &&
		g.FinishedAt != nil && want.FinishedAt != nil && g.FinishedAt.Equal(*want.FinishedAt)
	g.CreatedAt, g.UpdatedAt, g.FinishedAt = want.CreatedAt, want.UpdatedAt, want.FinishedAt
	if !times || !reflect.DeepEqual(g, want) {
		t.Fatalf("notified row %+v (times %v), reader's %+v", *got, times, want)
	}
}
