package placement

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// FuzzLedger drives a zone with random sequences of HostStatus, PlaceVm,
// ReleaseVm and timer ticks and checks the ledger invariants (and the state
// round trip) after every step, plus what each answer promises the VM.
func FuzzLedger(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 150 {
		b := make([]byte, 4*(10+r.IntN(60)))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg := DefaultConfig()
		cfg.DecidedMemory = 8 // small, so forgotten request ids are exercised too
		m := New(cfg)
		var z *schemas.ZoneRecord
		now := t0
		for len(b) >= 4 {
			op, a, c, d := b[0], b[1], b[2], b[3]
			b = b[4:]
			now = now.Add(time.Duration(d) * 3 * time.Second)
			hostID := fmt.Sprintf("h%d", a%5)
			vmID := fmt.Sprintf("vm%d", c%8)
			var out []schemas.Record
			switch op % 5 {
			case 0:
				// Capacity is fixed per host so "used never exceeds capacity"
				// is a fair invariant; everything else may change.
				st := hostUp(hostID, fmt.Sprintf("c%d", c%2), int32(a%5+1), int64(a%5+1)*1024)
				st.Reservable = d%4 != 0
				if d%3 == 0 {
					st.Tags = []string{"ssd"}
				}
				if d%7 == 0 {
					st.Status, st.Reservable = "Removed", false
				}
				z, out = m.Step(z, rec(st), now)
				if len(out) != 0 {
					t.Fatalf("host status emitted %v", out)
				}
			case 1, 2:
				req := placeReq(fmt.Sprintf("r%d", d%16), vmID, int32(c%5), int64(d%4)*512)
				if a%3 == 0 {
					req.HostID = hostID
				}
				if a%4 == 1 {
					req.AvoidHosts = []string{hostID}
				}
				if a%5 == 2 {
					req.Offering.HostTags = []string{"ssd"}
				}
				z, out = m.Step(z, rec(req), now)
				checkAnswer(t, z, req, out)
			case 3:
				rel := &schemas.ReleaseVm{RequestID: "x", VmID: vmID}
				if a%2 == 0 {
					rel.HostID = hostID
				}
				z, out = m.Step(z, rec(rel), now)
				for _, al := range z.Allocations {
					if al.VmID == vmID && (rel.HostID == "" || al.HostID == rel.HostID) {
						t.Fatalf("release left %+v", al)
					}
				}
			case 4:
				if w := m.Wake(z); !w.IsZero() && !now.Before(w) {
					z, out = m.Tick(z, "z1", now)
					if len(out) == 0 {
						t.Fatalf("due tick at %v (wake %v) released nothing", now, w)
					}
					if w2 := m.Wake(z); !w2.IsZero() && !now.Before(w2) {
						t.Fatalf("tick left a due timer %v", w2)
					}
				}
			}
			checkInvariants(t, m, z)
		}
	})
}

// checkAnswer holds what a PlaceVm answer promises: exactly one signal, and
// a decision names the host the VM now holds its only claim on.
func checkAnswer(t *testing.T, z *schemas.ZoneRecord, req *schemas.PlaceVm, out []schemas.Record) {
	t.Helper()
	ds, fs := only[*schemas.PlacementDecided](out), only[*schemas.PlacementFailed](out)
	i := allocationOf(z, req.VmID)
	switch {
	case len(ds) == 1 && len(fs) == 0:
		if i < 0 || z.Allocations[i].HostID != ds[0].HostID || z.Allocations[i].RequestID != req.RequestID {
			t.Fatalf("decided %s but the VM holds %+v", ds[0].HostID, z.Allocations)
		}
		if len(only[*schemas.CapacityAllocated](out)) == 0 {
			return // a repeat: answered as first decided, whatever changed since
		}
		h := z.Hosts[hostIndex(z, ds[0].HostID)]
		if !h.Reservable || !hasTags(h.Tags, req.Offering.HostTags) {
			t.Fatalf("decided %s not reservable or without tags %v", h.HostID, req.Offering.HostTags)
		}
	case len(fs) == 1 && len(ds) == 0:
		if i >= 0 {
			t.Fatalf("failed placement but the VM holds %+v", z.Allocations[i])
		}
	case len(out) == 0:
		// A stale request: decided before, released since.
	default:
		t.Fatalf("answer %+v", out)
	}
}
