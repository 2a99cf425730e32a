package placement

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/vmplane/vmplane/internal/testkit"
	"github.com/vmplane/vmplane/schemas"
)

// FuzzLedger drives a zone with random sequences of host status changes
// (disables, removals), deploys through every planner for two accounts,
// migrations, resizes, releases (stops, confirmations), lease changes and
// timer ticks, and checks after every step the ledger invariants of
// checkInvariants (used within capacity × over-commit, no Dedicated host
// with two accounts' VMs, reservations match allocations, the index
// matches the ledger, the state round-trips whole and in parts) plus what
// each answer promises and that every release gives back exactly what was
// claimed. A twin machine steps the same inputs and is restarted now and
// then from the zone's changelog parts alone: it must answer as the
// machine that never restarted.
func FuzzLedger(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 150 {
		b := make([]byte, 5*(10+r.IntN(60)))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		f.Add(b)
	}
	planners := []string{"", FirstFitName, UserDispersingName, UserConcentratedPodName, ImplicitDedicationName, BinpackName, SpreadName}
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg := DefaultConfig()
		cfg.DecidedMemory = 8 // small, so forgotten request ids are exercised too
		m := New(cfg)
		var z *schemas.ZoneRecord
		now := t0
		tw := &twin{m: New(cfg)}
		step := func(v any) []schemas.Record {
			var out []schemas.Record
			z, out = m.Step(z, rec(v), now)
			tw.step(t, v, now, out)
			return out
		}
		// Pools of every scope and a small network, so volumes and NICs
		// fill them up and wrap around.
		for _, st := range []any{
			&schemas.UpdateStoragePool{RequestID: "pz", PoolID: "pz", Scope: schemas.PoolScopeZone, Path: "/z", CapacityMB: 6000},
			&schemas.UpdateStoragePool{RequestID: "pc", PoolID: "pc", Scope: schemas.PoolScopeCluster, ClusterID: "c1", Path: "/c", CapacityMB: 4000, Tags: []string{"ssd"}},
			&schemas.UpdateStoragePool{RequestID: "ph", PoolID: "ph", Scope: schemas.PoolScopeHost, HostID: "h2", Path: "/h", CapacityMB: 3000},
			&schemas.UpdateNetwork{RequestID: "n", NetworkID: "n", Cidr: "10.0.0.0/28", Gateway: "10.0.0.1", Default: true},
		} {
			step(st)
		}
		seq := 0
		for len(b) >= 5 {
			op, a, c, d, e := b[0], b[1], b[2], b[3], b[4]
			b = b[5:]
			now = now.Add(time.Duration(d) * 3 * time.Second)
			hostID := fmt.Sprintf("h%d", a%6)
			vmID := fmt.Sprintf("vm%d", c%8)
			account := []string{"acme", "bolt"}[int(c%8)%2] // a VM keeps its account
			seq++
			var out []schemas.Record
			switch op % 8 {
			case 0:
				// Capacity is fixed per host so "used never exceeds capacity"
				// is a fair invariant; everything else may change.
				st := hostUp(hostID, fmt.Sprintf("c%d", c%3), int32(a%6+1), int64(a%6+1)*1024)
				st.PodID = fmt.Sprintf("p%d", c%3%2)
				st.Reservable = d%4 != 0
				if d%3 == 0 {
					st.Tags = []string{"ssd"}
				}
				if d%7 == 0 {
					st.Status, st.Reservable = "Removed", false
				}
				out = step(st)
				if len(out) != 0 {
					t.Fatalf("host status emitted %v", out)
				}
			case 1, 2:
				req := placeReq(fmt.Sprintf("r%d", d%16), vmID, int32(c%5), int64(d%4)*512)
				req.Account = account
				req.Offering.DeploymentPlanner = planners[int(e)%len(planners)]
				if e%5 == 0 {
					req.Offering.PlannerMode = schemas.PlannerModePreferred
				}
				if e%3 == 0 {
					req.AffinityGroup = []string{"web", "affinity:db"}[e%2]
				}
				if a%3 == 0 {
					req.HostID = hostID
				}
				if a%5 == 2 {
					req.Offering.HostTags = []string{"ssd"}
				}
				if a%4 == 1 {
					// A migration: avoid the host the VM holds, if any.
					if cs := claimsOf(z, vmID); len(cs) > 0 {
						req.AvoidHosts = []string{cs[0].HostID}
					} else {
						req.AvoidHosts = []string{hostID}
					}
				}
				if e%4 != 3 {
					req.Volumes = []schemas.Volume{{VolumeID: vmID + "-root", SizeMB: int64(e%8) * 400}}
					if v, ok := volumeClaim(z, vmID+"-root"); ok && e%2 == 0 {
						req.Volumes[0].PoolID = v.PoolID // a start of a placed VM
					}
					if d%3 == 1 {
						req.StorageTags = []string{"ssd"}
					}
				}
				if e%3 != 2 {
					req.Nics = []schemas.Nic{{NicID: vmID + "-eth0"}}
				}
				before := claimsOf(z, vmID)
				out = step(req)
				checkAnswer(t, z, req, before, out)
			case 3:
				rel := &schemas.ReleaseVm{RequestID: fmt.Sprintf("x%d", seq), VmID: vmID}
				if a%2 == 0 {
					rel.HostID = hostID
				}
				rel.AllVolumes, rel.Nics = e%3 == 0, e%5 == 0
				before := claimsOf(z, vmID)
				out = step(rel)
				for _, al := range claimsOf(z, vmID) {
					if rel.HostID == "" || al.HostID == rel.HostID {
						t.Fatalf("release left %+v", al)
					}
				}
				// Every release gives back exactly what its claim took.
				for _, ev := range only[*schemas.CapacityReleased](out) {
					i := slices.IndexFunc(before, func(a schemas.Allocation) bool { return a.HostID == ev.HostID })
					if i < 0 || before[i].CPU != ev.CPU || before[i].MemoryMB != ev.MemoryMB {
						t.Fatalf("released %+v, the claims were %+v", ev, before)
					}
				}
			case 4:
				rs := &schemas.ResizeVm{RequestID: fmt.Sprintf("rs%d", d%16), VmID: vmID, ZoneID: "z1", Account: account,
					Epoch: 3, Offering: schemas.Offering{CPU: int32(d % 5), MemoryMB: int64(e%4) * 512, DeploymentPlanner: planners[int(e)%len(planners)]}}
				before := claimsOf(z, vmID)
				out = step(rs)
				ds := only[*schemas.PlacementDecided](out)
				if len(ds) == 1 && len(only[*schemas.CapacityAllocated](out)) == 1 && len(before) == 1 && ds[0].HostID != before[0].HostID {
					// Resized away: the old claim stays until released.
					if !slices.ContainsFunc(claimsOf(z, vmID), func(a schemas.Allocation) bool { return a == before[0] }) {
						t.Fatalf("resize to %s dropped the old claim %+v", ds[0].HostID, before[0])
					}
				}
			case 5:
				l := &schemas.LeaseStatusChanged{LeaseID: fmt.Sprintf("l%d", a%2), Project: []string{"acme", "bolt"}[d%2],
					Status:       []string{"ACTIVE", "TERMINATED"}[e%2],
					Reservations: []schemas.Reservation{{Status: "active", Hosts: []string{hostID}}}}
				step(l)
			case 6:
				// A pool changes state or capacity, or a VM's volume grows
				// or a data volume is attached.
				if e%2 == 0 {
					p := []string{"pz", "pc", "ph"}[a%3]
					up := &schemas.UpdateStoragePool{RequestID: fmt.Sprintf("u%d", seq), PoolID: p, Scope: schemas.PoolScopeZone,
						Path: "/z", CapacityMB: 2000 + int64(d)*20, State: []string{"Up", "Maintenance", "Failed", "Disabled"}[c%4]}
					switch p {
					case "pc":
						up.Scope, up.ClusterID, up.Path, up.Tags = schemas.PoolScopeCluster, "c1", "/c", []string{"ssd"}
					case "ph":
						up.Scope, up.HostID, up.Path = schemas.PoolScopeHost, "h2", "/h"
					}
					out = step(up)
					for _, pc := range only[*schemas.StoragePoolChanged](out) {
						if pc.Refused == "" && pc.Pool.CapacityMB < pc.Pool.UsedMB {
							t.Fatalf("pool below its use applied: %+v", pc)
						}
					}
					break
				}
				req := placeReq(fmt.Sprintf("v%d", seq), vmID, 0, 0)
				req.VolumesOnly = true
				if cs := claimsOf(z, vmID); len(cs) > 0 {
					req.HostID = cs[0].HostID
				}
				id := vmID + []string{"-root", "-data"}[d%2]
				req.Volumes = []schemas.Volume{{VolumeID: id, SizeMB: int64(e%8) * 300}}
				if v, ok := volumeClaim(z, id); ok {
					req.Volumes[0].PoolID = v.PoolID
				}
				out = step(req)
				if len(only[*schemas.CapacityAllocated](out))+len(only[*schemas.CapacityReleased](out)) > 0 {
					t.Fatalf("a volumes-only request changed host claims: %+v", out)
				}
			default:
				if w := m.Wake(z); !w.IsZero() && !now.Before(w) {
					z, out = m.Tick(z, "z1", now)
					tw.tick(t, now, out)
					if len(out) == 0 {
						t.Fatalf("due tick at %v (wake %v) released nothing", now, w)
					}
					if w2 := m.Wake(z); !w2.IsZero() && !now.Before(w2) {
						t.Fatalf("tick left a due timer %v", w2)
					}
				}
			}
			checkInvariants(t, m, z)
			if op%16 == 7 {
				tw.restart(t, cfg, m, z)
			}
		}
	})
}

// twin is a machine stepped with the same inputs as another, restarted
// from the other's changelog parts.
type twin struct {
	m *Machine
	z *schemas.ZoneRecord
}

func (tw *twin) step(t *testing.T, v any, now time.Time, want []schemas.Record) {
	t.Helper()
	var out []schemas.Record
	tw.z, out = tw.m.Step(tw.z, rec(v), now)
	sameOutputs(t, v, out, want)
}

func (tw *twin) tick(t *testing.T, now time.Time, want []schemas.Record) {
	t.Helper()
	var out []schemas.Record
	tw.z, out = tw.m.Tick(tw.z, "z1", now)
	sameOutputs(t, "a tick", out, want)
}

// restart makes the twin a new machine with the zone assembled from the
// parts m wrote of z (checkInvariants wrote them).
func (tw *twin) restart(t *testing.T, cfg Config, m *Machine, z *schemas.ZoneRecord) {
	t.Helper()
	v, ok := partsLogs.Load(partsLogKey{m, z})
	if !ok {
		t.Fatal("no parts written")
	}
	back, err := New(cfg).Assemble(z.ZoneID, v.(testkit.PartsLog).Parts(t))
	if err != nil {
		t.Fatal(err)
	}
	tw.m, tw.z = New(cfg), back
}

// sameOutputs compares two steps' outputs of input in, in any order.
func sameOutputs(t *testing.T, in any, got, want []schemas.Record) {
	t.Helper()
	str := func(rs []schemas.Record) []string {
		var out []string
		for _, r := range rs {
			out = append(out, fmt.Sprintf("%s %s %T%+v", r.Topic, r.Key, r.Value, r.Value))
		}
		slices.Sort(out)
		return out
	}
	if g, w := str(got), str(want); !slices.Equal(g, w) {
		t.Fatalf("the restarted twin answers\n%v\nthe machine\n%v\n(input %T%+v)", g, w, in, in)
	}
}

func volumeClaim(z *schemas.ZoneRecord, volumeID string) (schemas.VolumeClaim, bool) {
	if z == nil {
		return schemas.VolumeClaim{}, false
	}
	i := slices.IndexFunc(z.Volumes, func(v schemas.VolumeClaim) bool { return v.VolumeID == volumeID })
	if i < 0 {
		return schemas.VolumeClaim{}, false
	}
	return z.Volumes[i], true
}

func claimsOf(z *schemas.ZoneRecord, vmID string) []schemas.Allocation {
	if z == nil {
		return nil
	}
	var out []schemas.Allocation
	for _, a := range z.Allocations {
		if a.VmID == vmID {
			out = append(out, a)
		}
	}
	return out
}

// checkAnswer holds what a PlaceVm answer promises: exactly one signal; a
// decision names a host the VM now holds a claim of this request on, and
// only claims on avoided hosts (a migration's source) survive beside it; a
// failure leaves no claim but those.
func checkAnswer(t *testing.T, z *schemas.ZoneRecord, req *schemas.PlaceVm, before []schemas.Allocation, out []schemas.Record) {
	t.Helper()
	ds, fs := only[*schemas.PlacementDecided](out), only[*schemas.PlacementFailed](out)
	claims := claimsOf(z, req.VmID)
	switch {
	case len(ds) == 1 && len(fs) == 0:
		if !slices.ContainsFunc(claims, func(a schemas.Allocation) bool {
			return a.HostID == ds[0].HostID && a.RequestID == req.RequestID
		}) {
			t.Fatalf("decided %s but the VM holds %+v", ds[0].HostID, claims)
		}
		if len(only[*schemas.CapacityAllocated](out)) == 0 {
			return // a repeat: answered as first decided, whatever changed since
		}
		for _, a := range claims {
			if a.HostID != ds[0].HostID && !slices.Contains(req.AvoidHosts, a.HostID) {
				t.Fatalf("decided %s, the VM still holds %+v", ds[0].HostID, a)
			}
		}
		h := z.Hosts[hostIndex(z, ds[0].HostID)]
		if !h.Reservable || !hasTags(h.Tags, req.Offering.HostTags) || slices.Contains(req.AvoidHosts, h.HostID) {
			t.Fatalf("decided %s: not reservable, avoided or without tags %v", h.HostID, req.Offering.HostTags)
		}
		if h.LeaseProject != "" && h.LeaseProject != req.Account {
			t.Fatalf("decided %s leased to %s for %s", h.HostID, h.LeaseProject, req.Account)
		}
		// Every volume is claimed on a pool the host reaches, and every
		// NIC holds an address.
		for _, v := range ds[0].Volumes {
			c, ok := volumeClaim(z, v.VolumeID)
			p := slices.IndexFunc(z.Pools, func(p schemas.PoolState) bool { return p.PoolID == c.PoolID })
			if !ok || c.PoolID != v.PoolID || p < 0 || !reaches(&z.Pools[p], hostSite(&h)) || c.SizeMB < v.SizeMB {
				t.Fatalf("decided %s with volume %+v, claim %+v", h.HostID, v, c)
			}
		}
		for _, n := range ds[0].Nics {
			if n.IP == "" || n.MAC == "" || !slices.ContainsFunc(z.Nics, func(c schemas.NicClaim) bool { return c.NicID == n.NicID && c.IP == n.IP }) {
				t.Fatalf("decided NIC %+v without its claim", n)
			}
		}
	case len(fs) == 1 && len(ds) == 0:
		for _, a := range claims {
			if !slices.Contains(req.AvoidHosts, a.HostID) {
				t.Fatalf("failed placement but the VM holds %+v", a)
			}
		}
		if fs[0].Detail == "" {
			t.Fatalf("failure without detail: %+v", fs[0])
		}
	case len(out) == 0:
		// A stale request: decided before, released since.
	default:
		t.Fatalf("answer %+v", out)
	}
}
