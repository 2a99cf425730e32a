package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

// cancel plays the processor and projector for a CancelJob: the job ends
// cancelled a little later, saying by whom.
func (s *stack) cancel(c *schemas.CancelJob) {
	time.Sleep(100 * time.Millisecond)
	j, err := s.rm.Job(context.Background(), c.JobID)
	if err != nil {
		return
	}
	fin := time.Now().UTC()
	j.State, j.FinishedAt = "cancelled", &fin
	j.Reason, j.Detail = "Cancelled by "+c.By, "stopped before it sent an agent command; the VM is Active on host host-2"
	s.rm.PutJob(j)
}

func TestJobCancelWaitsForTheEnd(t *testing.T) {
	s := newStack(t)
	t0 := time.Now().UTC()
	s.rm.PutJob(readmodel.Job{ID: "job-m1", VmID: "vm-1", Account: "acct-a", Type: "Migrate", State: "running", TaskState: "Scheduling", CreatedAt: t0})
	code, out, errs := s.run(t, s.user, "job", "cancel", "job-m1", "--reason", "wrong host", "--wait")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	want := []string{
		`^cancel of job job-m1 \(Migrate, running, Scheduling\) accepted for VM vm-1$`,
		`^job job-m1 Migrate cancelled in \S+: Cancelled by key \S+ of account acct-a \(stopped before it sent an agent command; the VM is Active on host host-2\)$`,
	}
	wantLines(t, out, want)

	// job get shows the end and who cancelled.
	code, out, _ = s.run(t, s.user, "job", "get", "job-m1")
	if code != 0 || !regexp.MustCompile(`(?m)^state:\s+cancelled$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^reason:\s+Cancelled by key \S+ of account acct-a \(stopped before it sent`).MatchString(out) {
		t.Fatalf("exit %d, job get:\n%s", code, out)
	}

	// A job that has ended cannot be cancelled: the API's 409 says why.
	code, _, errs = s.run(t, s.user, "job", "cancel", "job-m1")
	if code != 1 || !strings.Contains(errs, "has ended (cancelled)") {
		t.Fatalf("exit %d, stderr %s", code, errs)
	}
}
