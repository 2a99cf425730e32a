package postgres

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vmplane/vmplane/schemas"
)

func TestQueueJobNotificationsSplitsPayloads(t *testing.T) {
	var ended []string
	for i := range 500 {
		ended = append(ended, strings.Repeat("x", 30)+string(rune('a'+i%26))+strings.Repeat("y", i%7))
	}
	stepped := []string{"job-s1", "job-s2"}
	b := &pgx.Batch{}
	queueJobNotifications(b, ended, stepped)
	if len(b.QueuedQueries) != 1 {
		t.Fatalf("%d statements, want one", len(b.QueuedQueries))
	}
	q := b.QueuedQueries[0]
	got := map[string][]string{}
	payloads := 0
	for i := 0; i < len(q.Arguments); i += 2 {
		channel, payload := q.Arguments[i].(string), q.Arguments[i+1].(string)
		if len(payload) > maxNotifyPayload {
			t.Fatalf("payload of %d bytes, limit %d", len(payload), maxNotifyPayload)
		}
		got[channel] = append(got[channel], strings.Fields(payload)...)
		payloads++
	}
	if payloads < 3 || strings.Count(q.SQL, "pg_notify(") != payloads {
		t.Fatalf("%d payloads in %q; want the ended jobs over several, each its own pg_notify", payloads, q.SQL)
	}
	if strings.Join(got[jobEndedChannel], " ") != strings.Join(ended, " ") || strings.Join(got[jobSteppedChannel], " ") != "job-s1 job-s2" {
		t.Fatalf("ended %d of %d, stepped %v", len(got[jobEndedChannel]), len(ended), got[jobSteppedChannel])
	}
	empty := &pgx.Batch{}
	queueJobNotifications(empty, nil, nil)
	if len(empty.QueuedQueries) != 0 {
		t.Fatal("a batch without jobs notifies")
	}
}

// TestJobWatchWakesAtCommit runs the projector and a JobWatch on a real
// database: a job's step wakes only the watcher that asked for steps, its
// end wakes both once the final row has committed, and a watcher of another
// job hears nothing.
func TestJobWatchWakesAtCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Postgres")
	}
	kcfg := testBroker(t)
	dsn := testDB(t)
	if err := Migrate(t.Context(), dsn); err != nil {
		t.Fatal(err)
	}
	w := NewJobWatch(dsn, nil)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	end, stopEnd := w.Watch("job-1", false)
	defer stopEnd()
	steps, stopSteps := w.Watch("job-1", true)
	defer stopSteps()
	other, stopOther := w.Watch("job-other", true)
	defer stopOther()
	// The watch connects in the background: until it listens, a commit is
	// not heard. Its first LISTEN wakes every watcher (a reconnect may have
	// missed commits), which tells that it listens.
	for _, ch := range []<-chan struct{}{end, steps, other} {
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatal("the watch did not connect")
		}
	}
	quiet := func(name string, ch <-chan struct{}) {
		t.Helper()
		select {
		case <-ch:
			t.Fatalf("%s was woken", name)
		case <-time.After(200 * time.Millisecond):
		}
	}
	woken := func(name string, ch <-chan struct{}) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(20 * time.Second):
			t.Fatalf("%s was not woken", name)
		}
	}

	startProjector(t, Config{Kafka: kcfg, DSN: dsn, Group: "watch"}, nil)
	p := newProducer(t, kcfg)
	job := schemas.JobRef{JobID: "job-1", VmID: "vm-1", Account: "acme", JobType: "Reboot", Origin: "api", At: 1_700_000_000_000}
	p.send(schemas.TopicVmEvents, "vm-1", &schemas.JobStepped{JobRef: job, Seq: 1, TaskState: "Rebooting", Step: "RebootVm"})
	woken("the steps watcher", steps)
	quiet("the end watcher by a step", end)

	p.send(schemas.TopicVmEvents, "vm-1", &schemas.JobSucceeded{JobRef: job, VmState: "Active"})
	woken("the end watcher", end)
	woken("the steps watcher at the end", steps)
	rm, err := NewReader(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer rm.Close()
	if j, err := rm.Job(t.Context(), "job-1"); err != nil || j.State != "succeeded" {
		t.Fatalf("woken before the row committed: %+v, %v", j, err)
	}
	quiet("a watcher of another job", other)
}
