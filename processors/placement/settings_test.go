package placement

import (
	"testing"

	"github.com/vmplane/vmplane/schemas"
)

func set(t *testing.T, m *Machine, name, scope, id, value string) {
	t.Helper()
	if err := m.Configure(&schemas.SettingChanged{Name: name, Scope: scope, ScopeID: id, Value: value}); err != nil {
		t.Fatal(err)
	}
}

// The planner and the over-commit ratios change while the machine runs:
// the next request takes the planner of its zone, a host's next status the
// ratio of its cluster (else its zone's, else the global one).
func TestSettingsChangeWithoutRestart(t *testing.T) {
	m := New(DefaultConfig())
	z, out := run(t, m, hostUp("h1", "c1", 4, 8192), hostUp("h2", "c2", 4, 8192), placeReq("r1", "vm1", 1, 512))
	if p := decidedBy(out); p != FirstFitName {
		t.Fatalf("before any setting: decided by %q, want %s", p, FirstFitName)
	}

	set(t, m, "vm.deployment.planner", "global", "", "UserDispersingPlanner")
	z, out = m.Step(z, rec(placeReq("r2", "vm2", 1, 512)), t0)
	if p := decidedBy(out); p != "UserDispersingPlanner" {
		t.Fatalf("global planner set: decided by %q", p)
	}
	set(t, m, "vm.deployment.planner", "zone", "z1", "SpreadPlanner")
	set(t, m, "vm.deployment.planner", "zone", "z2", "BinpackPlanner")
	z, out = m.Step(z, rec(placeReq("r3", "vm3", 1, 512)), t0)
	if p := decidedBy(out); p != "SpreadPlanner" {
		t.Fatalf("zone planner set: decided by %q", p)
	}
	if err := m.Configure(&schemas.SettingChanged{Name: "vm.deployment.planner", Scope: "cluster", ScopeID: "c1", Value: "SpreadPlanner"}); err == nil {
		t.Error("a planner per cluster was taken")
	}

	set(t, m, "cpu.overprovisioning.factor", "global", "", "2")
	set(t, m, "cpu.overprovisioning.factor", "cluster", "c1", "8")
	set(t, m, "mem.overprovisioning.factor", "zone", "z1", "1.5")
	own := hostUp("h3", "c2", 4, 8192)
	own.CPUOvercommit = 3
	for _, st := range []*schemas.HostStatus{hostUp("h1", "c1", 4, 8192), hostUp("h2", "c2", 4, 8192), own} {
		z, _ = m.Step(z, rec(st), t0)
	}
	checkInvariants(t, m, z)
	want := map[string][2]float64{"h1": {8, 1.5}, "h2": {2, 1.5}, "h3": {3, 1.5}}
	for _, h := range z.Hosts {
		if got := [2]float64{h.CPUOvercommit, h.MemOvercommit}; got != want[h.HostID] {
			t.Errorf("%s: ratios %v, want %v", h.HostID, got, want[h.HostID])
		}
	}
}

// decidedBy returns the planner of the decision among outs.
func decidedBy(outs []schemas.Record) string {
	for _, o := range outs {
		if d, ok := o.Value.(*schemas.PlacementDecided); ok {
			return d.Planner
		}
	}
	return ""
}
