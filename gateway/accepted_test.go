package gateway_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

// TestActAtOnceOnADeployedVM is issue 28's race made deterministic: the
// projector never runs here, so the read model never has the VM or its
// job, as for the moment after a 202. Every route that looks the VM or
// the job up finds it as it was accepted — the owner and an admin do,
// another account gets the 404 it gets for a projected VM — and the
// commands that follow are keyed by the VM, behind the Deploy.
func TestActAtOnceOnADeployedVM(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	rec := e.do("POST", "/v1/vms", e.alice, map[string]any{"name": "web-2", "offering": "ha-medium"})
	wantStatus(t, rec, http.StatusAccepted)
	deploy := decode[api.Job](t, rec)
	vmPath, jobPath := "/v1/vms/"+deploy.VmID, "/v1/jobs/"+deploy.ID

	rec = e.do("GET", vmPath, e.alice, nil)
	wantStatus(t, rec, http.StatusOK)
	vm := decode[api.VM](t, rec)
	want := api.VM{ID: deploy.VmID, Name: "web-2", Account: "acct-a", Offering: "ha-medium", VmState: "Building",
		PowerState: "PowerUnknown", LegacyState: "Starting", AllowedActions: []string{}, HA: true,
		CreatedAt: deploy.CreatedAt, UpdatedAt: deploy.CreatedAt, CPU: 2, MemoryMB: 4096, ZoneID: "zone-1", JobID: deploy.ID,
		Volumes: []api.Volume{}, Nics: []api.Nic{}}
	if !equalJSON(t, vm, want) {
		t.Fatalf("accepted VM %+v\nwant %+v", vm, want)
	}
	etag := rec.Header().Get("ETag")
	if etag != `"-1"` {
		t.Fatalf("ETag of an accepted VM %s", etag)
	}
	wantStatus(t, e.do("GET", vmPath, e.alice, nil, "If-None-Match", etag), http.StatusNotModified)
	wantStatus(t, e.do("GET", vmPath, e.admin, nil), http.StatusOK)
	wantStatus(t, e.do("GET", vmPath+"/snapshots", e.alice, nil), http.StatusOK)

	rec = e.do("GET", jobPath, e.alice, nil)
	wantStatus(t, rec, http.StatusOK)
	if j := decode[api.Job](t, rec); j.ID != deploy.ID || j.VmID != deploy.VmID || j.Type != "Deploy" || j.State != api.JobPending ||
		!j.CreatedAt.Equal(deploy.CreatedAt) || j.Origin != "api" {
		t.Fatalf("accepted job %+v, 202 %+v", j, deploy)
	}
	wantStatus(t, e.do("GET", jobPath+"?wait=50ms", e.alice, nil), http.StatusOK)
	wantStatus(t, e.do("GET", jobPath+"/journal", e.alice, nil), http.StatusOK)

	// Another account: a 404, for every route, as for a projected VM.
	for _, r := range []struct{ method, path, body string }{
		{"GET", vmPath, ""}, {"DELETE", vmPath, ""}, {"POST", vmPath + "/actions", `{"action":"stop"}`},
		{"GET", vmPath + "/snapshots", ""}, {"GET", jobPath, ""}, {"GET", jobPath + "?wait=50ms", ""},
		{"GET", jobPath + "/journal", ""}, {"POST", jobPath + "/cancel", ""},
	} {
		var body any
		if r.body != "" {
			body = r.body
		}
		if rec := e.do(r.method, r.path, e.bob, body); rec.Code != http.StatusNotFound {
			t.Fatalf("bob %s %s: %d %s", r.method, r.path, rec.Code, rec.Body.String())
		}
	}

	// The owner acts at once: the VM allows no action the read model knows
	// of yet, so the processor judges each (it queues a stop behind the
	// deploy; a terminate cancels both).
	rec = e.do("POST", vmPath+"/actions", e.alice, map[string]any{"action": "stop"})
	wantStatus(t, rec, http.StatusAccepted)
	stop := decode[api.Job](t, rec)
	wantStatus(t, e.do("POST", jobPath+"/cancel", e.alice, nil), http.StatusAccepted)
	rec = e.do("DELETE", vmPath, e.alice, nil)
	wantStatus(t, rec, http.StatusAccepted)
	terminate := decode[api.Job](t, rec)
	if terminate.VmID != deploy.VmID || terminate.Type != "Terminate" {
		t.Fatalf("terminate %+v", terminate)
	}
	for _, id := range []string{stop.ID, terminate.ID} {
		if rec := e.do("GET", "/v1/jobs/"+id, e.alice, nil); rec.Code != http.StatusOK || decode[api.Job](t, rec).State != api.JobPending {
			t.Fatalf("job %s right after its 202: %d %s", id, rec.Code, rec.Body.String())
		}
	}
	// The accepted terminate is no job to cancel, as a projected one.
	wantStatus(t, e.do("POST", "/v1/jobs/"+terminate.ID+"/cancel", e.alice, nil), http.StatusConflict)

	var types []string
	for _, r := range e.pub.Records() {
		if r.Key != deploy.VmID || r.Topic != schemas.TopicVmCommands {
			t.Fatalf("record %s keyed %s, want %s on %s", schemas.TypeName(r.Value), r.Key, deploy.VmID, schemas.TopicVmCommands)
		}
		if c, ok := r.Value.(schemas.VmCommandRecord); ok && c.Common().Account != "acct-a" {
			t.Fatalf("%s for account %q", schemas.TypeName(r.Value), c.Common().Account)
		}
		types = append(types, schemas.TypeName(r.Value))
	}
	if want := []string{"Deploy", "Stop", "CancelJob", "Terminate"}; !slices.Equal(types, want) {
		t.Fatalf("published %v, want %v", types, want)
	}

	// The projector's rows, once they come, answer instead.
	e.rm.PutVM(readmodel.VM{ID: deploy.VmID, Name: "web-2", Account: "acct-a", VmState: "Building", TaskState: "Scheduling",
		AllowedActions: []string{"terminate"}, Version: 9})
	e.rm.PutJob(readmodel.Job{ID: deploy.ID, VmID: deploy.VmID, Account: "acct-a", Type: "Deploy", State: api.JobCancelled})
	if vm := decode[api.VM](t, e.do("GET", vmPath, e.alice, nil)); vm.TaskState != "Scheduling" {
		t.Fatalf("projected VM %+v", vm)
	}
	if j := decode[api.Job](t, e.do("GET", jobPath, e.alice, nil)); j.State != api.JobCancelled {
		t.Fatalf("projected job %+v", j)
	}
	wantStatus(t, e.do("POST", vmPath+"/actions", e.alice, map[string]any{"action": "stop"}), http.StatusConflict)
}

// TestActAtOnceOnACreatedLease: a lease is found at once after its 202,
// as it answered, by its project only; PUT and DELETE go behind the
// create, keyed by its zone.
func TestActAtOnceOnACreatedLease(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	future := time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339)
	rec := e.do("POST", "/v1/leases", e.alice, map[string]any{"name": "lab", "end": future,
		"reservations": []map[string]any{{"min_hosts": 1, "max_hosts": 2, "host_properties": map[string]string{"gpu": "yes"}}}})
	wantStatus(t, rec, http.StatusAccepted)
	created := decode[api.Lease](t, rec)
	path := "/v1/leases/" + created.ID

	rec = e.do("GET", path, e.alice, nil)
	wantStatus(t, rec, http.StatusOK)
	if got := decode[api.Lease](t, rec); !equalJSON(t, got, created) {
		t.Fatalf("accepted lease %+v\n202 %+v", got, created)
	}
	wantStatus(t, e.do("GET", path+"/events", e.alice, nil), http.StatusOK)
	wantStatus(t, e.do("GET", path, e.bob, nil), http.StatusNotFound)
	wantStatus(t, e.do("DELETE", path, e.bob, nil), http.StatusNotFound)
	wantStatus(t, e.do("PUT", path, e.alice, map[string]any{"end": time.Now().Add(3 * time.Hour).UTC().Format(time.RFC3339)}), http.StatusAccepted)
	wantStatus(t, e.do("DELETE", path, e.alice, nil), http.StatusAccepted)
	var types []string
	for _, r := range e.pub.Records() {
		if r.Key != "zone-1" {
			t.Fatalf("%s keyed %s", schemas.TypeName(r.Value), r.Key)
		}
		types = append(types, schemas.TypeName(r.Value))
	}
	if want := []string{"CreateLease", "UpdateLease", "DeleteLease"}; !slices.Equal(types, want) {
		t.Fatalf("published %v, want %v", types, want)
	}
}

// failingAccepted refuses every record.
type failingAccepted struct{}

func (failingAccepted) Put(context.Context, ...readmodel.AcceptedRow) error {
	return errors.New("database down")
}

func (failingAccepted) Get(context.Context, string, string) (readmodel.AcceptedRow, error) {
	return readmodel.AcceptedRow{}, readmodel.ErrNotFound
}

// TestUnrecordedIDsAreNotHandedOut: an id the gateway cannot record is
// not handed out, and its command not written: a 503 to retry.
func TestUnrecordedIDsAreNotHandedOut(t *testing.T) {
	e := newEnv(t, gateway.Config{Accepted: failingAccepted{}})
	wantStatus(t, e.do("POST", "/v1/vms", e.alice, map[string]any{"name": "web-2", "offering": "small"}), http.StatusServiceUnavailable)
	wantStatus(t, e.do("POST", "/v1/vms/vm-a1/actions", e.alice, map[string]any{"action": "stop"}), http.StatusServiceUnavailable)
	future := time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339)
	wantStatus(t, e.do("POST", "/v1/leases", e.alice, map[string]any{"name": "lab", "end": future,
		"reservations": []map[string]any{{"min_hosts": 1}}}), http.StatusServiceUnavailable)
	if n := len(e.pub.Records()); n != 0 {
		t.Fatalf("%d records published", n)
	}
}
