package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

// placementOf answers HostPlacement from a fixed table, as the placement
// read model would after the projector wrote it.
type placementOf map[string]readmodel.HostPlacement

func (p placementOf) ZoneCapacity(context.Context, string) ([]readmodel.ClusterCapacity, error) {
	return nil, nil
}

func (p placementOf) HostPlacement(_ context.Context, id string) (readmodel.HostPlacement, error) {
	return p[id], nil
}

func TestGetHost(t *testing.T) {
	e := newEnv(t, gateway.Config{Capacity: placementOf{"host-1": {Planner: "FirstFitPlanner", ResourceUsage: "Shared",
		Allocations: []readmodel.Allocation{{VmID: "vm-a1", Account: "acct-a", CPU: 1, MemoryMB: 1024, At: t0}}}}})
	e.rm.PutHost(readmodel.Host{ID: "host-2", Name: "h2", ZoneID: "zone-1", Status: "Disconnected", ResourceState: "Enabled",
		CPU: 2, MemoryMB: 512, Tags: []string{"qemu"}, VMCount: 0})

	rec := e.do(http.MethodGet, "/v1/hosts/host-1", e.admin, nil)
	wantStatus(t, rec, http.StatusOK)
	h := decode[api.HostDetail](t, rec)
	if h.ID != "host-1" || h.Status != "Up" || h.CPU != 32 || h.UsedCPU != 1 || h.Reservation == nil ||
		h.Reservation.Planner != "FirstFitPlanner" || len(h.Allocations) != 1 || h.Allocations[0].VmID != "vm-a1" {
		t.Fatalf("host-1: %+v", h)
	}
	rec = e.do(http.MethodGet, "/v1/hosts/host-2", e.admin, nil)
	wantStatus(t, rec, http.StatusOK)
	h = decode[api.HostDetail](t, rec)
	if h.Reservation != nil || h.Allocations == nil || len(h.Allocations) != 0 || h.Reservable || len(h.Tags) != 1 {
		t.Fatalf("host-2 (no reservation, no VMs): %+v", h)
	}

	wantStatus(t, e.do(http.MethodGet, "/v1/hosts/nope", e.admin, nil), http.StatusNotFound)
	wantStatus(t, e.do(http.MethodGet, "/v1/hosts/host-1", e.alice, nil), http.StatusForbidden)
	wantStatus(t, e.do(http.MethodGet, "/v1/hosts/host-1", "", nil), http.StatusUnauthorized)
}

func TestHostActions(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	e.rm.PutHost(readmodel.Host{ID: "host-gone", Status: "Removed", ResourceState: "Disabled"})
	want := map[string]string{
		"enable": "EnableHost", "disable": "DisableHost", "prepare_for_maintenance": "PrepareForMaintenance",
		"cancel_maintenance": "CancelMaintenance", "remove": "RemoveHost",
	}
	for action, command := range want {
		rec := e.do(http.MethodPost, "/v1/hosts/host-1/actions", e.admin, api.HostActionRequest{Action: action})
		wantStatus(t, rec, http.StatusAccepted)
		got := decode[api.HostCommandAccepted](t, rec)
		if got.Action != action || got.Command != command || got.HostID != "host-1" || got.CommandID == "" || got.Host.Status != "Up" {
			t.Fatalf("%s: %+v", action, got)
		}
		if loc := rec.Header().Get("Location"); loc != "/v1/hosts/host-1" {
			t.Fatalf("%s: Location %q", action, loc)
		}
		recs := e.pub.Records()
		last := recs[len(recs)-1]
		if last.Topic != schemas.TopicHostCommands || last.Key != "host-1" || schemas.TypeName(last.Value) != command ||
			last.Headers["command_id"] != got.CommandID {
			t.Fatalf("%s published %+v", action, last)
		}
	}
	n := len(e.pub.Records())

	cases := []struct {
		name, path, key string
		body            any
		status          int
	}{
		{"user", "/v1/hosts/host-1/actions", e.alice, api.HostActionRequest{Action: "disable"}, http.StatusForbidden},
		{"unknown host", "/v1/hosts/nope/actions", e.admin, api.HostActionRequest{Action: "disable"}, http.StatusNotFound},
		{"unknown action", "/v1/hosts/host-1/actions", e.admin, api.HostActionRequest{Action: "reboot"}, http.StatusUnprocessableEntity},
		{"unknown field", "/v1/hosts/host-1/actions", e.admin, `{"action":"disable","force":true}`, http.StatusUnprocessableEntity},
		{"removed host", "/v1/hosts/host-gone/actions", e.admin, api.HostActionRequest{Action: "enable"}, http.StatusConflict},
	}
	for _, c := range cases {
		rec := e.do(http.MethodPost, c.path, c.key, c.body)
		if rec.Code != c.status {
			t.Errorf("%s: status %d, want %d; %s", c.name, rec.Code, c.status, rec.Body.String())
		}
	}
	if got := len(e.pub.Records()); got != n {
		t.Fatalf("refused requests published %d records", got-n)
	}

	e.pub.Err = errors.New("broker down")
	wantStatus(t, e.do(http.MethodPost, "/v1/hosts/host-1/actions", e.admin, api.HostActionRequest{Action: "disable"}), http.StatusServiceUnavailable)
}

func TestAddHost(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	e.rm.PutHost(readmodel.Host{ID: "host-gone", Name: "gone", ZoneID: "zone-1", Status: "Removed", ResourceState: "Enabled"})
	for _, c := range []struct {
		body string
		key  string
		want int
	}{
		{`{"id":"host-9","name":"h9","zone_id":"zone-1","cluster_id":"c1"}`, "admin", http.StatusAccepted},
		{`{"id":"host-gone"}`, "admin", http.StatusAccepted}, // removed: added again
		{`{"id":"host-1"}`, "admin", http.StatusConflict},    // known
		{`{"id":"host-9"}`, "alice", http.StatusForbidden},
		{`{"name":"no id"}`, "admin", http.StatusUnprocessableEntity},
		{`{"id":"bad id/x"}`, "admin", http.StatusUnprocessableEntity},
		{`{"id":"host-8","name":"a\u0000b"}`, "admin", http.StatusUnprocessableEntity},
		{`{"id":"host-8","cpu":4}`, "admin", http.StatusUnprocessableEntity},
	} {
		rec := e.do("POST", "/v1/hosts", map[string]string{"admin": e.admin, "alice": e.alice}[c.key], json.RawMessage(c.body))
		if rec.Code != c.want {
			t.Errorf("%s as %s: %d %s, want %d", c.body, c.key, rec.Code, rec.Body, c.want)
		}
	}
	recs := e.pub.Records()
	if len(recs) != 2 {
		t.Fatalf("published %d records, want 2", len(recs))
	}
	add, ok := recs[0].Value.(*schemas.AddHost)
	if !ok || recs[0].Topic != schemas.TopicHostCommands || recs[0].Key != "host-9" || add.Name != "h9" || add.ZoneID != "zone-1" ||
		add.ClusterID != "c1" || add.CommandID == "" || recs[0].Headers["command_id"] != add.CommandID {
		t.Errorf("AddHost record %s %s %+v", recs[0].Topic, recs[0].Key, recs[0].Value)
	}
	for _, action := range []string{"unmanage", "manage"} {
		wantStatus(t, e.do("POST", "/v1/hosts/host-1/actions", e.admin, map[string]string{"action": action}), http.StatusAccepted)
	}
	if _, ok := e.pub.Records()[3].Value.(*schemas.ManageHost); !ok {
		t.Errorf("manage wrote %T", e.pub.Records()[3].Value)
	}
}

// TestHostOvercommit: a host shows the over-commit ratios placement applies
// to it and the capacity they give, which used_cpu and used_memory_mb count
// against: the host's own ratio, else its cluster's, zone's or the global
// setting, else the default (4× CPU, 1× memory).
func TestHostOvercommit(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	put := func(id, cluster string, cpuRatio, memRatio float64) {
		e.rm.PutHost(readmodel.Host{ID: id, ZoneID: "zone-1", ClusterID: cluster, Status: "Up", ResourceState: "Enabled",
			CPU: 16, MemoryMB: 65536, UsedCPU: 34, UsedMemoryMB: 4096, CPUOvercommit: cpuRatio, MemOvercommit: memRatio})
	}
	put("host-a", "c1", 0, 0)
	put("host-b", "c2", 0, 0)
	put("host-c", "c2", 1.5, 1.25)
	setting := func(name, scope, id, value string) {
		e.rm.PutSetting(schemas.SettingChanged{Name: name, Scope: scope, ScopeID: id, Value: value}, readmodel.Setting{At: t0})
	}

	want := map[string][4]float64{ // cpu ratio, cpu capacity, mem ratio, memory capacity
		"host-a": {4, 64, 1, 65536},
		"host-b": {4, 64, 1, 65536},
		"host-c": {1.5, 24, 1.25, 81920},
	}
	check := func(when string) {
		t.Helper()
		rec := e.do(http.MethodGet, "/v1/hosts", e.admin, nil)
		wantStatus(t, rec, http.StatusOK)
		for _, h := range decode[api.List[api.Host]](t, rec).Items {
			w, ok := want[h.ID]
			if !ok {
				continue
			}
			if got := [4]float64{h.CPUOvercommit, float64(h.CPUCapacity), h.MemOvercommit, float64(h.MemoryCapacityMB)}; got != w {
				t.Errorf("%s: %s shows ratio, capacity, ratio, capacity %v, want %v", when, h.ID, got, w)
			}
		}
		rec = e.do(http.MethodGet, "/v1/hosts/host-b", e.admin, nil)
		wantStatus(t, rec, http.StatusOK)
		if h := decode[api.HostDetail](t, rec); h.CPUCapacity != int64(want["host-b"][1]) {
			t.Errorf("%s: GET host-b: cpu_capacity %d, want %v", when, h.CPUCapacity, want["host-b"][1])
		}
	}
	check("defaults")

	setting("cpu.overprovisioning.factor", "global", "", "8")
	setting("cpu.overprovisioning.factor", "cluster", "c2", "2.5")
	setting("mem.overprovisioning.factor", "zone", "zone-1", "1.5")
	want["host-a"] = [4]float64{8, 128, 1.5, 98304}
	want["host-b"] = [4]float64{2.5, 40, 1.5, 98304}
	check("settings")
}

// TestHostLastPingLag: a host says how far its last_ping_at may lag behind
// its agent's last ping: the host processor republishes an unchanged Up
// status every settings.StatusRefresh (10 ping intervals), at the first
// ping after, so 11 intervals of the ping interval the processors start
// with, or of the ping.interval setting once it is set.
func TestHostLastPingLag(t *testing.T) {
	for _, c := range []struct {
		name    string
		ping    time.Duration
		setting string
		want    int64
	}{
		{"default", 0, "", 660},
		{"the processors' flag", 5 * time.Second, "", 55},
		{"the setting", 5 * time.Second, "2s", 22},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, gateway.Config{PingInterval: c.ping})
			if c.setting != "" {
				e.rm.PutSetting(schemas.SettingChanged{Name: "ping.interval", Scope: "global", Value: c.setting}, readmodel.Setting{At: t0})
			}
			rec := e.do(http.MethodGet, "/v1/hosts", e.admin, nil)
			wantStatus(t, rec, http.StatusOK)
			hosts := decode[api.List[api.Host]](t, rec).Items
			if len(hosts) == 0 || hosts[0].LastPingLagSeconds != c.want {
				t.Fatalf("hosts %+v: want last_ping_lag_seconds %d", hosts, c.want)
			}
			rec = e.do(http.MethodGet, "/v1/hosts/"+hosts[0].ID, e.admin, nil)
			wantStatus(t, rec, http.StatusOK)
			if got := decode[api.HostDetail](t, rec).LastPingLagSeconds; got != c.want {
				t.Fatalf("GET host: last_ping_lag_seconds %d, want %d", got, c.want)
			}
		})
	}
}
