package gateway_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

func TestCreateOffering(t *testing.T) {
	tests := []struct {
		name   string
		key    func(e *env) string
		body   any
		status int
		field  string
	}{
		{"admin creates", func(e *env) string { return e.admin }, map[string]any{"name": "ded", "cpu": 2, "memory_mb": 2048,
			"deployment_planner": "ImplicitDedicationPlanner", "planner_mode": "Preferred", "host_tags": []string{"ssd"}}, http.StatusCreated, ""},
		{"user may not", func(e *env) string { return e.alice }, map[string]any{"name": "x", "cpu": 1, "memory_mb": 1}, http.StatusForbidden, ""},
		{"unknown planner", func(e *env) string { return e.admin }, map[string]any{"name": "x", "cpu": 1, "memory_mb": 1,
			"deployment_planner": "Nope"}, http.StatusUnprocessableEntity, "deployment_planner"},
		{"bad mode", func(e *env) string { return e.admin }, map[string]any{"name": "x", "cpu": 1, "memory_mb": 1,
			"planner_mode": "Loose"}, http.StatusUnprocessableEntity, "planner_mode"},
		{"no cpu", func(e *env) string { return e.admin }, map[string]any{"name": "x", "memory_mb": 1}, http.StatusUnprocessableEntity, "cpu"},
		{"bad name", func(e *env) string { return e.admin }, map[string]any{"name": "Big One", "cpu": 1, "memory_mb": 1}, http.StatusUnprocessableEntity, "name"},
		{"name taken", func(e *env) string { return e.admin }, map[string]any{"name": "small", "cpu": 1, "memory_mb": 1}, http.StatusConflict, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, gateway.Config{})
			rec := e.do(http.MethodPost, "/v1/offerings", tt.key(e), tt.body)
			wantStatus(t, rec, tt.status)
			if tt.field != "" {
				if b := decode[api.ErrorResponse](t, rec); b.Error.Details["field"] != tt.field {
					t.Fatalf("error names %v, want %s", b.Error.Details, tt.field)
				}
			}
			recs := e.pub.Records()
			if tt.status != http.StatusCreated {
				if len(recs) != 0 {
					t.Fatalf("published %+v", recs)
				}
				return
			}
			o := decode[api.Offering](t, rec)
			if len(recs) != 1 || recs[0].Topic != schemas.TopicCatalog || recs[0].Key != o.ID {
				t.Fatalf("want one catalog.v1 record keyed %s, got %+v", o.ID, recs)
			}
			so := recs[0].Value.(*schemas.ServiceOffering)
			if so.DeploymentPlanner != "ImplicitDedicationPlanner" || so.PlannerMode != "Preferred" || so.CPU != 2 || so.Name != "ded" {
				t.Fatalf("published %+v", so)
			}
		})
	}
}

// TestRacingOfferingCreates: creates of one name that all pass the check
// before the projector has any of them are one offering: the same id, so
// the same key of the compacted catalog.v1, never two of one name.
func TestRacingOfferingCreates(t *testing.T) {
	e := newEnv(t, gateway.Config{RatePerSecond: -1})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			rec := e.do(http.MethodPost, "/v1/offerings", e.admin, map[string]any{"name": "racy", "cpu": i + 1, "memory_mb": 512})
			if rec.Code != http.StatusCreated {
				t.Errorf("create %d: %d %s", i, rec.Code, rec.Body.String())
			}
		})
	}
	wg.Wait()
	recs := e.pub.Records()
	if len(recs) != 8 {
		t.Fatalf("%d records", len(recs))
	}
	for _, r := range recs {
		if r.Key != "off-racy" || r.Value.(*schemas.ServiceOffering).ID != "off-racy" {
			t.Fatalf("offering keyed %q id %q, want off-racy", r.Key, r.Value.(*schemas.ServiceOffering).ID)
		}
	}
	e.rm.PutOffering(readmodel.Offering{ID: "off-racy", Name: "racy", CPU: 1, MemoryMB: 512})
	wantStatus(t, e.do(http.MethodPost, "/v1/offerings", e.admin, map[string]any{"name": "racy", "cpu": 1, "memory_mb": 512}), http.StatusConflict)
	got := e.do(http.MethodGet, "/v1/offerings/racy", e.alice, nil)
	wantStatus(t, got, http.StatusOK)
	if o := decode[api.Offering](t, got); o.ID != "off-racy" {
		t.Fatalf("GET by name: %+v", o)
	}
	wantStatus(t, e.do(http.MethodGet, "/v1/offerings/off-racy", e.alice, nil), http.StatusOK)
	wantStatus(t, e.do(http.MethodGet, "/v1/offerings/nope", e.alice, nil), http.StatusNotFound)
}

func TestListPlanners(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	rec := e.do(http.MethodGet, "/v1/planners", e.alice, nil)
	wantStatus(t, rec, http.StatusOK)
	l := decode[api.List[api.Planner]](t, rec)
	if len(l.Items) != len(schemas.Planners) {
		t.Fatalf("planners %+v", l.Items)
	}
	defaults := 0
	for _, p := range l.Items {
		if p.Default {
			defaults++
			if p.Name != "FirstFitPlanner" {
				t.Fatalf("default %s", p.Name)
			}
		}
		if p.Description == "" || (p.ResourceUsage != "Shared" && p.ResourceUsage != "Dedicated") {
			t.Fatalf("planner %+v", p)
		}
	}
	if defaults != 1 {
		t.Fatalf("%d defaults", defaults)
	}
}
