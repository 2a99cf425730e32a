package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/gateway/gatewaytest"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

// hookedReadModel runs before and after each JobSnapshot, with the number
// of the read in the request (1 for the first): the test plays the feed and
// the projector there, between the stream's subscription and its snapshot.
type hookedReadModel struct {
	*gatewaytest.ReadModel
	before, after func(n int)
	reads         int
}

func (m *hookedReadModel) JobSnapshot(ctx context.Context, id string) (readmodel.JobSnapshot, error) {
	m.reads++
	if m.before != nil {
		m.before(m.reads)
	}
	snap, err := m.ReadModel.JobSnapshot(ctx, id)
	if m.after != nil {
		m.after(m.reads)
	}
	return snap, err
}

// logEvent is one record of vm.events.v1 in a race: the job's, or noise.
type logEvent struct {
	rec schemas.Record
	job bool // the raced job's
}

// raceLog is the log of one race: the job's acceptance, steps and end on
// its partition, among other jobs' events on every partition, at offsets
// that skip now and then (transaction markers take offsets too).
func raceLog(rnd *rand.Rand, end map[int32]int64, jobID string, steps int) []logEvent {
	ref := schemas.JobRef{JobID: jobID, VmID: "vm-a1", Account: "acct-a", JobType: "Deploy"}
	jobPart := int32(rnd.IntN(3))
	var job []any
	job = append(job, &schemas.JobAccepted{JobRef: ref})
	for seq := range steps {
		job = append(job, &schemas.JobStepped{JobRef: ref, Seq: int32(seq + 1), Step: "s"})
	}
	switch rnd.IntN(4) {
	case 0:
		job = append(job, &schemas.JobSucceeded{JobRef: ref, VmState: "Active"})
	case 1:
		job = append(job, &schemas.JobFailed{JobRef: ref, Reason: "PlacementFailed"})
	case 2:
		job = append(job, &schemas.JobCancelled{JobRef: ref, Reason: "Cancelled"})
	default:
		job = append(job, &schemas.JobRejected{JobRef: ref, Reason: "InvalidState"})
	}
	noise := rnd.IntN(48) // at times more than the ring holds
	var out []logEvent
	add := func(p int32, v any, mine bool) {
		end[p] += 1 + int64(rnd.IntN(2))
		out = append(out, logEvent{job: mine, rec: schemas.Record{Topic: schemas.TopicVmEvents, Key: "vm-a1", Partition: p, Offset: end[p] - 1, Value: v}})
	}
	for len(job) > 0 || noise > 0 {
		if len(job) > 0 && (noise == 0 || rnd.IntN(3) == 0) {
			add(jobPart, job[0], true)
			job = job[1:]
			continue
		}
		other := schemas.JobRef{JobID: fmt.Sprintf("%s-other-%d", jobID, noise), VmID: "vm-a1", Account: "acct-a", JobType: "Stop"}
		add(int32(rnd.IntN(3)), &schemas.JobStepped{JobRef: other, Seq: 1}, false)
		noise--
	}
	return out
}

// project applies recs to the read model as the projector does: the rows,
// then the next offset of their partitions.
func project(rm *gatewaytest.ReadModel, recs []logEvent) {
	ctx := context.Background()
	for _, le := range recs {
		r := le.rec
		if le.job {
			ref, final := refOf(r.Value)
			j, _ := rm.Job(ctx, ref.JobID)
			switch v := r.Value.(type) {
			case *schemas.JobAccepted:
				j.State = "running"
			case *schemas.JobStepped:
				rm.AddStep(readmodel.JobStep{JobID: v.JobID, Seq: v.Seq, Step: v.Step, At: t0})
			}
			if final {
				j.State = strings.ToLower(strings.TrimPrefix(schemas.TypeName(r.Value), "Job"))
				j.FinishedAt = &t0
			}
			rm.PutJob(j)
		}
		rm.Advance(r.Partition, r.Offset+1)
	}
}

// refOf is the job of a job event, and whether the event ends it.
func refOf(v any) (schemas.JobRef, bool) {
	switch v := v.(type) {
	case *schemas.JobAccepted:
		return v.JobRef, false
	case *schemas.JobStepped:
		return v.JobRef, false
	case *schemas.JobSucceeded:
		return v.JobRef, true
	case *schemas.JobFailed:
		return v.JobRef, true
	case *schemas.JobCancelled:
		return v.JobRef, true
	case *schemas.JobRejected:
		return v.JobRef, true
	}
	return schemas.JobRef{}, false
}

// TestJobStreamRace forces, 1,000 times, an order of what a job stream
// races with: the feed's delivery of the job's events (before the stream
// subscribes, between its subscription and its snapshot, or after) and the
// projector's commits of them (before the snapshot or after it; ahead of
// the feed or behind it, also behind what the ring still holds). Whatever
// the order, the stream sends the snapshot, then every event of the job
// the snapshot does not hold, once each and in order, and ends with the
// job's end, which it sends exactly once: as the snapshot's state or as
// the final event.
func TestJobStreamRace(t *testing.T) {
	const races = 1000
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	f := gateway.NewFanout(quiet, 32) // small: the ring drops events in some races
	e := newEnv(t, gateway.Config{})
	rm := &hookedReadModel{ReadModel: e.rm}
	h := gateway.New(gateway.Config{Logger: quiet, Events: f, PollEvery: time.Millisecond, Heartbeat: time.Hour,
		RatePerSecond: -1}, rm, e.pub).Handler()
	rnd := rand.New(rand.NewPCG(29, 1))
	end := map[int32]int64{}
	publish := func(recs []logEvent) {
		for _, le := range recs {
			f.Publish(gateway.EventOf(le.rec))
		}
	}
	var waited, inSnapshot, fromRing, live int
	start := time.Now()
	for i := range races {
		jobID := fmt.Sprintf("job-race-%d", i)
		// The command's row: pending, from vm.commands.v1 (no event).
		e.rm.PutJob(readmodel.Job{ID: jobID, VmID: "vm-a1", Account: "acct-a", Type: "Deploy", State: "pending", CreatedAt: t0})
		steps := rnd.IntN(4)
		log := raceLog(rnd, end, jobID, steps)
		// The feed's cuts: before the subscription, before the snapshot,
		// the rest after it; the projector's: before the stream, before
		// the snapshot (ahead of the feed or behind it), the rest after.
		f0 := rnd.IntN(len(log) + 1)
		f1 := f0 + rnd.IntN(len(log)-f0+1)
		q1 := rnd.IntN(len(log) + 1)
		q0 := rnd.IntN(q1 + 1)
		project(e.rm, log[:q0])
		publish(log[:f0])
		rm.reads = 0
		rm.before = func(n int) {
			if n == 1 {
				if f.Subscribers() != 1 {
					t.Errorf("race %d: the snapshot is read before the stream subscribed", i)
				}
				publish(log[f0:f1])
				project(e.rm, log[q0:q1])
				return
			}
			// The first snapshot was behind what the subscription holds
			// (the ring dropped events the projector had not applied):
			// the projector catches up.
			waited++
			project(e.rm, log[q1:])
		}
		rm.after = func(n int) {
			if n == 1 {
				publish(log[f1:])
			}
		}
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		req := httptest.NewRequestWithContext(ctx, "GET", "/v1/jobs/"+jobID+"/events", nil)
		req.Header.Set("Authorization", "Bearer "+e.alice)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		timedOut := ctx.Err() != nil
		cancel()
		if rm.reads == 1 {
			project(e.rm, log[q1:])
		}
		order := fmt.Sprintf("race %d (feed %d|%d|%d, projector %d|%d|%d)", i, f0, f1-f0, len(log)-f1, q0, q1-q0, len(log)-q1)
		if timedOut {
			t.Fatalf("%s: the stream did not end:\n%s", order, rec.Body.String())
		}
		if checkJobStream(t, order, jobID, steps, rec.Body.String()) {
			inSnapshot++
		} else if slices.IndexFunc(log[:f0], func(le logEvent) bool { _, final := refOf(le.rec.Value); return le.job && final }) >= 0 {
			fromRing++
		} else {
			live++
		}
		if t.Failed() {
			t.FailNow()
		}
	}
	t.Logf("%d races in %v; the end came in the snapshot %d times, from the ring %d, after the subscription %d; a snapshot was read again %d times",
		races, time.Since(start).Round(time.Millisecond), inSnapshot, fromRing, live, waited)
	if inSnapshot == 0 || fromRing == 0 || live == 0 || waited == 0 {
		t.Fatal("an order of the race was never forced")
	}
}

// sseEvent is one event of a stream's body.
type sseEvent struct{ id, name, data string }

func parseSSE(body string) []sseEvent {
	var out []sseEvent
	for _, block := range strings.Split(body, "\n\n") {
		var ev sseEvent
		for _, line := range strings.Split(block, "\n") {
			switch {
			case strings.HasPrefix(line, "id: "):
				ev.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				ev.name = line[7:]
			case strings.HasPrefix(line, "data: "):
				ev.data = line[6:]
			}
		}
		if ev.name != "" {
			out = append(out, ev)
		}
	}
	return out
}

// checkJobStream checks the body of a job stream that ended: the snapshot
// first, then the job's events it does not hold, each once, in order, and
// the job's end exactly once, last. It says whether the end was the
// snapshot's.
func checkJobStream(t *testing.T, order, jobID string, steps int, body string) (endInSnapshot bool) {
	t.Helper()
	events := parseSSE(body)
	if len(events) == 0 || events[0].name != "job" {
		t.Errorf("%s: the stream does not start with the job:\n%s", order, body)
		return false
	}
	var snap api.Job
	if err := json.Unmarshal([]byte(events[0].data), &snap); err != nil {
		t.Errorf("%s: job event %q: %v", order, events[0].data, err)
		return false
	}
	seen := map[int32]int{}
	for _, st := range snap.Steps {
		seen[st.Seq]++
	}
	accepted, ends := 0, 0
	if api.Finished(snap.State) {
		ends++
	}
	lastSeq := int32(0)
	if len(snap.Steps) > 0 {
		lastSeq = snap.Steps[len(snap.Steps)-1].Seq
	}
	for _, ev := range events[1:] {
		if ends > 0 {
			t.Errorf("%s: %s after the job's end:\n%s", order, ev.name, body)
			return false
		}
		var ae api.Event
		if err := json.Unmarshal([]byte(ev.data), &ae); err != nil || ae.JobID != jobID || ae.ID != ev.id {
			t.Errorf("%s: event %s %q (%v) is not one of the job's", order, ev.name, ev.data, err)
			return false
		}
		switch ae.Type {
		case "JobAccepted":
			accepted++
		case "JobStepped":
			seq := int32(ae.Data["seq"].(float64))
			if seq <= lastSeq {
				t.Errorf("%s: step %d after step %d", order, seq, lastSeq)
			}
			lastSeq = seq
			seen[seq]++
		case "JobSucceeded", "JobFailed", "JobCancelled", "JobRejected":
			ends++
		default:
			t.Errorf("%s: event %s", order, ev.name)
		}
	}
	if ends != 1 {
		t.Errorf("%s: the end sent %d times:\n%s", order, ends, body)
	}
	if want := map[bool]int{true: 1, false: 0}[snap.State == "pending"]; accepted != want {
		t.Errorf("%s: JobAccepted sent %d times after a %s snapshot:\n%s", order, accepted, snap.State, body)
	}
	for seq := int32(1); seq <= int32(steps); seq++ {
		if seen[seq] != 1 {
			t.Errorf("%s: step %d sent %d times:\n%s", order, seq, seen[seq], body)
		}
	}
	if len(seen) != steps {
		t.Errorf("%s: steps %v, want 1..%d", order, seen, steps)
	}
	return api.Finished(snap.State)
}

// TestJobStreamResume: a job stream resumed with Last-Event-ID sends what
// follows it when the ring still holds that, without a snapshot; else a
// gap, then the snapshot, which here ends the stream.
func TestJobStreamResume(t *testing.T) {
	f := gateway.NewFanout(slog.New(slog.NewTextHandler(io.Discard, nil)), 4)
	e := newEnv(t, gateway.Config{Events: f})
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	ref := schemas.JobRef{JobID: "job-r1", VmID: "vm-a1", Account: "acct-a", JobType: "Reboot"}
	e.rm.PutJob(readmodel.Job{ID: "job-r1", VmID: "vm-a1", Account: "acct-a", Type: "Reboot", State: "succeeded", CreatedAt: t0, FinishedAt: &t0})
	e.rm.AddStep(readmodel.JobStep{JobID: "job-r1", Seq: 1, Step: "a", At: t0})
	e.rm.AddStep(readmodel.JobStep{JobID: "job-r1", Seq: 2, Step: "b", At: t0})
	e.rm.Advance(0, 13)
	publishVM(f, 0, 10, &schemas.JobStepped{JobRef: ref, Seq: 1})
	publishVM(f, 0, 11, &schemas.JobStepped{JobRef: ref, Seq: 2})
	publishVM(f, 0, 12, &schemas.JobSucceeded{JobRef: ref})
	if got := strings.Join(sse(t, srv, "/v1/jobs/job-r1/events", e.alice, "0:10", 10), ","); got != "JobStepped 0:11,JobSucceeded 0:12" {
		t.Fatalf("resumed from the ring: %s", got)
	}
	// The ring (of 4) drops the job's events; the read model has them.
	for off := int64(13); off < 18; off++ {
		publishVM(f, 0, off, &schemas.PowerStateObserved{VmID: "vm-a1", PowerState: "PowerOn"})
	}
	e.rm.Advance(0, 18)
	if got := strings.Join(sse(t, srv, "/v1/jobs/job-r1/events", e.alice, "0:10", 10), ","); got != "gap ,job " {
		t.Fatalf("resumed from before the ring: %s", got)
	}
}
