package placement

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vmplane/vmplane/internal/scenario"
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

// TestScenarios plays testdata/*.txt (see internal/scenario for the
// syntax) against zone z1. The directives:
//
//	host <t> <id> <cluster> <cpu> <memory_mb> [<status>]   HostStatus, Up unless named
//	place <t> <request> <vm> <cpu> <memory_mb> [host=<id>]  PlaceVm
//	release <t> <request> <vm>                              ReleaseVm
//	tick <t>                                                one Tick at t, due or not
//
// Times are offsets from t0. A case's outputs are the records, as summary
// prints them, then "wake <t>" when the zone has a timer. Every step checks
// the ledger's invariants and the outputs' keys. go test
// ./processors/placement -run TestScenarios -update rewrites the expected
// outputs; review the diff before keeping it.
func TestScenarios(t *testing.T) {
	scenario.Run(t, "testdata/*.txt", func(t *testing.T) scenario.Step {
		m := New(DefaultConfig())
		var z *schemas.ZoneRecord
		return func(d scenario.Case) []string {
			var out []schemas.Record
			z, out = playZone(t, m, z, d)
			checkInvariants(t, m, z)
			var got []string
			for _, r := range out {
				if want := map[string]string{schemas.TopicPlacementEvents: "z1", schemas.TopicVmSignals: keyOf(r)}[r.Topic]; r.Key != want {
					t.Fatalf("%s: %s keyed %q, want %q", d.Pos, r.Topic, r.Key, want)
				}
				got = append(got, summary(r))
			}
			if w := m.Wake(z); !w.IsZero() {
				got = append(got, "wake "+w.Sub(t0).String())
			}
			return got
		}
	})
}

// playZone runs one directive against z.
func playZone(t *testing.T, m *Machine, z *schemas.ZoneRecord, d scenario.Case) (*schemas.ZoneRecord, []schemas.Record) {
	if len(d.Args) < 1 {
		t.Fatalf("%s: %q: no time", d.Pos, d.Directive)
	}
	at, err := time.ParseDuration(d.Args[0])
	if err != nil {
		t.Fatalf("%s: %v", d.Pos, err)
	}
	now, a := t0.Add(at), d.Args[1:]
	switch {
	case d.Cmd == "tick":
		return m.Tick(z, "z1", now)
	case d.Cmd == "host" && len(a) >= 4:
		h := hostUp(a[0], a[1], int32(number(t, d, a[2])), number(t, d, a[3]))
		if len(a) > 4 {
			h.Status, h.Reservable = a[4], false
		}
		return m.Step(z, rec(h), now)
	case d.Cmd == "place" && len(a) >= 4:
		r := placeReq(a[0], a[1], int32(number(t, d, a[2])), number(t, d, a[3]))
		if len(a) > 4 {
			r.HostID = strings.TrimPrefix(a[4], "host=")
		}
		return m.Step(z, rec(r), now)
	case d.Cmd == "release" && len(a) == 2:
		return m.Step(z, rec(&schemas.ReleaseVm{RequestID: a[0], VmID: a[1]}), now)
	}
	t.Fatalf("%s: unknown directive %q", d.Pos, d.Directive)
	return nil, nil
}

func number(t *testing.T, d scenario.Case, s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("%s: %q is not a number", d.Pos, s)
	}
	return n
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
