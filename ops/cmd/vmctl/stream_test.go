package main

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/gateway/gatewaytest"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

// streamStack is the real gateway handler with its event streams fed by a
// Fanout. Its play publishes a job's steps as events while the read model
// learns them only when the job ends, so that a step printed before the
// end can only have come from the stream.
type streamStack struct {
	*stack
	events    *gateway.Fanout
	offset    atomic.Int64
	projected atomic.Int64 // unix nanos when the read model got the steps
}

func newStreamStack(t *testing.T) *streamStack {
	t.Helper()
	rm := gatewaytest.NewReadModel()
	rm.PutOffering(readmodel.Offering{ID: "off-small", Name: "small", CPU: 1, MemoryMB: 1024})
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	s := &streamStack{stack: &stack{rm: rm}, events: gateway.NewFanout(quiet, 100)}
	s.admin = s.key(t, "ops", "admin")
	s.user = s.key(t, "acct-a", "user")
	pub := &gatewaytest.Recorder{OnPublish: func(r schemas.Record) { go s.play(r) }}
	srv := httptest.NewServer(gateway.New(gateway.Config{Logger: quiet, Events: s.events}, rm, pub).Handler())
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

func (s *streamStack) publish(vmID string, v any) {
	s.events.Publish(gateway.EventOf(schemas.Record{Topic: schemas.TopicVmEvents, Key: vmID, Offset: s.offset.Add(1), Value: v}))
}

func (s *streamStack) play(r schemas.Record) {
	typ := schemas.TypeName(r.Value)
	id := r.Headers["command_id"]
	ref := schemas.JobRef{JobID: id, VmID: r.Key, Account: "acct-a", JobType: typ}
	j := readmodel.Job{ID: id, VmID: r.Key, Account: "acct-a", Type: typ, State: "running", CreatedAt: time.Now().UTC()}
	s.rm.PutJob(j)
	// The stream subscribes once the gateway sees the job (it polls the
	// read model every 100 ms).
	time.Sleep(400 * time.Millisecond)
	s.publish(r.Key, &schemas.JobAccepted{JobRef: ref})
	steps := []schemas.JobStepped{
		{JobRef: ref, Seq: 1, TaskState: "Scheduling", Step: "place", Text: "PlaceVm sent to zone-1"},
		{JobRef: ref, Seq: 2, TaskState: "Networking", Step: "net", Text: "network ready"},
		{JobRef: ref, Seq: 3, TaskState: "Spawning", Step: "start", Text: "StartVm sent to host-2"},
	}
	for i := range steps {
		time.Sleep(100 * time.Millisecond)
		s.publish(r.Key, &steps[i])
	}
	time.Sleep(500 * time.Millisecond)
	s.publish(r.Key, &schemas.JobSucceeded{JobRef: ref, VmState: "Active"})
	// The projector is a little behind the stream.
	time.Sleep(150 * time.Millisecond)
	for _, st := range steps {
		s.rm.AddStep(readmodel.JobStep{JobID: id, Seq: st.Seq, TaskState: st.TaskState, Step: st.Step, Text: st.Text, At: time.Now()})
	}
	s.projected.Store(time.Now().UnixNano())
	fin := time.Now().UTC()
	j.State, j.FinishedAt = "succeeded", &fin
	s.rm.PutJob(j)
}

// TestWaitFollowsTheEventStream: with streams on, every step is printed
// as its event arrives, before the read model knows any step, and the
// output is the same lines as the long-poll's.
func TestWaitFollowsTheEventStream(t *testing.T) {
	s := newStreamStack(t)
	w := &stampWriter{at: map[string]time.Time{}}
	env := map[string]string{"VMPLANE_API": s.url, "VMPLANE_API_KEY": s.user, "VMCTL_PROGRESS": "never"}
	code := run(t.Context(), []string{"vm", "deploy", "--name", "w", "--offering", "small", "--wait"}, func(k string) string { return env[k] }, w, io.Discard)
	out := w.buf.String()
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	wantLines(t, out, []string{
		`^job \S+ \(Deploy\) accepted for VM vm-\S+$`,
		`^  \[1\] Scheduling: PlaceVm sent to zone-1$`,
		`^  \[2\] Networking: network ready$`,
		`^  \[3\] Spawning: StartVm sent to host-2$`,
		`^job \S+ Deploy succeeded in \d+(\.\d+)?m?s$`,
	})
	projected := time.Unix(0, s.projected.Load())
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if early := projected.Sub(w.at[lines[3]]); early < 300*time.Millisecond {
		t.Fatalf("step 3 printed %v before the read model had steps: not from the stream", early)
	}
}

// TestWaitProgressLine: with a status line, it is redrawn in place with
// the state, task state, step count and elapsed time, and erased before
// every step line and the final line, which read as without it.
func TestWaitProgressLine(t *testing.T) {
	s := newStreamStack(t)
	var buf lockedBuffer
	env := map[string]string{"VMPLANE_API": s.url, "VMPLANE_API_KEY": s.user, "VMCTL_PROGRESS": "always"}
	code := run(t.Context(), []string{"vm", "deploy", "--name", "w", "--offering", "small", "--wait"}, func(k string) string { return env[k] }, &buf, io.Discard)
	raw := buf.String()
	if code != 0 {
		t.Fatalf("exit %d:\n%q", code, raw)
	}
	if !regexp.MustCompile(`\r\x1b\[Kjob \S+ Deploy running · Spawning · 3 steps · \d+(\.\d+)?m?s`).MatchString(raw) {
		t.Fatalf("no status line with 3 steps in:\n%q", raw)
	}
	wantLines(t, screen(raw), []string{
		`^job \S+ \(Deploy\) accepted for VM vm-\S+$`,
		`^  \[1\] Scheduling: PlaceVm sent to zone-1$`,
		`^  \[2\] Networking: network ready$`,
		`^  \[3\] Spawning: StartVm sent to host-2$`,
		`^job \S+ Deploy succeeded in \d+(\.\d+)?m?s$`,
	})
}

// TestWaitWithoutStreamsPolls: a gateway without streams (503) is
// long-polled; the job still ends with its steps and final line.
func TestWaitWithoutStreamsPolls(t *testing.T) {
	s := newStack(t) // no Events: the stream answers 503
	code, out, errs := s.run(t, s.user, "job", "wait", "job-nope", "--timeout", "300ms")
	if code != 1 || !strings.Contains(errs, "still not seen yet") {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
}

func TestReadSSE(t *testing.T) {
	in := ": ping\n\nid: 0:1\nevent: JobStepped\ndata: {\"a\":\ndata: 1}\n\nevent: gap\ndata: x\n\ndata: plain\n\n"
	var got []string
	beats := 0
	if err := readSSE(strings.NewReader(in), func() { beats++ }, func(e sseEvent) bool {
		got = append(got, e.name+"|"+e.id+"|"+e.data)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{"JobStepped|0:1|{\"a\":\n1}", "gap||x", "message||plain"}
	if strings.Join(got, ",") != strings.Join(want, ",") || beats == 0 {
		t.Fatalf("events %q (lines %d), want %q", got, beats, want)
	}
}

// screen is what a terminal shows of out: "\r\x1b[K" erases the current
// line.
func screen(out string) string {
	var b strings.Builder
	for i, part := range strings.Split(out, "\r\x1b[K") {
		if i > 0 {
			s := b.String()
			b.Reset()
			b.WriteString(s[:strings.LastIndex(s, "\n")+1])
		}
		b.WriteString(part)
	}
	return b.String()
}

func wantLines(t *testing.T, out string, want []string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(want) {
		t.Fatalf("output:\n%s", out)
	}
	for i, re := range want {
		if !regexp.MustCompile(re).MatchString(lines[i]) {
			t.Errorf("line %d %q does not match %s", i, lines[i], re)
		}
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestWaitRateLimitedWaitsAndAsksAgain: a key that holds its most streams
// and long-polls (many waits at once) gets 429s; a wait pauses and asks
// again until the job ends, rather than giving up on a job that runs on.
func TestWaitRateLimitedWaitsAndAsksAgain(t *testing.T) {
	old := rateLimitedPause
	rateLimitedPause = 10 * time.Millisecond
	t.Cleanup(func() { rateLimitedPause = old })
	var polls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limited := r.URL.Path == "/v1/jobs/j1/events" || polls.Add(1) <= 3
		if limited {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"error":{"code":"rate_limited","message":"this API key already holds 16 event streams and long-polls open; retry in 5 s"}}`))
			return
		}
		_, _ = w.Write([]byte(`{"id":"j1","vm_id":"vm1","type":"Deploy","state":"succeeded","reason":"","task_state":"","created_at":"2026-01-01T00:00:00Z","finished_at":"2026-01-01T00:00:01Z"}`))
	}))
	t.Cleanup(srv.Close)
	var out, errb bytes.Buffer
	env := map[string]string{"VMPLANE_API": srv.URL, "VMPLANE_API_KEY": "k"}
	code := run(t.Context(), []string{"job", "wait", "j1", "--timeout", "10s"}, func(k string) string { return env[k] }, &out, &errb)
	if code != 0 || !strings.Contains(out.String(), "succeeded") || polls.Load() != 4 {
		t.Fatalf("exit %d after %d polls: %s%s", code, polls.Load(), out.String(), errb.String())
	}
}

// TestWaitEndsWhenTheStreamNeverDoes: a stream that keeps beating but
// never sends the job's end (a gateway that missed it) does not hold the
// wait: the job is read while the stream is open, and its end ends the
// wait promptly, well before --timeout.
func TestWaitEndsWhenTheStreamNeverDoes(t *testing.T) {
	old := recheckEvery
	recheckEvery = 100 * time.Millisecond
	t.Cleanup(func() { recheckEvery = old })
	start := time.Now()
	streamClosed := make(chan struct{})
	const running = `{"id":"j1","vm_id":"vm1","type":"Deploy","state":"running","reason":"","task_state":"Spawning","created_at":"2026-01-01T00:00:00Z","finished_at":null}`
	const done = `{"id":"j1","vm_id":"vm1","type":"Deploy","state":"succeeded","reason":"","task_state":"","created_at":"2026-01-01T00:00:00Z","finished_at":"2026-01-01T00:00:01Z",` +
		`"steps":[{"seq":1,"task_state":"Spawning","step":"start","text":"StartVm sent to host-2","at":"2026-01-01T00:00:00Z"}]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/jobs/j1/events":
			defer close(streamClosed)
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write([]byte("event: job\ndata: " + running + "\n\n"))
			w.(http.Flusher).Flush()
			for {
				select {
				case <-r.Context().Done():
					return
				case <-time.After(20 * time.Millisecond):
					_, _ = w.Write([]byte(": heartbeat\n\n"))
					w.(http.Flusher).Flush()
				}
			}
		case "/v1/jobs/j1":
			if time.Since(start) < 500*time.Millisecond {
				_, _ = w.Write([]byte(running))
				return
			}
			_, _ = w.Write([]byte(done))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	code, out, errs := vmctl(t, map[string]string{"VMPLANE_API": srv.URL, "VMPLANE_API_KEY": "k", "VMCTL_PROGRESS": "never"}, "job", "wait", "j1", "--timeout", "1m")
	took := time.Since(start)
	if code != exitOK || took > 3*time.Second {
		t.Fatalf("exit %d after %v: %s%s", code, took, out, errs)
	}
	wantLines(t, out, []string{`^\s*\[1\] Spawning: StartVm sent to host-2$`, `^job j1 Deploy succeeded in 1s$`})
	select {
	case <-streamClosed:
	case <-time.After(2 * time.Second):
		t.Fatal("the stream was left open")
	}
}

// TestEventsFollowsTheStream: vmctl events --vm prints each event of that
// VM, a JSON object per line with -o json, and stops after --count.
func TestEventsFollowsTheStream(t *testing.T) {
	s := newStreamStack(t)
	s.rm.PutVM(readmodel.VM{ID: "vm-e", Account: "acct-a"})
	ref := schemas.JobRef{JobID: "job-e", VmID: "vm-e", Account: "acct-a", JobType: "Stop"}
	stop := make(chan struct{})
	go func() {
		for i := int32(1); ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			s.publish("vm-other", &schemas.JobStepped{JobRef: schemas.JobRef{JobID: "job-o", VmID: "vm-other", Account: "acct-a"}, Seq: i})
			s.publish("vm-e", &schemas.JobStepped{JobRef: ref, Seq: i, TaskState: "Stopping", Text: "StopVm sent"})
		}
	}()
	code, out, errs := vmctl(t, map[string]string{"VMPLANE_API": s.url, "VMPLANE_API_KEY": s.user}, "events", "--vm", "vm-e", "--count", "2", "-o", "json")
	close(stop)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != exitOK || len(lines) != 2 {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	for _, l := range lines {
		var e api.Event
		if err := json.Unmarshal([]byte(l), &e); err != nil || e.VmID != "vm-e" || e.Type != "JobStepped" || e.JobID != "job-e" {
			t.Errorf("event line %q: %+v %v", l, e, err)
		}
	}
	code, out, errs = vmctl(t, map[string]string{"VMPLANE_API": s.url, "VMPLANE_API_KEY": s.user}, "events", "--vm", "vm-nope", "--count", "1")
	if code != exitFail || !strings.Contains(errs, "not found") {
		t.Fatalf("events of an unknown VM: exit %d: %s%s", code, out, errs)
	}
}
