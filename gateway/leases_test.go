package gateway_test

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

// TestCreateLeaseValidation: each bad request names its field with a 422;
// a good one publishes CreateLease keyed by zone for the caller's account.
func TestCreateLeaseValidation(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	future := time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339)
	past := time.Now().Add(-2 * time.Hour).UTC().Format(time.RFC3339)
	one := []map[string]any{{"min_hosts": 1, "max_hosts": 2}}
	tests := []struct {
		name  string
		key   string
		body  map[string]any
		field string
	}{
		{"bad name", e.alice, map[string]any{"name": "Lab!", "end": future, "reservations": one}, "name"},
		{"no end", e.alice, map[string]any{"name": "lab", "reservations": one}, "end"},
		{"end not a time", e.alice, map[string]any{"name": "lab", "end": "tomorrow", "reservations": one}, "end"},
		{"start in the past", e.alice, map[string]any{"name": "lab", "start": past, "end": future, "reservations": one}, "start"},
		{"end before start", e.alice, map[string]any{"name": "lab", "start": future, "end": past, "reservations": one}, "end"},
		{"no reservations", e.alice, map[string]any{"name": "lab", "end": future}, "reservations"},
		{"min 0", e.alice, map[string]any{"name": "lab", "end": future, "reservations": []map[string]any{{"min_hosts": 0}}}, "reservations[0].min_hosts"},
		{"max below min", e.alice, map[string]any{"name": "lab", "end": future, "reservations": []map[string]any{{"min_hosts": 3, "max_hosts": 2}}}, "reservations[0].max_hosts"},
		{"min not a number", e.alice, map[string]any{"name": "lab", "end": future, "reservations": []map[string]any{{"min_hosts": "2"}}}, "reservations.min_hosts"},
		{"user for another project", e.alice, map[string]any{"name": "lab", "project": "acct-b", "end": future, "reservations": one}, "project"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := e.do(http.MethodPost, "/v1/leases", tc.key, tc.body)
			wantStatus(t, rec, http.StatusUnprocessableEntity)
			if b := decode[api.ErrorResponse](t, rec); b.Error.Details["field"] != tc.field || b.Error.Message == "" {
				t.Fatalf("error %+v, want field %s", b.Error, tc.field)
			}
		})
	}
	if n := len(e.pub.Records()); n != 0 {
		t.Fatalf("%d records published for invalid requests", n)
	}

	rec := e.do(http.MethodPost, "/v1/leases", e.alice, map[string]any{"name": "lab", "start": "now", "end": future,
		"reservations": []map[string]any{{"min_hosts": 2, "host_properties": map[string]string{"gpu": "yes"}}}})
	wantStatus(t, rec, http.StatusAccepted)
	l := decode[api.Lease](t, rec)
	if rec.Header().Get("Location") != "/v1/leases/"+l.ID || l.Project != "acct-a" || l.Status != "PENDING" {
		t.Fatalf("accepted %+v at %s", l, rec.Header().Get("Location"))
	}
	recs := e.pub.Records()
	if len(recs) != 1 || recs[0].Topic != schemas.TopicLeaseCommands || recs[0].Key != "zone-1" {
		t.Fatalf("published %+v", recs)
	}
	c, ok := recs[0].Value.(*schemas.CreateLease)
	if !ok || c.LeaseID != l.ID || c.Project != "acct-a" || len(c.Reservations) != 1 || c.Reservations[0].MaxHosts != 2 ||
		c.Reservations[0].HostProperties["gpu"] != "yes" || recs[0].Headers["command_id"] != c.CommandID {
		t.Fatalf("command %+v headers %v", recs[0].Value, recs[0].Headers)
	}

	if c.Admin {
		t.Fatalf("a user's lease is marked an admin's")
	}

	// An admin leases for an account, past the lease policy if need be:
	// the command says an admin asked.
	rec = e.do(http.MethodPost, "/v1/leases", e.admin, map[string]any{"name": "lab", "project": "acct-b", "end": future, "reservations": one})
	wantStatus(t, rec, http.StatusAccepted)
	if l := decode[api.Lease](t, rec); l.Project != "acct-b" {
		t.Fatalf("admin's lease for acct-b: project %s", l.Project)
	}
	if c, ok := e.pub.Records()[1].Value.(*schemas.CreateLease); !ok || !c.Admin || c.Project != "acct-b" {
		t.Fatalf("admin's command %+v", e.pub.Records()[1].Value)
	}
}

// TestLeaseHostCountMessages: a host count of any size or shape is refused
// with the range it must be in and the reservation's index (issue 23: a
// count past int32 was "must be a number, not number 5000000000").
func TestLeaseHostCountMessages(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	future := time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339)
	tests := []struct {
		name  string
		res   string // the second reservation
		field string
		msg   string
	}{
		{"min past int32", `{"min_hosts": 5000000000}`, "reservations[1].min_hosts", "reservations[1].min_hosts must be a whole number from 1 to 1000"},
		{"min past int64", `{"min_hosts": 99999999999999999999999}`, "reservations[1].min_hosts", "reservations[1].min_hosts must be a whole number from 1 to 1000"},
		{"min in exponent form", `{"min_hosts": 1e30}`, "reservations[1].min_hosts", "reservations[1].min_hosts must be a whole number from 1 to 1000"},
		{"min with a fraction", `{"min_hosts": 1.5}`, "reservations[1].min_hosts", "reservations[1].min_hosts must be a whole number from 1 to 1000"},
		{"min past the limit", `{"min_hosts": 1001}`, "reservations[1].min_hosts", "reservations[1].min_hosts must be a whole number from 1 to 1000"},
		{"min negative", `{"min_hosts": -5000000000}`, "reservations[1].min_hosts", "reservations[1].min_hosts must be a whole number from 1 to 1000"},
		{"max past int32", `{"min_hosts": 2, "max_hosts": 5000000000}`, "reservations[1].max_hosts",
			"reservations[1].max_hosts must be a whole number from min_hosts (2) to 1000, or left out for min_hosts"},
		{"max with a fraction", `{"min_hosts": 2, "max_hosts": 2.5}`, "reservations[1].max_hosts",
			"reservations[1].max_hosts must be a whole number from min_hosts (2) to 1000, or left out for min_hosts"},
		{"max a string", `{"min_hosts": 2, "max_hosts": "3"}`, "reservations.max_hosts", `field "reservations.max_hosts" must be a number, not string`},
		{"max a boolean", `{"min_hosts": 2, "max_hosts": true}`, "reservations.max_hosts", `field "reservations.max_hosts" must be a number, not bool`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"name": "lab", "end": "` + future + `", "reservations": [{"min_hosts": 1}, ` + tc.res + `]}`
			rec := e.do(http.MethodPost, "/v1/leases", e.alice, body)
			wantStatus(t, rec, http.StatusUnprocessableEntity)
			if b := decode[api.ErrorResponse](t, rec); b.Error.Details["field"] != tc.field || b.Error.Message != tc.msg {
				t.Fatalf("error %+v, want %s: %s", b.Error, tc.field, tc.msg)
			}
		})
	}
	if n := len(e.pub.Records()); n != 0 {
		t.Fatalf("%d records published for invalid requests", n)
	}
	// A whole number in any JSON form is a count.
	rec := e.do(http.MethodPost, "/v1/leases", e.alice, `{"name": "lab", "end": "`+future+`", "reservations": [{"min_hosts": 2.0, "max_hosts": 3e0}]}`)
	wantStatus(t, rec, http.StatusAccepted)
	if l := decode[api.Lease](t, rec); l.Reservations[0].MinHosts != 2 || l.Reservations[0].MaxHosts != 3 {
		t.Fatalf("2.0..3e0: %+v", l.Reservations)
	}
	// null is a count left out: max_hosts takes min_hosts.
	rec = e.do(http.MethodPost, "/v1/leases", e.alice, `{"name": "lab", "end": "`+future+`", "reservations": [{"min_hosts": 3, "max_hosts": null}]}`)
	wantStatus(t, rec, http.StatusAccepted)
	if l := decode[api.Lease](t, rec); l.Reservations[0].MaxHosts != 3 {
		t.Fatalf("max_hosts null: %+v", l.Reservations)
	}
}

// TestUpdateLeaseCarriesTheRole: an update says whether an admin asked, so
// the lease processor lets an admin's update past the lease policy only.
func TestUpdateLeaseCarriesTheRole(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	end := time.Now().Add(3 * time.Hour).UTC()
	e.rm.PutLease(readmodel.Lease{ID: "lease-a", Project: "acct-a", Name: "la", Status: "ACTIVE", ZoneID: "zone-1",
		Start: end.Add(-2 * time.Hour), End: end, Reservations: []readmodel.LeaseReservation{{ID: "lease-a-r1", MinHosts: 1, MaxHosts: 1}}})
	later := end.Add(1000 * time.Hour).Format(time.RFC3339)
	for i, key := range []string{e.alice, e.admin} {
		rec := e.do(http.MethodPut, "/v1/leases/lease-a", key, map[string]any{"end": later})
		wantStatus(t, rec, http.StatusAccepted)
		u, ok := e.pub.Records()[i].Value.(*schemas.UpdateLease)
		if !ok || u.Admin != (key == e.admin) || u.Project != "acct-a" || u.End != end.Add(1000*time.Hour).Truncate(time.Second).UnixMilli() {
			t.Fatalf("update %d: %+v", i, e.pub.Records()[i].Value)
		}
	}
}

// TestLeaseTakesBlazarNames: a reservation may use OpenStack Blazar's names
// of a physical:host reservation, min, max, hypervisor_properties and
// resource_properties (JSON filters, mapped to host_properties when they
// are equalities or an "and" of them), on create and on update. A field
// under both names must agree, else a 400 names both; a filter vmplane
// cannot map is a 400 that says why. Answers keep vmplane's names.
func TestLeaseTakesBlazarNames(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	future := time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339)
	create := func(res string) *httptest.ResponseRecorder {
		t.Helper()
		return e.do(http.MethodPost, "/v1/leases", e.alice, `{"name": "lab", "end": "`+future+`", "reservations": [`+res+`]}`)
	}

	rec := create(`{"resource_type": "physical:host", "min": 2, "max": 3,
		"hypervisor_properties": "[\"=\", \"$hypervisor_type\", \"qemu\"]",
		"resource_properties": "[\"and\", [\"=\", \"$gpu\", \"yes\"], [\"==\", \"$rack\", 42]]"}`)
	wantStatus(t, rec, http.StatusAccepted)
	wantProps := map[string]string{"hypervisor_type": "qemu", "gpu": "yes", "rack": "42"}
	var raw map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	res := raw["reservations"].([]any)[0].(map[string]any)
	if _, blazar := res["min"]; blazar || res["min_hosts"] != 2.0 || res["max_hosts"] != 3.0 {
		t.Fatalf("answer keeps vmplane's names: %v", res)
	}
	c := e.pub.Records()[0].Value.(*schemas.CreateLease)
	if sp := c.Reservations[0]; sp.MinHosts != 2 || sp.MaxHosts != 3 || !maps.Equal(sp.HostProperties, wantProps) {
		t.Fatalf("CreateLease reservation %+v, want 2..3 hosts with %v", sp, wantProps)
	}

	// Both names, one value; host_properties joined with a filter; Blazar's
	// empty filters.
	for _, ok := range []string{
		`{"min_hosts": 2, "min": 2, "max_hosts": 4, "max": 4}`,
		`{"min": 1, "host_properties": {"gpu": "yes"}, "resource_properties": "[\"=\", \"$gpu\", \"yes\"]"}`,
		`{"min": 1, "hypervisor_properties": "", "resource_properties": "[]"}`,
	} {
		wantStatus(t, create(ok), http.StatusAccepted)
	}

	n := len(e.pub.Records())
	for _, tc := range []struct {
		name, res string
		fields    []any
		msg       string
	}{
		{"min under both names", `{"min_hosts": 2, "min": 3}`, []any{"reservations[0].min_hosts", "reservations[0].min"},
			"reservations[0].min_hosts (2) and reservations[0].min (3) are one field"},
		{"max under both names", `{"min": 1, "max_hosts": 2, "max": 3}`, []any{"reservations[0].max_hosts", "reservations[0].max"},
			"reservations[0].max_hosts (2) and reservations[0].max (3)"},
		{"a property two ways", `{"min": 1, "host_properties": {"gpu": "no"}, "resource_properties": "[\"=\", \"$gpu\", \"yes\"]"}`,
			[]any{"reservations[0].host_properties", "reservations[0].resource_properties"}, `asks for gpu "no"`},
		{"two filters disagree", `{"min": 1, "hypervisor_properties": "[\"=\", \"$gpu\", \"a\"]", "resource_properties": "[\"=\", \"$gpu\", \"b\"]"}`,
			[]any{"reservations[0].hypervisor_properties", "reservations[0].resource_properties"}, "no host has both"},
		{"a comparison", `{"min": 1, "hypervisor_properties": "[\">=\", \"$memory_mb\", \"4096\"]"}`,
			[]any{"reservations[0].hypervisor_properties"}, `operator ">=" cannot be mapped: vmplane matches host properties by equality only`},
		{"an or", `{"min": 1, "resource_properties": "[\"or\", [\"=\", \"$a\", \"1\"], [\"=\", \"$b\", \"2\"]]"}`,
			[]any{"reservations[0].resource_properties"}, `operator "or" cannot be mapped`},
		{"an and holding a comparison", `{"min": 1, "resource_properties": "[\"and\", [\"=\", \"$a\", \"1\"], [\"<\", \"$b\", 2]]"}`,
			[]any{"reservations[0].resource_properties"}, `operator "<" cannot be mapped`},
		{"no filter", `{"min": 1, "resource_properties": "gpu=yes"}`, []any{"reservations[0].resource_properties"}, "is not a Blazar JSON filter"},
		{"no variable", `{"min": 1, "resource_properties": "[\"=\", \"gpu\", \"yes\"]"}`, []any{"reservations[0].resource_properties"}, `names a property, "$name"`},
		{"an instance reservation", `{"min": 1, "resource_type": "virtual:instance"}`, []any{"reservations[0].resource_type"}, "reserve hosts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := create(tc.res)
			wantStatus(t, rec, http.StatusBadRequest)
			b := decode[api.ErrorResponse](t, rec)
			fields := tc.fields[:1]
			if f, ok := b.Error.Details["fields"].([]any); ok {
				fields = f
			}
			if b.Error.Details["field"] != tc.fields[0] || !slices.Equal(fields, tc.fields) || !strings.Contains(b.Error.Message, tc.msg) {
				t.Fatalf("error %+v, want fields %v and %q", b.Error, tc.fields, tc.msg)
			}
		})
	}
	// A Blazar name's own range check names it.
	rec = create(`{"min": 3, "max": 2}`)
	wantStatus(t, rec, http.StatusUnprocessableEntity)
	if b := decode[api.ErrorResponse](t, rec); b.Error.Details["field"] != "reservations[0].max" ||
		b.Error.Message != "reservations[0].max must be a whole number from min (3) to 1000, or left out for min" {
		t.Fatalf("error %+v", b.Error)
	}
	if len(e.pub.Records()) != n {
		t.Fatalf("refused requests published %d records", len(e.pub.Records())-n)
	}

	// An update takes them too.
	end := time.Now().Add(3 * time.Hour).UTC()
	e.rm.PutLease(readmodel.Lease{ID: "lease-a", Project: "acct-a", Name: "la", Status: "ACTIVE", ZoneID: "zone-1",
		Start: end.Add(-2 * time.Hour), End: end, Reservations: []readmodel.LeaseReservation{{ID: "lease-a-r1", MinHosts: 1, MaxHosts: 1}}})
	rec = e.do(http.MethodPut, "/v1/leases/lease-a", e.alice, `{"reservations": [{"min": 2, "max": 5, "resource_properties": "[\"=\", \"$gpu\", \"yes\"]"}]}`)
	wantStatus(t, rec, http.StatusAccepted)
	u := e.pub.Records()[n].Value.(*schemas.UpdateLease)
	if sp := u.Reservations[0]; sp.MinHosts != 2 || sp.MaxHosts != 5 || sp.HostProperties["gpu"] != "yes" {
		t.Fatalf("UpdateLease reservation %+v", sp)
	}
	rec = e.do(http.MethodPut, "/v1/leases/lease-a", e.alice, `{"reservations": [{"min_hosts": 1, "min": 2}]}`)
	wantStatus(t, rec, http.StatusBadRequest)
}
