package placement

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// summary renders an output as one short line, so a scenario reads as the
// records it expects.
func summary(r schemas.Record) string {
	switch v := r.Value.(type) {
	case *schemas.PlacementDecided:
		return fmt.Sprintf("%s PlacementDecided %s %s@%s/%s", r.Topic, v.RequestID, v.VmID, v.ClusterID, v.HostID)
	case *schemas.PlacementFailed:
		return fmt.Sprintf("%s PlacementFailed %s %s %s", r.Topic, v.RequestID, v.VmID, v.Reason)
	case *schemas.CapacityAllocated:
		return fmt.Sprintf("%s CapacityAllocated %s@%s used=%d/%d", r.Topic, v.VmID, v.HostID, v.HostUsedCPU, v.HostUsedMemory)
	case *schemas.CapacityReleased:
		return fmt.Sprintf("%s CapacityReleased %s@%s used=%d/%d", r.Topic, v.VmID, v.HostID, v.HostUsedCPU, v.HostUsedMemory)
	case *schemas.HostReserved:
		return fmt.Sprintf("%s HostReserved %s %s %s", r.Topic, v.HostID, v.Planner, v.ResourceUsage)
	case *schemas.HostReservationReleased:
		return fmt.Sprintf("%s HostReservationReleased %s", r.Topic, v.HostID)
	}
	return fmt.Sprintf("%s %T", r.Topic, r.Value)
}

// tick stands in a scenario for the runtime firing the zone's timer.
type tick struct{}

func TestScenarioZone(t *testing.T) {
	const (
		ev  = "placement.events.v1"
		sig = "vm.signals.v1"
	)
	steps := []struct {
		at   time.Duration // since t0
		in   any
		want []string
		wake time.Duration // -1 for no timer
	}{
		{0, hostUp("h1", "c1", 2, 4096), nil, -1},
		{0, hostUp("h2", "c2", 1, 2048), nil, -1},
		{time.Second, placeReq("r1", "vm1", 4, 2048), []string{
			ev + " HostReserved h1 FirstFitPlanner Shared",
			ev + " CapacityAllocated vm1@h1 used=4/2048",
			sig + " PlacementDecided r1 vm1@c1/h1",
		}, -1},
		// c1 has 4 CPUs free, c2 has 4 too but less memory: c1 again.
		{2 * time.Second, placeReq("r2", "vm2", 4, 1024), []string{
			ev + " CapacityAllocated vm2@h1 used=8/3072",
			sig + " PlacementDecided r2 vm2@c1/h1",
		}, -1},
		{3 * time.Second, placeReq("r3", "vm3", 4, 2048), []string{
			ev + " HostReserved h2 FirstFitPlanner Shared",
			ev + " CapacityAllocated vm3@h2 used=4/2048",
			sig + " PlacementDecided r3 vm3@c2/h2",
		}, -1},
		{4 * time.Second, placeReq("r4", "vm4", 1, 512), []string{sig + " PlacementFailed r4 vm4 InsufficientCapacity"}, -1},
		{4 * time.Second, placeReq("r2", "vm2", 4, 1024), []string{sig + " PlacementDecided r2 vm2@c1/h1"}, -1},
		{10 * time.Second, &schemas.ReleaseVm{RequestID: "x3", VmID: "vm3"}, []string{ev + " CapacityReleased vm3@h2 used=0/0"}, 310 * time.Second},
		// Stop then Start: the VM asks for its old host back.
		{20 * time.Second, &schemas.ReleaseVm{RequestID: "x1", VmID: "vm1"}, []string{ev + " CapacityReleased vm1@h1 used=4/1024"}, 310 * time.Second},
		{30 * time.Second, func() *schemas.PlaceVm { r := placeReq("r5", "vm1", 4, 2048); r.HostID = "h1"; return r }(), []string{
			ev + " CapacityAllocated vm1@h1 used=8/3072",
			sig + " PlacementDecided r5 vm1@c1/h1",
		}, 310 * time.Second},
		{309 * time.Second, tick{}, nil, 310 * time.Second},
		{310 * time.Second, tick{}, []string{ev + " HostReservationReleased h2"}, -1},
		// h2 goes away; its empty row leaves the ledger.
		{311 * time.Second, func() *schemas.HostStatus {
			h := hostUp("h2", "c2", 1, 2048)
			h.Status, h.Reservable = "Removed", false
			return h
		}(), nil, -1},
		{312 * time.Second, placeReq("r6", "vm6", 1, 512), []string{sig + " PlacementFailed r6 vm6 InsufficientCapacity"}, -1},
		{313 * time.Second, &schemas.ReleaseVm{RequestID: "x2", VmID: "vm2"}, []string{ev + " CapacityReleased vm2@h1 used=4/2048"}, -1},
		{314 * time.Second, placeReq("r6", "vm6", 1, 512), []string{
			ev + " CapacityAllocated vm6@h1 used=5/2560",
			sig + " PlacementDecided r6 vm6@c1/h1",
		}, -1},
	}
	m := New(DefaultConfig())
	var z *schemas.ZoneRecord
	for i, st := range steps {
		now := t0.Add(st.at)
		var out []schemas.Record
		if _, ok := st.in.(tick); ok {
			// An early tick (309 s) must do nothing; a due one releases.
			z, out = m.Tick(z, "z1", now)
		} else {
			z, out = m.Step(z, rec(st.in), now)
		}
		checkInvariants(t, m, z)
		var got []string
		for _, r := range out {
			if r.Key != map[string]string{ev: "z1", sig: keyOf(r)}[r.Topic] {
				t.Fatalf("step %d: %s keyed %q", i, r.Topic, r.Key)
			}
			got = append(got, summary(r))
		}
		if !slices.Equal(got, st.want) {
			t.Fatalf("step %d (%T):\n got %q\nwant %q", i, st.in, got, st.want)
		}
		wake := m.Wake(z)
		if st.wake < 0 && !wake.IsZero() || st.wake >= 0 && !wake.Equal(t0.Add(st.wake)) {
			t.Fatalf("step %d: wake %v, want +%v", i, wake, st.wake)
		}
	}
}

func keyOf(r schemas.Record) string {
	switch v := r.Value.(type) {
	case *schemas.PlacementDecided:
		return v.VmID
	case *schemas.PlacementFailed:
		return v.VmID
	}
	return "?"
}
