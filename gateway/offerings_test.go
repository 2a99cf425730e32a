package gateway_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

func TestUpdateOffering(t *testing.T) {
	tests := []struct {
		name   string
		path   string
		admin  bool
		body   any
		status int
		field  string
		want   func(o *schemas.ServiceOffering) bool
	}{
		{"planner, by name", "/v1/offerings/small", true, map[string]any{"deployment_planner": "UserDispersingPlanner"}, http.StatusOK, "",
			func(o *schemas.ServiceOffering) bool {
				return o.ID == "off-small" && o.Name == "small" && o.DeploymentPlanner == "UserDispersingPlanner" &&
					o.CPU == 1 && o.MemoryMB == 1024 && slices.Equal(o.HostTags, []string{"ssd"}) && o.CreatedAt == t0.UnixMilli()
			}},
		{"name, ha and tags", "/v1/offerings/off-small", true, map[string]any{"name": "smaller", "ha": true, "host_tags": []string{}}, http.StatusOK, "",
			func(o *schemas.ServiceOffering) bool {
				return o.ID == "off-small" && o.Name == "smaller" && o.HA && len(o.HostTags) == 0
			}},
		{"the same size is no change", "/v1/offerings/off-small", true, map[string]any{"cpu": 1, "memory_mb": 1024, "ha": true}, http.StatusOK, "",
			func(o *schemas.ServiceOffering) bool { return o.HA && o.CPU == 1 }},
		{"cpu", "/v1/offerings/off-small", true, map[string]any{"cpu": 2}, http.StatusUnprocessableEntity, "cpu", nil},
		{"memory", "/v1/offerings/off-small", true, map[string]any{"memory_mb": 2048}, http.StatusUnprocessableEntity, "memory_mb", nil},
		{"unknown planner", "/v1/offerings/off-small", true, map[string]any{"deployment_planner": "Nope"}, http.StatusUnprocessableEntity, "deployment_planner", nil},
		{"bad name", "/v1/offerings/off-small", true, map[string]any{"name": "Big One"}, http.StatusUnprocessableEntity, "name", nil},
		{"name taken", "/v1/offerings/off-small", true, map[string]any{"name": "ha-medium"}, http.StatusConflict, "", nil},
		{"unknown field", "/v1/offerings/off-small", true, map[string]any{"zone": "z"}, http.StatusUnprocessableEntity, "zone", nil},
		{"no such offering", "/v1/offerings/nope", true, map[string]any{"ha": true}, http.StatusNotFound, "", nil},
		{"user may not", "/v1/offerings/off-small", false, map[string]any{"ha": true}, http.StatusForbidden, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, gateway.Config{})
			e.rm.PutOffering(readmodel.Offering{ID: "off-small", Name: "small", CPU: 1, MemoryMB: 1024, HostTags: []string{"ssd"}, CreatedAt: t0})
			key := e.alice
			if tt.admin {
				key = e.admin
			}
			rec := e.do(http.MethodPatch, tt.path, key, tt.body)
			wantStatus(t, rec, tt.status)
			if tt.field != "" {
				if b := decode[api.ErrorResponse](t, rec); b.Error.Details["field"] != tt.field {
					t.Fatalf("error names %v, want %s", b.Error.Details, tt.field)
				}
			}
			recs := e.pub.Records()
			if tt.want == nil {
				if len(recs) != 0 {
					t.Fatalf("published %+v", recs)
				}
				return
			}
			if len(recs) != 1 || recs[0].Topic != schemas.TopicCatalog || recs[0].Key != "off-small" {
				t.Fatalf("want one catalog.v1 record keyed off-small, got %+v", recs)
			}
			if so := recs[0].Value.(*schemas.ServiceOffering); so.Deleted || !tt.want(so) {
				t.Fatalf("published %+v", so)
			}
			if o := decode[api.Offering](t, rec); o.ID != "off-small" {
				t.Fatalf("answered %+v", o)
			}
		})
	}
}

// TestDeployAfterUpdateUsesThePlanner: a deploy embeds the offering as the
// read model has it, so once the projector has an update, new VMs carry
// its planner.
func TestDeployAfterUpdateUsesThePlanner(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	wantStatus(t, e.do(http.MethodPatch, "/v1/offerings/small", e.admin, map[string]any{"deployment_planner": "UserDispersingPlanner"}), http.StatusOK)
	so := e.pub.Records()[0].Value.(*schemas.ServiceOffering)
	e.rm.PutOffering(readmodel.Offering{ID: so.ID, Name: so.Name, CPU: so.CPU, MemoryMB: so.MemoryMB, HA: so.HA,
		DeploymentPlanner: so.DeploymentPlanner, HostTags: so.HostTags, CreatedAt: time.UnixMilli(so.CreatedAt)})
	wantStatus(t, e.do(http.MethodPost, "/v1/vms", e.alice, map[string]any{"name": "web-2", "offering": "small"}), http.StatusAccepted)
	recs := e.pub.Records()
	d, ok := recs[len(recs)-1].Value.(*schemas.Deploy)
	if !ok || d.Offering.DeploymentPlanner != "UserDispersingPlanner" || d.Offering.ID != "off-small" {
		t.Fatalf("deploy published %+v", recs[len(recs)-1].Value)
	}
}

func TestDeleteOffering(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	// vm-a1 is of small; a Deleted VM counts too, since it may be recovered.
	e.rm.PutVM(readmodel.VM{ID: "vm-gone", Account: "acct-a", OfferingID: "off-ha", VmState: "Deleted"})
	rec := e.do(http.MethodDelete, "/v1/offerings/small", e.admin, nil)
	wantStatus(t, rec, http.StatusConflict)
	if b := decode[api.ErrorResponse](t, rec); b.Error.Details["vms"] != float64(1) {
		t.Fatalf("409 details %v", b.Error.Details)
	}
	wantStatus(t, e.do(http.MethodDelete, "/v1/offerings/ha-medium", e.admin, nil), http.StatusConflict)
	wantStatus(t, e.do(http.MethodDelete, "/v1/offerings/nope", e.admin, nil), http.StatusNotFound)
	e.rm.PutOffering(readmodel.Offering{ID: "off-spare", Name: "spare", CPU: 4, MemoryMB: 8192})
	wantStatus(t, e.do(http.MethodDelete, "/v1/offerings/spare", e.alice, nil), http.StatusForbidden)
	if recs := e.pub.Records(); len(recs) != 0 {
		t.Fatalf("refused deletes published %+v", recs)
	}
	rec = e.do(http.MethodDelete, "/v1/offerings/spare", e.admin, nil)
	wantStatus(t, rec, http.StatusOK)
	recs := e.pub.Records()
	if len(recs) != 1 || recs[0].Key != "off-spare" {
		t.Fatalf("published %+v", recs)
	}
	if so := recs[0].Value.(*schemas.ServiceOffering); !so.Deleted || so.ID != "off-spare" {
		t.Fatalf("published %+v", so)
	}
	if o := decode[api.Offering](t, rec); o.Name != "spare" {
		t.Fatalf("answered %+v", o)
	}
}

func TestListSnapshots(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	e.rm.PutSnapshot(readmodel.Snapshot{VmID: "vm-a1", Name: "before", Account: "acct-a", JobID: "j1", TakenAt: t0})
	e.rm.PutSnapshot(readmodel.Snapshot{VmID: "vm-a1", Name: "after", Account: "acct-a", JobID: "j2", TakenAt: t0.Add(time.Minute)})
	rec := e.do(http.MethodGet, "/v1/vms/vm-a1/snapshots", e.alice, nil)
	wantStatus(t, rec, http.StatusOK)
	l := decode[api.List[api.Snapshot]](t, rec)
	if len(l.Items) != 2 || l.Items[0].Name != "before" || l.Items[1].JobID != "j2" || !l.Items[0].TakenAt.Equal(t0) {
		t.Fatalf("snapshots %+v", l.Items)
	}
	wantStatus(t, e.do(http.MethodGet, "/v1/vms/vm-a1/snapshots", e.bob, nil), http.StatusNotFound)
	rec = e.do(http.MethodGet, "/v1/vms/vm-b1/snapshots", e.bob, nil)
	wantStatus(t, rec, http.StatusOK)
	if l := decode[api.List[api.Snapshot]](t, rec); len(l.Items) != 0 {
		t.Fatalf("vm-b1 snapshots %+v", l.Items)
	}
}
