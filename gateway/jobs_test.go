package gateway_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/projectors/postgres"
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
	id := decode[gateway.Job](t, rec).ID

	// Play the processor and projector: the job appears, steps, ends.
	go func() {
		time.Sleep(150 * time.Millisecond)
		e.rm.PutJob(postgres.Job{ID: id, VmID: "vm-a1", Account: "acct-a", Type: "Reboot", State: "running", TaskState: "Rebooting", CreatedAt: t0})
		e.rm.AddStep(postgres.JobStep{JobID: id, Seq: 1, TaskState: "Rebooting", Step: "RebootVm", Text: "RebootVm sent to host-1", At: t0})
		time.Sleep(150 * time.Millisecond)
		end := t0.Add(time.Second)
		e.rm.PutJob(postgres.Job{ID: id, VmID: "vm-a1", Account: "acct-a", Type: "Reboot", State: "succeeded", CreatedAt: t0, FinishedAt: &end})
	}()
	start := time.Now()
	rec = e.do("GET", "/v1/jobs/"+id+"?wait=10s&steps=1", e.alice, nil)
	took := time.Since(start)
	wantStatus(t, rec, http.StatusOK)
	job := decode[gateway.Job](t, rec)
	if job.State != "succeeded" || job.FinishedAt == nil || len(job.Steps) != 1 || job.Steps[0].Text != "RebootVm sent to host-1" {
		t.Fatalf("job = %+v", job)
	}
	if took < 250*time.Millisecond || took > 2*time.Second {
		t.Fatalf("wait took %v: it must last until the job ends and not much longer", took)
	}
}

func TestWaitEndsWithJobUnfinished(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	e.rm.PutJob(postgres.Job{ID: "job-run", VmID: "vm-a1", Account: "acct-a", State: "running", CreatedAt: t0})
	start := time.Now()
	rec := e.do("GET", "/v1/jobs/job-run?wait=250ms", e.alice, nil)
	wantStatus(t, rec, http.StatusOK)
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Fatalf("returned after %v", d)
	}
	if job := decode[gateway.Job](t, rec); job.State != "running" || job.Steps != nil {
		t.Fatalf("job = %+v", job)
	}
	for _, bad := range []string{"soon", "-1s"} {
		wantStatus(t, e.do("GET", "/v1/jobs/job-run?wait="+bad, e.alice, nil), http.StatusUnprocessableEntity)
	}
}

func TestWaitAfterStepAnswersOnProgress(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	e.rm.PutJob(postgres.Job{ID: "job-p", VmID: "vm-a1", Account: "acct-a", State: "running", CreatedAt: t0})
	e.rm.AddStep(postgres.JobStep{JobID: "job-p", Seq: 1, TaskState: "Scheduling", Text: "PlaceVm", At: t0})
	// A step above 0 exists: answer at once.
	start := time.Now()
	job := decode[gateway.Job](t, e.do("GET", "/v1/jobs/job-p?wait=10s&steps=1&after_step=0", e.alice, nil))
	if time.Since(start) > time.Second || len(job.Steps) != 1 {
		t.Fatalf("after_step=0 took %v, job %+v", time.Since(start), job)
	}
	// Nothing above 1 yet: wait for step 2.
	go func() {
		time.Sleep(200 * time.Millisecond)
		e.rm.AddStep(postgres.JobStep{JobID: "job-p", Seq: 2, TaskState: "Spawning", Text: "StartVm sent to host-1", At: t0})
	}()
	start = time.Now()
	job = decode[gateway.Job](t, e.do("GET", "/v1/jobs/job-p?wait=10s&steps=1&after_step=1", e.alice, nil))
	if took := time.Since(start); took < 150*time.Millisecond || took > 2*time.Second || len(job.Steps) != 2 || job.State != "running" {
		t.Fatalf("after_step=1 took %v, job %+v", took, job)
	}
	wantStatus(t, e.do("GET", "/v1/jobs/job-p?after_step=x", e.alice, nil), http.StatusUnprocessableEntity)
}
