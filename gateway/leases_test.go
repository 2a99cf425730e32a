package gateway_test

import (
	"net/http"
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
