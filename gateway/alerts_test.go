package gateway_test

import (
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

func TestAlerts(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	acked := t0.Add(1)
	e.rm.PutAlert(readmodel.Alert{ID: "al-1", Kind: "VmStateSync", VmID: "vm-a1", Account: "acct-a", Message: "paused", At: t0})
	e.rm.PutAlert(readmodel.Alert{ID: "al-2", Kind: "HAExhausted", VmID: "vm-b1", Account: "acct-b", At: t0, AckedBy: "ops", AckedAt: &acked})
	e.rm.PutAlert(readmodel.Alert{ID: "al-3", Kind: "HostAlert", HostID: "host-1", ZoneID: "zone-1", Message: "agent silent", At: t0})

	type list struct {
		Items []api.Alert `json:"items"`
	}
	for _, c := range []struct {
		path, key string
		want      []string
	}{
		{"/v1/alerts", "admin", []string{"al-1", "al-2", "al-3"}},
		{"/v1/alerts", "alice", []string{"al-1"}},
		{"/v1/alerts?host=host-1", "admin", []string{"al-3"}},
		{"/v1/alerts?host=host-1", "alice", nil}, // a host's alert is the operators'
		{"/v1/alerts?zone=zone-1&kind=HostAlert", "admin", []string{"al-3"}},
		{"/v1/alerts?acked=false", "admin", []string{"al-1", "al-3"}},
		{"/v1/alerts?acked=true", "admin", []string{"al-2"}},
		{"/v1/alerts?acked=true", "bob", []string{"al-2"}},
	} {
		rec := e.do("GET", c.path, map[string]string{"admin": e.admin, "alice": e.alice, "bob": e.bob}[c.key], nil)
		wantStatus(t, rec, http.StatusOK)
		var got []string
		for _, a := range decode[list](t, rec).Items {
			got = append(got, a.ID)
		}
		if len(got) != len(c.want) || (len(got) > 0 && !slices.Equal(got, c.want)) {
			t.Errorf("%s as %s: %v, want %v", c.path, c.key, got, c.want)
		}
	}
	wantStatus(t, e.do("GET", "/v1/alerts?acked=maybe", e.admin, nil), http.StatusBadRequest)
	wantStatus(t, e.do("GET", "/v1/alerts?host=h%00x", e.admin, nil), http.StatusBadRequest)

	// One alert: a user sees their own only; a host's is a 404 for them.
	if a := decode[api.Alert](t, e.do("GET", "/v1/alerts/al-3", e.admin, nil)); a.HostID != "host-1" || a.ZoneID != "zone-1" || a.AckedAt != nil {
		t.Errorf("al-3: %+v", a)
	}
	wantStatus(t, e.do("GET", "/v1/alerts/al-3", e.alice, nil), http.StatusNotFound)
	wantStatus(t, e.do("GET", "/v1/alerts/al-1", e.bob, nil), http.StatusNotFound)
	wantStatus(t, e.do("GET", "/v1/alerts/al-9", e.admin, nil), http.StatusNotFound)

	// Acknowledging writes one record keyed by the alert, naming who.
	rec := e.do("POST", "/v1/alerts/al-3/ack", e.admin, nil)
	wantStatus(t, rec, http.StatusAccepted)
	if a := decode[api.Alert](t, rec); a.AckedBy != "ops" || a.AckedAt == nil {
		t.Errorf("ack answer: %+v", a)
	}
	wantStatus(t, e.do("POST", "/v1/alerts/al-3/ack", e.alice, nil), http.StatusNotFound)
	wantStatus(t, e.do("POST", "/v1/alerts/al-1/ack", e.bob, nil), http.StatusNotFound)
	wantStatus(t, e.do("POST", "/v1/alerts/al-1/ack", e.alice, nil), http.StatusAccepted)
	// Acknowledged already: answered as it is, nothing written.
	if a := decode[api.Alert](t, e.do("POST", "/v1/alerts/al-2/ack", e.bob, nil)); a.AckedBy != "ops" {
		t.Errorf("al-2 keeps its first acknowledgement: %+v", a)
	}
	recs := e.pub.Records()
	if len(recs) != 2 {
		t.Fatalf("published %d records, want 2: %+v", len(recs), recs)
	}
	for i, want := range []schemas.AlertAcknowledged{{AlertID: "al-3", By: "ops"}, {AlertID: "al-1", By: "acct-a", Account: "acct-a"}} {
		got, ok := recs[i].Value.(*schemas.AlertAcknowledged)
		if !ok || recs[i].Topic != schemas.TopicAlertAcks || recs[i].Key != want.AlertID || got.AlertID != want.AlertID ||
			got.By != want.By || got.Account != want.Account || got.At == 0 {
			t.Errorf("record %d: %s %s %+v, want %+v", i, recs[i].Topic, recs[i].Key, recs[i].Value, want)
		}
	}

	// A log that cannot be written loses nothing and says so.
	e.pub.Err = errors.New("broker gone")
	wantStatus(t, e.do("POST", "/v1/alerts/al-3/ack", e.admin, nil), http.StatusServiceUnavailable)
}

// A VM whose host is not Up shows its power as unknown, with what was
// last seen and when; its tag changes with the host's status.
func TestVMPowerUnseenOnHostNotUp(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	seen := t0.Add(-5 * time.Minute)
	vm, _ := e.rm.VM(t.Context(), "vm-a1")
	vm.HostStatus, vm.PowerSeenAt = "Up", &seen
	e.rm.PutVM(vm)
	up := e.do("GET", "/v1/vms/vm-a1", e.alice, nil)
	if v := decode[api.VM](t, up); v.PowerState != "PowerOn" || v.LastPowerState != "" || v.HostStatus != "Up" || !v.PowerStateAt.Equal(seen) {
		t.Errorf("on an Up host: %+v", v)
	}
	vm.HostStatus = "Disconnected"
	e.rm.PutVM(vm)
	rec := e.do("GET", "/v1/vms/vm-a1", e.alice, nil, "If-None-Match", up.Header().Get("ETag"))
	wantStatus(t, rec, http.StatusOK)
	if v := decode[api.VM](t, rec); v.PowerState != "PowerUnknown" || v.LastPowerState != "PowerOn" || v.HostStatus != "Disconnected" ||
		!v.PowerStateAt.Equal(seen) || v.VmState != "Active" {
		t.Errorf("on a Disconnected host: %+v", v)
	}
	l := decode[struct {
		Items []api.VM `json:"items"`
	}](t, e.do("GET", "/v1/vms?host=host-1", e.admin, nil))
	if len(l.Items) != 1 || l.Items[0].PowerState != "PowerUnknown" {
		t.Errorf("list: %+v", l.Items)
	}
}
