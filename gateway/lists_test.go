package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/readmodel"
)

func TestListFilters(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	e.rm.PutJob(readmodel.Job{ID: "job-a2", VmID: "vm-a1", Account: "acct-a", Type: "Reboot", State: "running", CreatedAt: t0,
		CallerAccount: "acct-a", CallerKeyID: "k-alice", CallerRequestID: "req-7"})
	e.rm.AddStep(readmodel.JobStep{JobID: "job-a2", Seq: 2, TaskState: "Rebooting", Step: "wait", At: t0})
	e.rm.AddStep(readmodel.JobStep{JobID: "job-a2", Seq: 1, TaskState: "Rebooting", Step: "reboot", At: t0})
	e.rm.PutAlert(readmodel.Alert{ID: "al-1", Kind: "VmStateSync", VmID: "vm-a1", Account: "acct-a", Message: "paused", At: t0})
	e.rm.PutAlert(readmodel.Alert{ID: "al-2", Kind: "HAExhausted", VmID: "vm-b1", Account: "acct-b", At: t0})

	type list[T any] struct {
		Items []T `json:"items"`
	}
	cases := []struct {
		path, key string
		want      int
	}{
		{"/v1/vms?state=Active", "admin", 1},
		{"/v1/vms?state=Stopped", "admin", 1},
		{"/v1/vms?host=host-1", "admin", 1},
		{"/v1/vms?host=host-9", "admin", 0},
		{"/v1/vms?state=Stopped", "alice", 0},
		{"/v1/jobs?vm=vm-a1", "admin", 2},
		{"/v1/jobs?vm=vm-a1&state=running", "alice", 1},
		{"/v1/jobs", "bob", 1},
		{"/v1/jobs?key=k-alice", "admin", 1},
		{"/v1/jobs?key=k-alice", "bob", 0},
		{"/v1/jobs?key=k-other", "alice", 0},
		{"/v1/alerts", "admin", 2},
		{"/v1/alerts", "alice", 1},
		{"/v1/alerts?vm=vm-b1", "alice", 0},
		{"/v1/jobs/job-a2/journal", "alice", 2},
	}
	keys := map[string]string{"admin": e.admin, "alice": e.alice, "bob": e.bob}
	for _, c := range cases {
		rec := e.do("GET", c.path, keys[c.key], nil)
		wantStatus(t, rec, http.StatusOK)
		if n := len(decode[list[map[string]any]](t, rec).Items); n != c.want {
			t.Errorf("%s as %s: %d items, want %d", c.path, c.key, n, c.want)
		}
	}
	steps := decode[list[api.JobStep]](t, e.do("GET", "/v1/jobs/job-a2/journal", e.alice, nil)).Items
	if steps[0].Step != "reboot" || steps[1].Step != "wait" {
		t.Fatalf("journal out of order: %+v", steps)
	}
	wantStatus(t, e.do("GET", "/v1/jobs/job-a2/journal", e.bob, nil), http.StatusNotFound)
}

// TestJobShowsCallerAndErrorCode: a job names who asked and the code of
// its end beside the message; a job of records from before the caller
// was recorded has no caller.
func TestJobShowsCallerAndErrorCode(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	e.rm.PutJob(readmodel.Job{ID: "job-f", VmID: "vm-a1", Account: "acct-a", Type: "Start", State: "failed", CreatedAt: t0, FinishedAt: &t0,
		Reason: "Timeout", Detail: "StartVm on host h1: no answer", ErrorCode: "Timeout",
		CallerAccount: "ops", CallerKeyID: "k-ops", CallerRequestID: "req-9"})
	rec := e.do("GET", "/v1/jobs/job-f", e.alice, nil)
	wantStatus(t, rec, http.StatusOK)
	j := decode[api.Job](t, rec)
	if j.ErrorCode != "Timeout" || j.Caller == nil || *j.Caller != (api.JobCaller{Account: "ops", KeyID: "k-ops", RequestID: "req-9"}) {
		t.Fatalf("job = %+v, caller %+v", j, j.Caller)
	}
	rec = e.do("GET", "/v1/jobs/job-a1", e.alice, nil)
	wantStatus(t, rec, http.StatusOK)
	if body := rec.Body.String(); strings.Contains(body, `"caller"`) || strings.Contains(body, `"error_code"`) {
		t.Fatalf("a job with no caller and no error code: %s", body)
	}
}
