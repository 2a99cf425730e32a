package placement

import (
	"fmt"
	"testing"

	"github.com/vmplane/vmplane/schemas"
)

// claims renders a VM's claims as "host:cpu" in ledger order.
func claims(z *schemas.ZoneRecord, vmID string) string {
	s := ""
	for _, a := range claimsOf(z, vmID) {
		s += fmt.Sprintf("%s:%d ", a.HostID, a.CPU)
	}
	return s
}

func TestMigrateKeepsTheSourceClaim(t *testing.T) {
	m := New(DefaultConfig())
	mig := placeReq("r2", "vm1", 2, 1024)
	mig.AvoidHosts = []string{"h1"}
	z, out := run(t, m, hostUp("h1", "c", 4, 8192), hostUp("h2", "c", 4, 8192), placeReq("r1", "vm1", 2, 1024), mig)
	if ds := only[*schemas.PlacementDecided](out); len(ds) != 1 || ds[0].HostID != "h2" || len(only[*schemas.CapacityReleased](out)) != 0 {
		t.Fatalf("migration: want h2 and no release, got %v", summaries(out))
	}
	if got := claims(z, "vm1"); got != "h1:2 h2:2 " {
		t.Fatalf("claims while migrating: %q", got)
	}
	// After the move the VM releases its source.
	z, out = m.Step(z, rec(&schemas.ReleaseVm{RequestID: "x", VmID: "vm1", HostID: "h1"}), t0)
	checkInvariants(t, m, z)
	if got := claims(z, "vm1"); got != "h2:2 " || len(out) != 1 {
		t.Fatalf("after release of the source: %q %v", got, summaries(out))
	}
	// A new request that avoids nothing it holds releases first (a retried start).
	z, out = m.Step(z, rec(placeReq("r3", "vm1", 2, 1024)), t0)
	checkInvariants(t, m, z)
	if got := claims(z, "vm1"); got != "h1:2 " && got != "h2:2 " || len(only[*schemas.CapacityReleased](out)) != 1 {
		t.Fatalf("retry: %q %v", got, summaries(out))
	}
}

func TestResize(t *testing.T) {
	resize := func(id string, cpu int32) *schemas.ResizeVm {
		return &schemas.ResizeVm{RequestID: id, VmID: "vm1", ZoneID: "z1", Account: "acme", Epoch: 4,
			Offering: schemas.Offering{Name: "big", CPU: cpu, MemoryMB: 1024}}
	}
	tests := []struct {
		name   string
		in     []any
		host   string // decided; "" for a failure
		claims string
	}{
		{"fits in place", []any{hostUp("h1", "c", 2, 8192), hostUp("h2", "c", 2, 8192), placeReq("r1", "vm1", 2, 1024), resize("rs", 6)},
			"h1", "h1:6 "},
		// The claim keeps the old size until the VM settles on one.
		{"shrinks in place", []any{hostUp("h1", "c", 2, 8192), placeReq("r1", "vm1", 4, 1024), resize("rs", 1)}, "h1", "h1:4 "},
		{"moves when it does not fit, keeping the old claim", []any{hostUp("h1", "c", 1, 8192), hostUp("h2", "c", 4, 8192),
			placeReq("r1", "vm1", 2, 1024), resize("rs", 8)}, "h2", "h1:2 h2:8 "},
		{"nowhere to go", []any{hostUp("h1", "c", 1, 8192), placeReq("r1", "vm1", 2, 1024), resize("rs", 8)}, "", "h1:2 "},
		{"no claim: placed afresh", []any{hostUp("h1", "c", 2, 8192), resize("rs", 3)}, "h1", "h1:3 "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(DefaultConfig())
			z, out := run(t, m, tt.in...)
			ds, fs := only[*schemas.PlacementDecided](out), only[*schemas.PlacementFailed](out)
			if tt.host == "" && len(fs) != 1 || tt.host != "" && (len(ds) != 1 || ds[0].HostID != tt.host || ds[0].Epoch != 4) {
				t.Fatalf("want %q, got %v", tt.host, summaries(out))
			}
			if got := claims(z, "vm1"); got != tt.claims {
				t.Fatalf("claims %q, want %q", got, tt.claims)
			}
			// A redelivered resize answers the same and claims nothing.
			z2, again := m.Step(z, rec(tt.in[len(tt.in)-1]), t0)
			checkInvariants(t, m, z2)
			if tt.host != "" && (len(again) != 1 || only[*schemas.PlacementDecided](again)[0].HostID != tt.host) {
				t.Fatalf("repeat: %v", summaries(again))
			}
		})
	}
}

func TestLeaseDedicatesHosts(t *testing.T) {
	m := New(DefaultConfig())
	lease := &schemas.LeaseStatusChanged{LeaseID: "l1", Project: "bolt", Status: "ACTIVE",
		Reservations: []schemas.Reservation{{Status: "active", Hosts: []string{"h1"}}}}
	z, out := run(t, m, hostUp("h1", "c", 4, 8192), hostUp("h2", "c", 1, 512), lease, placeReq("r1", "vm1", 2, 1024))
	if fs := only[*schemas.PlacementFailed](out); len(fs) != 1 || fs[0].Detail != "no host: 2 hosts; 1 leased to another project, 1 lack capacity" {
		t.Fatalf("acme on bolt's leased host: %v", summaries(out))
	}
	bolt := placeReq("r2", "vm2", 2, 1024)
	bolt.Account = "bolt"
	z, out = m.Step(z, rec(bolt), t0)
	if ds := only[*schemas.PlacementDecided](out); len(ds) != 1 || ds[0].HostID != "h1" {
		t.Fatalf("bolt on its lease: %v", summaries(out))
	}
	lease.Status = "TERMINATED"
	z, _ = m.Step(z, rec(lease), t0)
	z, out = m.Step(z, rec(placeReq("r3", "vm3", 2, 1024)), t0)
	checkInvariants(t, m, z)
	if ds := only[*schemas.PlacementDecided](out); len(ds) != 1 || ds[0].HostID != "h1" {
		t.Fatalf("after the lease: %v", summaries(out))
	}
}
