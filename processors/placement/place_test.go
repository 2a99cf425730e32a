package placement

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/vmplane/vmplane/internal/testkit"
	"github.com/vmplane/vmplane/schemas"
)

func TestPlaceChoosesHost(t *testing.T) {
	withHost := func(r *schemas.PlaceVm, id string) *schemas.PlaceVm { r.HostID = id; return r }
	requireHost := func(r *schemas.PlaceVm, id string) *schemas.PlaceVm { r.HostID, r.HostRequired = id, true; return r }
	avoid := func(r *schemas.PlaceVm, ids ...string) *schemas.PlaceVm { r.AvoidHosts = ids; return r }
	tagged := func(r *schemas.PlaceVm, tags ...string) *schemas.PlaceVm { r.Offering.HostTags = tags; return r }
	planner := func(r *schemas.PlaceVm, p string) *schemas.PlaceVm { r.Offering.DeploymentPlanner = p; return r }
	down := func(h *schemas.HostStatus) *schemas.HostStatus {
		h.Status, h.Reservable = "Disconnected", false
		return h
	}
	ownRatio := func(h *schemas.HostStatus, cpu float64) *schemas.HostStatus { h.CPUOvercommit = cpu; return h }

	tests := []struct {
		name   string
		inputs []any
		host   string // chosen host; empty when placement fails
		reason string
	}{
		{"most free cluster first", []any{hostUp("a1", "ca", 4, 8192), hostUp("b1", "cb", 8, 8192), placeReq("r1", "vm1", 1, 512)}, "b1", ""},
		{"hosts of a cluster by id", []any{hostUp("h2", "c", 4, 8192), hostUp("h1", "c", 4, 8192), placeReq("r1", "vm1", 1, 512)}, "h1", ""},
		{"equal clusters by id", []any{hostUp("x", "c2", 4, 8192), hostUp("y", "c1", 4, 8192), placeReq("r1", "vm1", 1, 512)}, "y", ""},
		{"free memory breaks a cpu tie", []any{hostUp("a1", "ca", 4, 4096), hostUp("b1", "cb", 4, 8192), placeReq("r1", "vm1", 1, 512)}, "b1", ""},
		{"skips a host without room", []any{hostUp("h1", "c", 1, 512), hostUp("h2", "c", 1, 4096), placeReq("r1", "vm1", 1, 1024)}, "h2", ""},
		{"skips a host not reservable", []any{down(hostUp("h1", "c", 4, 8192)), hostUp("h2", "c", 4, 8192), placeReq("r1", "vm1", 1, 512)}, "h2", ""},
		{"host tags", []any{hostUp("h1", "c", 4, 8192), hostUp("h2", "c", 4, 8192, "ssd", "gpu"), tagged(placeReq("r1", "vm1", 1, 512), "gpu")}, "h2", ""},
		{"missing tag fails", []any{hostUp("h1", "c", 4, 8192, "ssd"), tagged(placeReq("r1", "vm1", 1, 512), "gpu")}, "", ReasonInsufficientCapacity},
		{"avoid hosts", []any{hostUp("h1", "c", 4, 8192), hostUp("h2", "c", 4, 8192), avoid(placeReq("r1", "vm1", 1, 512), "h1")}, "h2", ""},
		{"asked-for host first", []any{hostUp("h1", "c", 4, 8192), hostUp("h2", "c", 4, 8192), withHost(placeReq("r1", "vm1", 1, 512), "h2")}, "h2", ""},
		{"asked-for host full falls back", []any{hostUp("h1", "c", 4, 8192), hostUp("h2", "c", 4, 256), withHost(placeReq("r1", "vm1", 1, 512), "h2")}, "h1", ""},
		{"asked-for host unknown falls back", []any{hostUp("h1", "c", 4, 8192), withHost(placeReq("r1", "vm1", 1, 512), "gone")}, "h1", ""},
		{"required host", []any{hostUp("h1", "c", 4, 8192), hostUp("h2", "c", 4, 8192), requireHost(placeReq("r1", "vm1", 1, 512), "h2")}, "h2", ""},
		{"required host full fails", []any{hostUp("h1", "c", 4, 8192), hostUp("h2", "c", 4, 256), requireHost(placeReq("r1", "vm1", 1, 512), "h2")}, "", ReasonHostRefused},
		{"required host unknown fails", []any{hostUp("h1", "c", 4, 8192), requireHost(placeReq("r1", "vm1", 1, 512), "gone")}, "", ReasonHostRefused},
		{"required host avoided fails", []any{hostUp("h1", "c", 4, 8192), avoid(requireHost(placeReq("r1", "vm1", 1, 512), "h1"), "h1")}, "", ReasonHostRefused},
		{"cpu over-commit 4 from config", []any{hostUp("h1", "c", 4, 8192), placeReq("r1", "vm1", 16, 512)}, "h1", ""},
		{"beyond cpu over-commit", []any{hostUp("h1", "c", 4, 8192), placeReq("r1", "vm1", 17, 512)}, "", ReasonInsufficientCapacity},
		{"host's own ratio wins", []any{ownRatio(hostUp("h1", "c", 4, 8192), 1.0), placeReq("r1", "vm1", 5, 512)}, "", ReasonInsufficientCapacity},
		{"memory is not over-committed", []any{hostUp("h1", "c", 4, 8192), placeReq("r1", "vm1", 1, 8193)}, "", ReasonInsufficientCapacity},
		{"no hosts", []any{placeReq("r1", "vm1", 1, 512)}, "", ReasonNoReservableHost},
		{"none reservable", []any{down(hostUp("h1", "c", 4, 8192)), placeReq("r1", "vm1", 1, 512)}, "", ReasonNoReservableHost},
		{"unknown planner", []any{hostUp("h1", "c", 4, 8192), planner(placeReq("r1", "vm1", 1, 512), "NoSuchPlanner")}, "", ReasonUnknownPlanner},
		{"named first fit", []any{hostUp("h1", "c", 4, 8192), planner(placeReq("r1", "vm1", 1, 512), FirstFitName)}, "h1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(DefaultConfig())
			z, out := run(t, m, tt.inputs...)
			ds, fs := only[*schemas.PlacementDecided](out), only[*schemas.PlacementFailed](out)
			if tt.host == "" {
				if len(fs) != 1 || fs[0].Reason != tt.reason || len(ds) != 0 {
					t.Fatalf("want PlacementFailed{%s}, got %+v", tt.reason, out)
				}
				if fs[0].RequestID != "r1" || fs[0].Epoch != 3 || fs[0].VmID != "vm1" {
					t.Fatalf("failure does not echo the request: %+v", fs[0])
				}
				if len(z.Allocations) != 0 {
					t.Fatalf("failed placement claimed %+v", z.Allocations)
				}
				return
			}
			if len(ds) != 1 || ds[0].HostID != tt.host {
				t.Fatalf("want PlacementDecided on %s, got %+v", tt.host, out)
			}
			d := ds[0]
			h := host(t, z, tt.host)
			if d.RequestID != "r1" || d.Epoch != 3 || d.ZoneID != "z1" || d.ClusterID != h.ClusterID || d.PodID != "p1" || d.Planner != FirstFitName {
				t.Fatalf("decision does not echo the request or name the host: %+v", d)
			}
			if out[len(out)-1].Topic != schemas.TopicVmSignals || out[len(out)-1].Key != "vm1" {
				t.Fatalf("decision on %s/%s, want vm.signals.v1/vm1", out[len(out)-1].Topic, out[len(out)-1].Key)
			}
			as := only[*schemas.CapacityAllocated](out)
			if len(as) != 1 || as[0].HostID != tt.host || as[0].HostUsedCPU != h.UsedCPU || as[0].HostUsedMemory != h.UsedMemoryMB {
				t.Fatalf("want one CapacityAllocated with the host's usage, got %+v (host %+v)", as, h)
			}
			rs := only[*schemas.HostReserved](out)
			if len(rs) != 1 || rs[0].ResourceUsage != Shared || rs[0].Planner != FirstFitName || h.Planner != FirstFitName {
				t.Fatalf("want the host reserved Shared by first fit, got %+v / %+v", rs, h)
			}
		})
	}
}

// dedicatedPlanner stands for a planner that needs hosts to itself, such as
// the ImplicitDedicationPlanner still to come.
type dedicatedPlanner struct{}

func (dedicatedPlanner) Name() string          { return "ImplicitDedicationPlanner" }
func (dedicatedPlanner) ResourceUsage() string { return Dedicated }
func (dedicatedPlanner) CompareClusters(v View, r *schemas.PlaceVm, a, b *Cluster) int {
	return FirstFit{}.CompareClusters(v, r, a, b)
}

func TestReservationAllows(t *testing.T) {
	ded := func(planner, account string) schemas.HostCapacity {
		return schemas.HostCapacity{Planner: planner, ResourceUsage: Dedicated, ReservedFor: account}
	}
	shared := schemas.HostCapacity{Planner: FirstFitName, ResourceUsage: Shared}
	tests := []struct {
		name    string
		host    schemas.HostCapacity
		planner Planner
		account string
		want    bool
	}{
		{"unreserved, shared planner", schemas.HostCapacity{}, FirstFit{}, "a", true},
		{"unreserved, dedicated planner", schemas.HostCapacity{}, dedicatedPlanner{}, "a", true},
		{"shared, shared planner", shared, FirstFit{}, "a", true},
		{"shared, dedicated planner", shared, dedicatedPlanner{}, "a", false},
		{"dedicated to another planner", ded("ImplicitDedicationPlanner", "a"), FirstFit{}, "a", false},
		{"dedicated to another account", ded("ImplicitDedicationPlanner", "a"), dedicatedPlanner{}, "b", false},
		{"dedicated to this planner and account", ded("ImplicitDedicationPlanner", "a"), dedicatedPlanner{}, "a", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := reservationAllows(tt.host, tt.planner, tt.account); got != tt.want {
				t.Fatalf("reservationAllows = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPlaceSkipsDedicatedHost(t *testing.T) {
	m := New(DefaultConfig())
	ded := placeReq("r0", "vm0", 1, 512)
	ded.Account, ded.Offering.DeploymentPlanner = "other", ImplicitDedicationName
	z, _ := run(t, m, hostUp("h1", "c", 4, 8192), hostUp("h2", "c", 4, 8192), ded)
	if h := host(t, z, "h1"); h.ResourceUsage != Dedicated || h.ReservedFor != "other" {
		t.Fatalf("h1 not dedicated to other: %+v", h)
	}
	z, out := m.Step(z, rec(placeReq("r1", "vm1", 1, 512)), t0)
	checkInvariants(t, m, z)
	if ds := only[*schemas.PlacementDecided](out); len(ds) != 1 || ds[0].HostID != "h2" {
		t.Fatalf("want h2 (h1 is dedicated to another account), got %+v", out)
	}
}

func TestPlaceIsIdempotent(t *testing.T) {
	m := New(DefaultConfig())
	z, first := run(t, m, hostUp("h1", "c", 4, 8192), placeReq("r1", "vm1", 2, 1024))
	z2, again := m.Step(z, rec(placeReq("r1", "vm1", 2, 1024)), t0)
	checkInvariants(t, m, z2)
	if len(again) != 1 {
		t.Fatalf("repeat: want only the decision again, got %+v", again)
	}
	d1, d2 := only[*schemas.PlacementDecided](first)[0], only[*schemas.PlacementDecided](again)[0]
	if !reflect.DeepEqual(d1, d2) {
		t.Fatalf("repeat answered differently:\n%+v\n%+v", d1, d2)
	}
	if h := host(t, z2, "h1"); h.UsedCPU != 2 || h.UsedMemoryMB != 1024 {
		t.Fatalf("repeat claimed again: %+v", h)
	}
}

func TestPlaceNewRequestReleasesOldClaim(t *testing.T) {
	m := New(DefaultConfig())
	z, out := run(t, m, hostUp("h1", "c", 4, 8192), placeReq("r1", "vm1", 2, 1024), placeReq("r2", "vm1", 2, 1024))
	rel, alloc := only[*schemas.CapacityReleased](out), only[*schemas.CapacityAllocated](out)
	if len(rel) != 1 || len(alloc) != 1 || rel[0].RequestID != "r2" || rel[0].HostUsedCPU != 0 {
		t.Fatalf("want the old claim released then a new one, got %+v", out)
	}
	if slices.IndexFunc(out, func(r schemas.Record) bool { _, ok := r.Value.(*schemas.CapacityReleased); return ok }) >
		slices.IndexFunc(out, func(r schemas.Record) bool { _, ok := r.Value.(*schemas.CapacityAllocated); return ok }) {
		t.Fatalf("release must come before the new claim: %+v", out)
	}
	if h := host(t, z, "h1"); h.UsedCPU != 2 || len(z.Allocations) != 1 || z.Allocations[0].RequestID != "r2" {
		t.Fatalf("want one claim of r2, got %+v / %+v", h, z.Allocations)
	}
	// r1 comes back late: it is stale and must claim nothing.
	z, out = m.Step(z, rec(placeReq("r1", "vm1", 2, 1024)), t0)
	checkInvariants(t, m, z)
	if len(out) != 0 || host(t, z, "h1").UsedCPU != 2 {
		t.Fatalf("stale request acted: %+v", out)
	}
}

func TestDecidedMemoryIsBounded(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DecidedMemory = 3
	m := New(cfg)
	vs := []any{hostUp("h1", "c", 64, 1<<20)}
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		vs = append(vs, placeReq("r"+id, "vm"+id, 1, 1))
	}
	z, _ := run(t, m, vs...)
	if want := []string{"rc", "rd", "re"}; !slices.Equal(z.Decided, want) {
		t.Fatalf("decided = %v, want %v", z.Decided, want)
	}
	// An id forgotten by Decided is still recognised through its allocation.
	z, out := m.Step(z, rec(placeReq("ra", "vma", 1, 1)), t0)
	checkInvariants(t, m, z)
	if len(out) != 1 || len(only[*schemas.PlacementDecided](out)) != 1 {
		t.Fatalf("forgotten id with a live claim: want the decision again, got %+v", out)
	}
}

func TestRelease(t *testing.T) {
	m := New(DefaultConfig())
	setup := []any{hostUp("h1", "c", 4, 8192), placeReq("r1", "vm1", 2, 1024), placeReq("r2", "vm2", 1, 512)}
	tests := []struct {
		name    string
		release *schemas.ReleaseVm
		want    int   // CapacityReleased records
		usedCPU int32 // on h1 after
	}{
		{"a held vm", &schemas.ReleaseVm{RequestID: "x", VmID: "vm1"}, 1, 1},
		{"on its host", &schemas.ReleaseVm{RequestID: "x", VmID: "vm1", HostID: "h1"}, 1, 1},
		{"on another host", &schemas.ReleaseVm{RequestID: "x", VmID: "vm1", HostID: "h9"}, 0, 3},
		{"an unknown vm", &schemas.ReleaseVm{RequestID: "x", VmID: "nope"}, 0, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			z, out := run(t, m, append(setup, tt.release)...)
			if len(out) != tt.want || len(only[*schemas.CapacityReleased](out)) != tt.want {
				t.Fatalf("want %d CapacityReleased, got %+v", tt.want, out)
			}
			if got := host(t, z, "h1").UsedCPU; got != tt.usedCPU {
				t.Fatalf("used cpu %d, want %d", got, tt.usedCPU)
			}
			for _, ev := range only[*schemas.CapacityReleased](out) {
				if ev.HostUsedCPU != tt.usedCPU || ev.CPU != 2 || ev.MemoryMB != 1024 {
					t.Fatalf("release event %+v", ev)
				}
			}
			// A redelivered release changes nothing.
			z2, again := m.Step(z, rec(tt.release), t0)
			checkInvariants(t, m, z2)
			if len(again) != 0 {
				t.Fatalf("second release emitted %+v", again)
			}
		})
	}
}

func TestHostStatusUpdatesLedger(t *testing.T) {
	m := New(DefaultConfig())
	z, _ := run(t, m, hostUp("h1", "c", 4, 8192, "ssd"), placeReq("r1", "vm1", 2, 1024))
	moved := hostUp("h1", "c2", 8, 16384, "gpu")
	moved.Reservable = false
	moved.MemOvercommit = 1.5
	z, out := m.Step(z, rec(moved), t0)
	checkInvariants(t, m, z)
	h := host(t, z, "h1")
	if len(out) != 0 || h.ClusterID != "c2" || h.CPU != 8 || h.Reservable || h.UsedCPU != 2 ||
		!slices.Equal(h.Tags, []string{"gpu"}) || h.CPUOvercommit != 4 || h.MemOvercommit != 1.5 {
		t.Fatalf("ledger row after status: %+v", h)
	}
	// A removed host with a VM stays until the VM is released; then a
	// removal drops it.
	removed := hostUp("h1", "c2", 8, 16384)
	removed.Status, removed.Reservable = "Removed", false
	z, _ = m.Step(z, rec(removed), t0)
	checkInvariants(t, m, z)
	host(t, z, "h1")
	z, _ = m.Step(z, rec(&schemas.ReleaseVm{VmID: "vm1"}), t0)
	z, _ = m.Step(z, rec(removed), t0)
	checkInvariants(t, m, z)
	if hostIndex(z, "h1") >= 0 {
		t.Fatalf("removed empty host kept: %+v", z.Hosts)
	}
}

// TestRestoredZoneDecidesAlike steps a zone and a decoded copy of it (what
// the runtime restores from the changelog) with the same requests: the index
// built for the copy must decide exactly as the one kept up to date.
func TestRestoredZoneDecidesAlike(t *testing.T) {
	m := New(DefaultConfig())
	vs := []any{hostUp("h1", "c1", 2, 4096), hostUp("h2", "c2", 2, 4096), hostUp("h3", "c2", 4, 4096)}
	for i := range 6 {
		vs = append(vs, placeReq(fmt.Sprintf("r%d", i), fmt.Sprintf("vm%d", i), 2, 512))
	}
	vs = append(vs, &schemas.ReleaseVm{VmID: "vm2"})
	live, _ := run(t, m, vs...)
	restored := testkit.ThroughAvro(t, live)
	m2 := New(DefaultConfig())
	for i := 10; i < 16; i++ {
		req := placeReq(fmt.Sprintf("r%d", i), fmt.Sprintf("vm%d", i), 1+int32(i%3), 256)
		var a, b []schemas.Record
		live, a = m.Step(live, rec(req), t0)
		restored, b = m2.Step(restored, rec(req), t0)
		checkInvariants(t, m, live)
		checkInvariants(t, m2, restored)
		if fmt.Sprint(summaries(a)) != fmt.Sprint(summaries(b)) {
			t.Fatalf("request %d: live %v, restored %v", i, summaries(a), summaries(b))
		}
	}
}

func summaries(out []schemas.Record) []string {
	var s []string
	for _, r := range out {
		s = append(s, summary(r))
	}
	return s
}
