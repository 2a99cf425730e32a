package gateway_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/vmplane/vmplane/gateway"
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
		{"user for another project", e.alice, map[string]any{"name": "lab", "project": "acct-b", "end": future, "reservations": one}, "project"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := e.do(http.MethodPost, "/v1/leases", tc.key, tc.body)
			wantStatus(t, rec, http.StatusUnprocessableEntity)
			if b := decode[errBody](t, rec); b.Error.Details["field"] != tc.field || b.Error.Message == "" {
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
	l := decode[gateway.Lease](t, rec)
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

	// An admin leases for an account.
	rec = e.do(http.MethodPost, "/v1/leases", e.admin, map[string]any{"name": "lab", "project": "acct-b", "end": future, "reservations": one})
	wantStatus(t, rec, http.StatusAccepted)
	if l := decode[gateway.Lease](t, rec); l.Project != "acct-b" {
		t.Fatalf("admin's lease for acct-b: project %s", l.Project)
	}
}
