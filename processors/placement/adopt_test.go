package placement

import (
	"slices"
	"testing"

	"github.com/vmplane/vmplane/schemas"
)

// TestAdopt holds what an adopt promises: the VM ends with exactly one
// claim, on the named host, whether or not it fits there; every other
// claim is released; the decision names that host; an unknown host fails;
// a repeat claims nothing more.
func TestAdopt(t *testing.T) {
	adopt := func(req, vm, host string, cpu int32, mem int64) *schemas.PlaceVm {
		r := placeReq(req, vm, cpu, mem)
		r.HostID, r.Adopt = host, true
		return r
	}
	migrating := placeReq("m1", "vm1", 2, 1024)
	migrating.AvoidHosts = []string{"h1"}
	tests := []struct {
		name string
		// setup runs first; then the adopt.
		setup   []any
		adopt   *schemas.PlaceVm
		want    []string
		claims  []string // hosts the VM holds after
		overCPU bool     // h2 ends over its CPU limit
	}{
		{
			name:   "stopped VM found running: claims its host",
			setup:  []any{hostUp("h1", "c1", 4, 4096), hostUp("h2", "c1", 4, 4096)},
			adopt:  adopt("a1", "vm1", "h2", 2, 1024),
			want:   []string{"HostReserved h2", "CapacityAllocated vm1@h2", "PlacementDecided a1 vm1@h2"},
			claims: []string{"h2"},
		},
		{
			name:   "claim even when it does not fit",
			setup:  []any{hostUp("h2", "c1", 1, 512), placeReq("r0", "vm0", 1, 256)},
			adopt:  adopt("a1", "vm1", "h2", 8, 1024),
			want:   []string{"CapacityAllocated vm1@h2", "PlacementDecided a1 vm1@h2"},
			claims: []string{"h2"}, overCPU: true,
		},
		{
			name:   "moved out of band: the old claim goes",
			setup:  []any{hostUp("h1", "c1", 4, 4096), hostUp("h2", "c1", 4, 4096), placeReq("r1", "vm1", 2, 1024)},
			adopt:  adopt("a1", "vm1", "h2", 2, 1024),
			want:   []string{"CapacityReleased vm1@h1", "HostReserved h2", "CapacityAllocated vm1@h2", "PlacementDecided a1 vm1@h2"},
			claims: []string{"h2"},
		},
		{
			name: "a migration landing on a third host drops source and destination",
			setup: []any{hostUp("h1", "c1", 4, 4096), hostUp("h2", "c1", 4, 4096), hostUp("h3", "c1", 4, 4096),
				placeReq("r1", "vm1", 2, 1024), migrating},
			adopt:  adopt("a1", "vm1", "h3", 2, 1024),
			want:   []string{"CapacityReleased vm1@h1", "CapacityReleased vm1@h2", "HostReserved h3", "CapacityAllocated vm1@h3", "PlacementDecided a1 vm1@h3"},
			claims: []string{"h3"},
		},
		{
			name:   "already held there: nothing to claim, others released",
			setup:  []any{hostUp("h1", "c1", 4, 4096), hostUp("h2", "c1", 4, 4096), placeReq("r1", "vm1", 2, 1024), migrating},
			adopt:  adopt("a1", "vm1", "h1", 2, 1024),
			want:   []string{"CapacityReleased vm1@h2", "PlacementDecided a1 vm1@h1"},
			claims: []string{"h1"},
		},
		{
			name:   "unknown host",
			setup:  []any{hostUp("h1", "c1", 4, 4096), placeReq("r1", "vm1", 2, 1024)},
			adopt:  adopt("a1", "vm1", "h9", 2, 1024),
			want:   []string{"PlacementFailed a1 vm1 UnknownHost"},
			claims: []string{"h1"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := New(DefaultConfig())
			z, _ := run(t, m, tc.setup...)
			z, out := m.Step(z, rec(tc.adopt), t0)
			var got []string
			for _, r := range out {
				got = append(got, short(r))
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			var hosts []string
			for _, a := range claimsOf(z, "vm1") {
				hosts = append(hosts, a.HostID)
			}
			if !slices.Equal(hosts, tc.claims) {
				t.Fatalf("claims on %v, want %v", hosts, tc.claims)
			}
			if i := hostIndex(z, "h2"); i >= 0 && tc.overCPU != (int64(z.Hosts[i].UsedCPU) > cpuLimit(z.Hosts[i])) {
				t.Fatalf("h2 used %d of %d", z.Hosts[i].UsedCPU, cpuLimit(z.Hosts[i]))
			}
			checkIndex(t, m, z)
			roundTrip(t, z)
			// A repeat claims nothing more and answers the same.
			z, again := m.Step(z, rec(tc.adopt), t0)
			if n := len(only[*schemas.CapacityAllocated](again)) + len(only[*schemas.CapacityReleased](again)); n != 0 {
				t.Fatalf("repeat changed the ledger: %v", again)
			}
			checkIndex(t, m, z)
		})
	}
}

// TestAdoptAfterReleaseIsStale: an adopt that was answered and whose claim
// the VM released since (it stopped) claims nothing when it comes again.
func TestAdoptAfterReleaseIsStale(t *testing.T) {
	m := New(DefaultConfig())
	a := placeReq("a1", "vm1", 2, 1024)
	a.HostID, a.Adopt = "h1", true
	z, _ := run(t, m, hostUp("h1", "c1", 4, 4096), a, &schemas.ReleaseVm{RequestID: "x", VmID: "vm1"})
	z, out := m.Step(z, rec(a), t0)
	if len(out) != 0 || len(claimsOf(z, "vm1")) != 0 {
		t.Fatalf("stale adopt answered %v, claims %v", out, claimsOf(z, "vm1"))
	}
}

func short(r schemas.Record) string {
	switch v := r.Value.(type) {
	case *schemas.PlacementDecided:
		return "PlacementDecided " + v.RequestID + " " + v.VmID + "@" + v.HostID
	case *schemas.PlacementFailed:
		return "PlacementFailed " + v.RequestID + " " + v.VmID + " " + v.Reason
	case *schemas.CapacityAllocated:
		return "CapacityAllocated " + v.VmID + "@" + v.HostID
	case *schemas.CapacityReleased:
		return "CapacityReleased " + v.VmID + "@" + v.HostID
	case *schemas.HostReserved:
		return "HostReserved " + v.HostID
	}
	return "?"
}
