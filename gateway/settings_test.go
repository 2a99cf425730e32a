package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
	"github.com/vmplane/vmplane/schemas/settings"
)

func TestPutSetting(t *testing.T) {
	tests := []struct {
		name, path string
		key        func(e *env) string
		body       any
		status     int
		// scope and id of the published record; msg a part of the error.
		scope, id, msg string
	}{
		{"global", "ping.timeout", func(e *env) string { return e.admin }, map[string]any{"value": "20s"}, http.StatusAccepted, "global", "", ""},
		{"zone planner", "vm.deployment.planner", func(e *env) string { return e.admin },
			map[string]any{"value": "UserDispersingPlanner", "zone": "zone-1"}, http.StatusAccepted, "zone", "zone-1", ""},
		{"cluster ratio", "cpu.overprovisioning.factor", func(e *env) string { return e.admin },
			map[string]any{"value": "8", "cluster": "c1"}, http.StatusAccepted, "cluster", "c1", ""},
		{"user may not", "ping.timeout", func(e *env) string { return e.alice }, map[string]any{"value": "20s"}, http.StatusForbidden, "", "", ""},
		{"out of range", "ping.timeout", func(e *env) string { return e.admin }, map[string]any{"value": "2h"}, http.StatusUnprocessableEntity,
			"", "", "want duration 0s to 1h0m0s"},
		{"not a planner", "vm.deployment.planner", func(e *env) string { return e.admin }, map[string]any{"value": "UserDispersing"},
			http.StatusUnprocessableEntity, "", "", "one of FirstFitPlanner"},
		{"scope not allowed", "ping.timeout", func(e *env) string { return e.admin }, map[string]any{"value": "20s", "zone": "zone-1"},
			http.StatusUnprocessableEntity, "", "", "want global"},
		{"zone and cluster", "cpu.overprovisioning.factor", func(e *env) string { return e.admin },
			map[string]any{"value": "2", "zone": "zone-1", "cluster": "c1"}, http.StatusUnprocessableEntity, "", "", "not both"},
		{"bad zone id", "vm.deployment.planner", func(e *env) string { return e.admin },
			map[string]any{"value": "SpreadPlanner", "zone": "zone 1"}, http.StatusUnprocessableEntity, "", "", "zone"},
		{"no value", "ping.timeout", func(e *env) string { return e.admin }, map[string]any{}, http.StatusUnprocessableEntity, "", "", "DELETE"},
		{"unknown field", "ping.timeout", func(e *env) string { return e.admin }, map[string]any{"value": "20s", "scope": "global"},
			http.StatusUnprocessableEntity, "", "", `unknown field "scope"`},
		{"unknown setting", "ping.timeouts", func(e *env) string { return e.admin }, map[string]any{"value": "20s"}, http.StatusNotFound, "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, gateway.Config{})
			rec := e.do(http.MethodPut, "/v1/settings/"+tt.path, tt.key(e), tt.body)
			wantStatus(t, rec, tt.status)
			recs := e.pub.Records()
			if tt.status != http.StatusAccepted {
				if len(recs) != 0 {
					t.Fatalf("published %+v", recs)
				}
				if b := decode[api.ErrorResponse](t, rec); !strings.Contains(b.Error.Message, tt.msg) {
					t.Fatalf("error %q, want it to say %q", b.Error.Message, tt.msg)
				}
				return
			}
			if len(recs) != 1 || recs[0].Topic != schemas.TopicSettings || recs[0].Key != settings.Key(tt.scope, tt.id, tt.path) {
				t.Fatalf("want one settings.v1 record keyed %s, got %+v", settings.Key(tt.scope, tt.id, tt.path), recs)
			}
			c := recs[0].Value.(*schemas.SettingChanged)
			if c.Scope != tt.scope || c.ScopeID != tt.id || c.By != "ops" || c.Value != tt.body.(map[string]any)["value"] {
				t.Fatalf("published %+v", c)
			}
			if s := decode[api.Setting](t, rec); s.Value != c.Value || s.Scope != tt.scope {
				t.Fatalf("answer %+v, want the new value in effect at its scope", s)
			}
		})
	}
}

// The value in effect is the cluster's, else the zone's, else the global
// one, else the default; DELETE sets a scope back.
func TestSettingInEffect(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	const f = "cpu.overprovisioning.factor"
	for _, c := range []schemas.SettingChanged{
		{Name: f, Scope: "global", Value: "2", By: "ops"},
		{Name: f, Scope: "zone", ScopeID: "zone-1", Value: "3", By: "ops"},
		{Name: f, Scope: "cluster", ScopeID: "c1", Value: "5", By: "ops"},
	} {
		e.rm.PutSetting(c, readmodel.Setting{At: t0})
	}
	for _, tc := range []struct{ query, value, scope string }{
		{"", "2", "global"},
		{"?zone=zone-1", "3", "zone"},
		{"?zone=zone-1&cluster=c1", "5", "cluster"},
		{"?zone=zone-2&cluster=c2", "2", "global"},
	} {
		rec := e.do(http.MethodGet, "/v1/settings/"+f+tc.query, e.admin, nil)
		wantStatus(t, rec, http.StatusOK)
		s := decode[api.Setting](t, rec)
		if s.Value != tc.value || s.Scope != tc.scope || len(s.Values) != 3 || s.Range != "1 to 16" {
			t.Errorf("%s: %+v, want %s from %s", tc.query, s, tc.value, tc.scope)
		}
	}
	rec := e.do(http.MethodGet, "/v1/settings", e.admin, nil)
	wantStatus(t, rec, http.StatusOK)
	list := decode[api.List[api.Setting]](t, rec)
	if len(list.Items) != len(settings.Catalog) {
		t.Fatalf("%d settings listed, want the catalogue's %d", len(list.Items), len(settings.Catalog))
	}
	for _, s := range list.Items {
		if s.Name == "ping.timeout" && (s.Value != "0s" || s.Scope != "default") {
			t.Errorf("ping.timeout unset: %+v", s)
		}
	}
	rec = e.do(http.MethodDelete, "/v1/settings/"+f+"?zone=zone-1", e.admin, nil)
	wantStatus(t, rec, http.StatusAccepted)
	if s := decode[api.Setting](t, rec); s.Value != "2" || s.Scope != "global" {
		t.Errorf("zone value deleted: %+v, want the global 2 in effect", s)
	}
	if recs := e.pub.Records(); len(recs) != 1 || recs[0].Value.(*schemas.SettingChanged).Value != "" {
		t.Errorf("DELETE published %+v, want one empty value", recs)
	}
	wantStatus(t, e.do(http.MethodGet, "/v1/settings", e.alice, nil), http.StatusForbidden)
	wantStatus(t, e.do(http.MethodGet, "/v1/settings/"+f+"?zone=%00", e.admin, nil), http.StatusBadRequest)
}
