package gateway_test

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/readmodel"
)

func TestGetJobNotProjectedYet(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	wantStatus(t, e.do("GET", "/v1/jobs/job-unknown", e.alice, nil), http.StatusNotFound)
	start := time.Now()
	wantStatus(t, e.do("GET", "/v1/jobs/job-unknown?wait=300ms", e.alice, nil), http.StatusNotFound)
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("gave up on an unprojected job after %v, want the whole wait", d)
	}
}

func TestWaitReturnsWhenJobFinishes(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	rec := e.do("POST", "/v1/vms/vm-a1/actions", e.alice, `{"action":"reboot"}`)
	wantStatus(t, rec, http.StatusAccepted)
	id := decode[api.Job](t, rec).ID

	// Play the processor and projector: the job appears, steps, ends.
	go func() {
		time.Sleep(150 * time.Millisecond)
		e.rm.PutJob(readmodel.Job{ID: id, VmID: "vm-a1", Account: "acct-a", Type: "Reboot", State: "running", TaskState: "Rebooting", CreatedAt: t0})
		e.rm.AddStep(readmodel.JobStep{JobID: id, Seq: 1, TaskState: "Rebooting", Step: "RebootVm", Text: "RebootVm sent to host-1", At: t0})
		time.Sleep(150 * time.Millisecond)
		end := t0.Add(time.Second)
		e.rm.PutJob(readmodel.Job{ID: id, VmID: "vm-a1", Account: "acct-a", Type: "Reboot", State: "succeeded", CreatedAt: t0, FinishedAt: &end})
	}()
	start := time.Now()
	rec = e.do("GET", "/v1/jobs/"+id+"?wait=10s&steps=1", e.alice, nil)
	took := time.Since(start)
	wantStatus(t, rec, http.StatusOK)
	job := decode[api.Job](t, rec)
	if job.State != "succeeded" || job.FinishedAt == nil || len(job.Steps) != 1 || job.Steps[0].Text != "RebootVm sent to host-1" {
		t.Fatalf("job = %+v", job)
	}
	if took < 250*time.Millisecond || took > 2*time.Second {
		t.Fatalf("wait took %v: it must last until the job ends and not much longer", took)
	}
}

func TestWaitEndsWithJobUnfinished(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	e.rm.PutJob(readmodel.Job{ID: "job-run", VmID: "vm-a1", Account: "acct-a", State: "running", CreatedAt: t0})
	start := time.Now()
	rec := e.do("GET", "/v1/jobs/job-run?wait=250ms", e.alice, nil)
	wantStatus(t, rec, http.StatusOK)
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Fatalf("returned after %v", d)
	}
	if job := decode[api.Job](t, rec); job.State != "running" || job.Steps != nil {
		t.Fatalf("job = %+v", job)
	}
	for _, bad := range []string{"soon", "-1s"} {
		wantStatus(t, e.do("GET", "/v1/jobs/job-run?wait="+bad, e.alice, nil), http.StatusUnprocessableEntity)
	}
}

func TestWaitAfterStepAnswersOnProgress(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	e.rm.PutJob(readmodel.Job{ID: "job-p", VmID: "vm-a1", Account: "acct-a", State: "running", CreatedAt: t0})
	e.rm.AddStep(readmodel.JobStep{JobID: "job-p", Seq: 1, TaskState: "Scheduling", Text: "PlaceVm", At: t0})
	// A step above 0 exists: answer at once.
	start := time.Now()
	job := decode[api.Job](t, e.do("GET", "/v1/jobs/job-p?wait=10s&steps=1&after_step=0", e.alice, nil))
	if time.Since(start) > time.Second || len(job.Steps) != 1 {
		t.Fatalf("after_step=0 took %v, job %+v", time.Since(start), job)
	}
	// Nothing above 1 yet: wait for step 2.
	go func() {
		time.Sleep(200 * time.Millisecond)
		e.rm.AddStep(readmodel.JobStep{JobID: "job-p", Seq: 2, TaskState: "Spawning", Text: "StartVm sent to host-1", At: t0})
	}()
	start = time.Now()
	job = decode[api.Job](t, e.do("GET", "/v1/jobs/job-p?wait=10s&steps=1&after_step=1", e.alice, nil))
	if took := time.Since(start); took < 150*time.Millisecond || took > 2*time.Second || len(job.Steps) != 2 || job.State != "running" {
		t.Fatalf("after_step=1 took %v, job %+v", took, job)
	}
	wantStatus(t, e.do("GET", "/v1/jobs/job-p?after_step=x", e.alice, nil), http.StatusUnprocessableEntity)
}

// watcher is a JobWatcher the test wakes by hand.
type watcher struct {
	mu      sync.Mutex
	watches map[string]chan *readmodel.Job
	steps   bool // the last Watch asked for steps
}

func (w *watcher) Watch(id string, steps bool) (<-chan *readmodel.Job, func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.steps = steps
	ch := make(chan *readmodel.Job, 1)
	w.watches[id] = ch
	return ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.watches, id)
	}
}

// wake signals the watcher of id once it watches; it says whether one did.
func (w *watcher) wake(id string) bool { return w.tell(id, nil) }

// tell hands row (nil: read again) to the watcher of id once it watches;
// it says whether one did.
func (w *watcher) tell(id string, row *readmodel.Job) bool {
	for range 500 {
		w.mu.Lock()
		ch, ok := w.watches[id]
		w.mu.Unlock()
		if ok {
			ch <- row
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// TestWaitWakesOnJobChange: with re-reads an hour apart, a long-poll
// answers when JobChanges says the job changed, and a wait that ends
// without news answers at its end, not at the next re-read.
func TestWaitWakesOnJobChange(t *testing.T) {
	w := &watcher{watches: map[string]chan *readmodel.Job{}}
	e := newEnv(t, gateway.Config{JobChanges: w, PollEvery: time.Hour})
	e.rm.PutJob(readmodel.Job{ID: "job-w", VmID: "vm-a1", Account: "acct-a", State: "running", CreatedAt: t0})
	woke := make(chan bool, 1)
	go func() {
		// Not yet final: a wake-up re-reads and keeps waiting.
		if !w.wake("job-w") {
			woke <- false
			return
		}
		time.Sleep(100 * time.Millisecond)
		e.rm.PutJob(readmodel.Job{ID: "job-w", VmID: "vm-a1", Account: "acct-a", State: "succeeded", CreatedAt: t0, FinishedAt: &t0})
		woke <- w.wake("job-w")
	}()
	start := time.Now()
	job := decode[api.Job](t, e.do("GET", "/v1/jobs/job-w?wait=30s", e.alice, nil))
	if ok := <-woke; !ok {
		t.Fatal("the long-poll never watched the job")
	}
	if took := time.Since(start); job.State != "succeeded" || took > 10*time.Second {
		t.Fatalf("answered %s after %v; want succeeded at the wake-up", job.State, took)
	}
	if w.steps {
		t.Fatal("a wait without after_step watched steps")
	}

	start = time.Now()
	wantStatus(t, e.do("GET", "/v1/jobs/job-none?wait=300ms", e.alice, nil), http.StatusNotFound)
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("a wait of 300ms answered after %v", took)
	}

	// A handed-over ended row is the answer, without reading the read
	// model again (which here still says running)...
	e.rm.PutJob(readmodel.Job{ID: "job-h", VmID: "vm-a1", Account: "acct-a", State: "running", CreatedAt: t0})
	ended := readmodel.Job{ID: "job-h", VmID: "vm-a1", Account: "acct-a", State: "failed", Reason: "AgentError", CreatedAt: t0, FinishedAt: &t0}
	told := make(chan bool, 1)
	go func() { told <- w.tell("job-h", &ended) }()
	job = decode[api.Job](t, e.do("GET", "/v1/jobs/job-h?wait=30s", e.alice, nil))
	if !<-told || job.State != "failed" || job.Reason != "AgentError" {
		t.Fatalf("answered %+v; want the handed-over row", job)
	}
	// ...and is another account's job to anyone else.
	mallory := readmodel.Job{ID: "job-h", VmID: "vm-b1", Account: "acct-b", State: "succeeded", CreatedAt: t0, FinishedAt: &t0}
	go func() { told <- w.tell("job-h", &mallory) }()
	wantStatus(t, e.do("GET", "/v1/jobs/job-h?wait=30s", e.alice, nil), http.StatusNotFound)
	if !<-told {
		t.Fatal("the long-poll never watched the job")
	}
}

// TestWaitParameter: a wait beyond what a duration holds waits the most
// allowed, like any wait above it; a negative or malformed one is a 422
// that says what is expected.
func TestWaitParameter(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	for _, tc := range []struct {
		query, message string
	}{
		{"wait=99999999999", ""},
		{"wait=99999999999999999999999", ""},
		{"wait=9999999999999h", ""},
		{"wait=2562048h", ""},
		{"wait=90", ""},
		{"wait=1.5s", ""},
		{"wait=-5", "must not be negative"},
		{"wait=-5s", "must not be negative"},
		{"wait=soon", "must be a duration such as 30s or a number of seconds (at most 1m0s is waited)"},
		{"wait=5x", "must be a duration such as 30s"},
		{"after_step=99999999999", "after_step must be a step number from 0 to 2147483647"},
	} {
		rec := e.do("GET", "/v1/jobs/job-a1?"+tc.query, e.alice, nil)
		if tc.message == "" {
			wantStatus(t, rec, http.StatusOK)
			continue
		}
		wantStatus(t, rec, http.StatusUnprocessableEntity)
		if msg := decode[api.ErrorResponse](t, rec).Error.Message; !strings.Contains(msg, tc.message) {
			t.Errorf("%s: %q, want %q", tc.query, msg, tc.message)
		}
	}
}

// A bulk job (a host's maintenance) shows its progress from its last step
// and its children with their states; only admins see an operator's job.
func TestBulkJobProgressAndChildren(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	e.rm.PutJob(readmodel.Job{ID: "cmd-m1", Type: "PrepareForMaintenance", State: "running", CreatedAt: t0})
	e.rm.AddStep(readmodel.JobStep{JobID: "cmd-m1", Seq: 1, TaskState: "Draining", Step: "drain", At: t0,
		Obj: `{"children":["maint:h1:1:vm-a1","maint:h1:1:vm-b1","maint:h1:1:vm-c1"],"done":0,"total":3}`})
	e.rm.AddStep(readmodel.JobStep{JobID: "cmd-m1", Seq: 2, TaskState: "Draining", Step: "migrated", At: t0,
		Obj: `{"child":"maint:h1:1:vm-a1","done":1,"total":3}`})
	e.rm.PutJob(readmodel.Job{ID: "maint:h1:1:vm-a1", VmID: "vm-a1", Account: "acct-a", Type: "Migrate", State: "succeeded", CreatedAt: t0})
	e.rm.PutJob(readmodel.Job{ID: "maint:h1:1:vm-b1", VmID: "vm-b1", Account: "acct-b", Type: "Migrate", State: "running", CreatedAt: t0})

	j := decode[api.Job](t, e.do("GET", "/v1/jobs/cmd-m1", e.admin, nil))
	if j.Progress == nil || *j.Progress != (api.Progress{Done: 1, Total: 3, Percent: 33}) {
		t.Errorf("progress %+v", j.Progress)
	}
	want := []api.JobChild{{ID: "maint:h1:1:vm-a1", VmID: "vm-a1", Type: "Migrate", State: "succeeded"},
		{ID: "maint:h1:1:vm-b1", VmID: "vm-b1", Type: "Migrate", State: "running"}, {ID: "maint:h1:1:vm-c1", State: "pending"}}
	if !slices.Equal(j.Children, want) {
		t.Errorf("children %+v, want %+v", j.Children, want)
	}
	wantStatus(t, e.do("GET", "/v1/jobs/cmd-m1", e.alice, nil), http.StatusNotFound)
	// A deploy measures its steps: at its last, 3 of 4 are done; once it
	// succeeded, all are.
	e.rm.PutJob(readmodel.Job{ID: "job-d", VmID: "vm-a1", Account: "acct-a", Type: "Deploy", State: "running", CreatedAt: t0})
	e.rm.AddStep(readmodel.JobStep{JobID: "job-d", Seq: 4, TaskState: "Spawning", Step: "spawn", At: t0, Obj: `{"done":3,"total":4}`})
	if j := decode[api.Job](t, e.do("GET", "/v1/jobs/job-d", e.alice, nil)); j.Progress == nil || *j.Progress != (api.Progress{Done: 3, Total: 4, Percent: 75}) {
		t.Errorf("running deploy: %+v", j.Progress)
	}
	e.rm.PutJob(readmodel.Job{ID: "job-d", VmID: "vm-a1", Account: "acct-a", Type: "Deploy", State: "succeeded", CreatedAt: t0, FinishedAt: &t0})
	if j := decode[api.Job](t, e.do("GET", "/v1/jobs/job-d", e.alice, nil)); j.Progress == nil || *j.Progress != (api.Progress{Done: 4, Total: 4, Percent: 100}) {
		t.Errorf("succeeded deploy: %+v", j.Progress)
	}
	// A VM's job without a measure has no progress and no children.
	if j := decode[api.Job](t, e.do("GET", "/v1/jobs/job-a1", e.alice, nil)); j.Progress != nil || j.Children != nil {
		t.Errorf("job-a1: %+v", j)
	}
}
