package gateway_test

import (
	"net/http"
	"testing"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/readmodel"
)

func TestListFilters(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	e.rm.PutJob(readmodel.Job{ID: "job-a2", VmID: "vm-a1", Account: "acct-a", Type: "Reboot", State: "running", CreatedAt: t0})
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
