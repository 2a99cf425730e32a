package lease

import (
	"strings"
	"testing"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

func rec(v any) schemas.Record {
	return schemas.Record{Topic: schemas.TopicLeaseCommands, Key: zone, Value: v}
}

func up(h string, ok bool) *schemas.HostStatus {
	st := "Up"
	if !ok {
		st = "Down"
	}
	return &schemas.HostStatus{HostID: h, ZoneID: zone, Status: st, ResourceState: "Enabled", Reservable: ok}
}

func TestDuplicateCommandIsIgnored(t *testing.T) {
	m := New(DefaultConfig())
	z, _ := m.Step(nil, rec(up("h1", true)), t0)
	c := &schemas.CreateLease{CommandID: "c1", LeaseID: "l1", ZoneID: zone, Project: "acme", Start: t0.Add(time.Hour).UnixMilli(),
		End: t0.Add(2 * time.Hour).UnixMilli(), Reservations: []schemas.ReservationSpec{{MinHosts: 1, MaxHosts: 1}}}
	z, out := m.Step(z, rec(c), t0)
	if len(out) != 1 {
		t.Fatalf("first create: %d outputs", len(out))
	}
	if _, out = m.Step(z, rec(c), t0); len(out) != 0 {
		t.Fatalf("replayed create: %d outputs, want none", len(out))
	}
}

// TestMonitoringModes: push heals on the HostStatus itself; with push off
// for a zone only the reconcile heals, at its per-zone interval; with both
// off nothing heals.
func TestMonitoringModes(t *testing.T) {
	tests := []struct {
		name     string
		mo       Monitor
		atStatus bool          // healed by the HostStatus step
		byTick   time.Duration // healed by a tick at this offset; 0 for never
		// set are settings of the zone (name=value), applied after the
		// lease was created.
		set []string
	}{
		{"push and poll", Monitor{Push: true, Poll: true}, true, 0, nil},
		{"poll every 5m", Monitor{Poll: true, PollInterval: 5 * time.Minute}, false, 5 * time.Minute, nil},
		{"neither", Monitor{}, false, 0, nil},
		// The poll the lease scheduled at 1m keeps its time.
		{"set to poll every 5m", Monitor{Push: true, Poll: true}, false, time.Minute,
			[]string{"lease.monitor.type=poll", "lease.monitor.poll.interval=5m"}},
		{"set to push", Monitor{Poll: true}, true, 0, []string{"lease.monitor.type=push"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Zones = map[string]Monitor{zone: tc.mo}
			m := New(cfg)
			z, _ := m.Step(nil, rec(up("h1", true)), t0)
			z, _ = m.Step(z, rec(up("h2", true)), t0)
			z, _ = m.Step(z, rec(&schemas.CreateLease{CommandID: "c1", LeaseID: "l1", ZoneID: zone, Project: "acme",
				Start: t0.Add(10 * time.Minute).UnixMilli(), End: t0.Add(2 * time.Hour).UnixMilli(),
				Reservations: []schemas.ReservationSpec{{MinHosts: 1, MaxHosts: 1}}}), t0)
			for _, kv := range tc.set {
				name, v, _ := strings.Cut(kv, "=")
				if err := m.Configure(&schemas.SettingChanged{Name: name, Scope: "zone", ScopeID: zone, Value: v}); err != nil {
					t.Fatal(err)
				}
			}
			z, out := m.Step(z, rec(up("h1", false)), t0.Add(time.Second))
			if got := healed(out); got != tc.atStatus {
				t.Fatalf("healed by the status: %v, want %v", got, tc.atStatus)
			}
			// Tick at every wake before the lease's start.
			var healedAt time.Duration
			for w := m.Wake(z); !w.IsZero() && w.Before(t0.Add(10*time.Minute)); w = m.Wake(z) {
				z, out = m.Tick(z, zone, w)
				if healed(out) && healedAt == 0 {
					healedAt = w.Sub(t0)
				}
			}
			if healedAt != tc.byTick {
				t.Fatalf("healed by a tick at %v, want %v", healedAt, tc.byTick)
			}
		})
	}
}

func healed(out []schemas.Record) bool {
	for _, r := range out {
		if v, ok := r.Value.(*schemas.LeaseStatusChanged); ok && v.Event == "healed" {
			return true
		}
	}
	return false
}
