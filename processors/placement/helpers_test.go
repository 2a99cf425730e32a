package placement

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vmplane/vmplane/internal/testkit"
	"github.com/vmplane/vmplane/schemas"
)

var t0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

func hostUp(id, cluster string, cpu int32, memMB int64, tags ...string) *schemas.HostStatus {
	return &schemas.HostStatus{
		HostID: id, ZoneID: "z1", PodID: "p1", ClusterID: cluster, Status: "Up", ResourceState: "Enabled",
		Reservable: true, CPU: cpu, MemoryMB: memMB, Tags: tags,
	}
}

func placeReq(req, vm string, cpu int32, memMB int64) *schemas.PlaceVm {
	return &schemas.PlaceVm{
		RequestID: req, VmID: vm, ZoneID: "z1", Account: "acme", Epoch: 3,
		Offering: schemas.Offering{ID: "o1", Name: "small", CPU: cpu, MemoryMB: memMB},
	}
}

func rec(v any) schemas.Record {
	return schemas.Record{Topic: schemas.TopicPlacementRequests, Key: "z1", Value: v}
}

// run steps every value in order from an empty zone, checking the ledger
// invariants and the state round trip after each step, and returns the
// state and the outputs of the last step.
func run(t *testing.T, m *Machine, vs ...any) (*schemas.ZoneRecord, []schemas.Record) {
	t.Helper()
	var z *schemas.ZoneRecord
	var out []schemas.Record
	for _, v := range vs {
		z, out = m.Step(z, rec(v), t0)
		checkInvariants(t, m, z)
	}
	return z, out
}

// checkInvariants holds what must be true of every ledger: allocations sum
// to used, nothing is over the over-committed capacity, a VM holds at most
// two claims (one while it migrates or resizes away) and never two on one
// host, no Dedicated host runs VMs of two accounts or of another account,
// a reserved host with VMs is not waiting for release, the incremental
// index equals one built from scratch, and the state survives its
// changelog encoding, whole and in parts.
func checkInvariants(t *testing.T, m *Machine, z *schemas.ZoneRecord) {
	t.Helper()
	if z == nil {
		return
	}
	type sum struct {
		cpu int32
		mem int64
	}
	sums := map[string]sum{}
	claims := map[string][]string{}
	accounts := map[string]map[string]bool{}
	for _, a := range z.Allocations {
		if slices.Contains(claims[a.VmID], a.HostID) {
			t.Fatalf("vm %s holds two allocations on %s: %+v", a.VmID, a.HostID, z.Allocations)
		}
		claims[a.VmID] = append(claims[a.VmID], a.HostID)
		if len(claims[a.VmID]) > 2 {
			t.Fatalf("vm %s holds %d allocations: %+v", a.VmID, len(claims[a.VmID]), z.Allocations)
		}
		i := hostIndex(z, a.HostID)
		if i < 0 {
			t.Fatalf("allocation of %s on unknown host %s", a.VmID, a.HostID)
		}
		if h := z.Hosts[i]; h.ResourceUsage == Dedicated && h.ReservedFor != a.Account {
			t.Fatalf("dedicated host %s (for %s) holds %s of %s", h.HostID, h.ReservedFor, a.VmID, a.Account)
		}
		if accounts[a.HostID] == nil {
			accounts[a.HostID] = map[string]bool{}
		}
		accounts[a.HostID][a.Account] = true
		s := sums[a.HostID]
		sums[a.HostID] = sum{s.cpu + a.CPU, s.mem + a.MemoryMB}
	}
	for _, h := range z.Hosts {
		s := sums[h.HostID]
		if s.cpu != h.UsedCPU || s.mem != h.UsedMemoryMB {
			t.Fatalf("host %s: used %d/%d, allocations sum %d/%d", h.HostID, h.UsedCPU, h.UsedMemoryMB, s.cpu, s.mem)
		}
		if int64(h.UsedCPU) > cpuLimit(h) || h.UsedMemoryMB > memLimit(h) {
			t.Fatalf("host %s over capacity: used %d/%d limit %d/%d", h.HostID, h.UsedCPU, h.UsedMemoryMB, cpuLimit(h), memLimit(h))
		}
		if h.ResourceUsage == Dedicated && len(accounts[h.HostID]) > 1 {
			t.Fatalf("dedicated host %s holds VMs of %v", h.HostID, accounts[h.HostID])
		}
		if h.Planner == "" && (h.ResourceUsage != "" || h.ReservedFor != "") {
			t.Fatalf("host %s: reservation fields without a planner: %+v", h.HostID, h)
		}
		if hasClaim(z, h.HostID) && h.Planner == "" {
			t.Fatalf("host %s holds VMs without a reservation", h.HostID)
		}
		if hasClaim(z, h.HostID) && h.EmptySince != 0 {
			t.Fatalf("host %s holds VMs but is marked empty since %d", h.HostID, h.EmptySince)
		}
	}
	checkStorage(t, z)
	if len(z.Decided) > m.cfg.DecidedMemory {
		t.Fatalf("decided holds %d ids, memory is %d", len(z.Decided), m.cfg.DecidedMemory)
	}
	checkIndex(t, m, z)
	roundTrip(t, z)
	checkParts(t, m, z)
}

func hasClaim(z *schemas.ZoneRecord, hostID string) bool {
	return slices.ContainsFunc(z.Allocations, func(a schemas.Allocation) bool { return a.HostID == hostID })
}

// checkIndex compares the machine's incremental index of z with one built
// from scratch.
func checkIndex(t *testing.T, m *Machine, z *schemas.ZoneRecord) {
	t.Helper()
	ix := m.index(z)
	fresh := buildIndex(z)
	norm := func(ix *zoneIndex) map[string]any {
		cl := map[string]string{}
		for id, c := range ix.clusters {
			var hs []string
			for _, i := range c.hosts {
				hs = append(hs, z.Hosts[i].HostID)
			}
			cl[id] = fmt.Sprintf("%s %v free=%d/%d hosts=%d", c.PodID, hs, c.FreeCPU, c.FreeMemoryMB, c.Hosts)
		}
		// Per-account counts are kept by cluster and pod number, and the
		// hosts' tallies by account and group id, which depend on the
		// order things were seen: compare them by name.
		onHosts := func(on [][]tally, id int32) map[string]int {
			hs := map[string]int{}
			for i, ts := range on {
				hs[z.Hosts[i].HostID] = tallyOf(ts, id)
			}
			return nonZero(hs)
		}
		acc, ded := map[string]string{}, map[string]string{}
		for a, u := range ix.accounts {
			clusters, pods, dedicated := map[string]int{}, map[string]int{}, map[string]int{}
			for id, c := range ix.clusters {
				clusters[id], dedicated[id] = countAt(u.clusters, c.n), countAt(u.dedicated, c.n)
			}
			for id, p := range ix.pods {
				pods[id] = countAt(u.pods, p)
			}
			if hs := onHosts(ix.accountsOn, u.id); len(hs) > 0 {
				acc[a] = fmt.Sprint(hs, nonZero(clusters), nonZero(pods))
			}
			if nz := nonZero(dedicated); len(nz) > 0 {
				ded[a] = fmt.Sprint(nz)
			}
		}
		grp := map[string]string{}
		for name, g := range ix.groups {
			if hs := onHosts(ix.groupsOn, g.id); len(hs) > 0 || g.vms != 0 {
				grp[name] = fmt.Sprint(g.vms, hs)
			}
		}
		allocs := map[string]string{}
		for vm, ps := range ix.allocs {
			var hs []string
			for _, p := range ps {
				hs = append(hs, z.Allocations[p].VmID+"@"+z.Allocations[p].HostID)
			}
			slices.Sort(hs)
			allocs[vm] = fmt.Sprint(hs)
		}
		return map[string]any{"host": fmt.Sprint(ix.host), "clusters": cl, "ids": fmt.Sprint(clusterIDs(ix)),
			"allocs": allocs, "hostVMs": fmt.Sprint(ix.hostVMs), "accounts": acc, "dedicated": ded,
			"groups": grp, "releasable": fmt.Sprint(ix.releasable), "decided": fmt.Sprint(ix.decided),
			"storage": normStorage(ix)}
	}
	if got, want := norm(ix), norm(fresh); !reflect.DeepEqual(got, want) {
		t.Fatalf("incremental index differs from a fresh one:\n got %v\nwant %v", got, want)
	}
}

func clusterIDs(ix *zoneIndex) []string {
	var ids []string
	for _, c := range ix.byID {
		ids = append(ids, c.ID)
	}
	return ids
}

func nonZero[K comparable](m map[K]int) map[K]int {
	out := map[K]int{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

func roundTrip(t *testing.T, z *schemas.ZoneRecord) {
	t.Helper()
	b, err := schemas.Marshal(z)
	if err != nil {
		t.Fatalf("marshal zone: %v", err)
	}
	v, err := schemas.Unmarshal(b)
	if err != nil {
		t.Fatalf("unmarshal zone: %v", err)
	}
	back, ok := v.(*schemas.ZoneRecord)
	if !ok {
		t.Fatalf("unmarshal zone: got %T", v)
	}
	if !reflect.DeepEqual(canon(back), canon(z)) {
		t.Fatalf("round trip changed the zone:\n got %+v\nwant %+v", back, z)
	}
	b2, err := schemas.Marshal(back)
	if err != nil || !bytes.Equal(b, b2) {
		t.Fatalf("re-encoding differs (err %v)", err)
	}
}

// canon maps empty slices to nil: Avro does not tell them apart.
func canon(z *schemas.ZoneRecord) schemas.ZoneRecord {
	c := *z
	c.Hosts = nil
	for _, h := range z.Hosts {
		if len(h.Tags) == 0 {
			h.Tags = nil
		}
		c.Hosts = append(c.Hosts, h)
	}
	if len(z.Allocations) == 0 {
		c.Allocations = nil
	}
	if len(z.Decided) == 0 {
		c.Decided = nil
	}
	c.Pools = nil
	for _, p := range z.Pools {
		if len(p.Tags) == 0 {
			p.Tags = nil
		}
		c.Pools = append(c.Pools, p)
	}
	if len(z.Networks) == 0 {
		c.Networks = nil
	}
	if len(z.Volumes) == 0 {
		c.Volumes = nil
	}
	if len(z.Nics) == 0 {
		c.Nics = nil
	}
	return c
}

// only returns the values of the outputs of one type.
func only[T any](out []schemas.Record) []T {
	var vs []T
	for _, r := range out {
		if v, ok := r.Value.(T); ok {
			vs = append(vs, v)
		}
	}
	return vs
}

// allocationOf returns the index of a VM's first allocation, or -1.
func allocationOf(z *schemas.ZoneRecord, vmID string) int {
	return slices.IndexFunc(z.Allocations, func(a schemas.Allocation) bool { return a.VmID == vmID })
}

func host(t *testing.T, z *schemas.ZoneRecord, id string) schemas.HostCapacity {
	t.Helper()
	i := hostIndex(z, id)
	if i < 0 {
		t.Fatalf("host %s not in ledger", id)
	}
	return z.Hosts[i]
}

// partsLogs holds a testkit.PartsLog per machine and zone the invariants
// saw.
var partsLogs sync.Map

type partsLogKey struct {
	m *Machine
	z *schemas.ZoneRecord
}

// checkParts writes the parts of z the machine says changed to the zone's
// log (every part, the first time it sees the zone), assembles a zone from
// the log as a restore would, and compares it with z: a change the machine
// did not mark would be lost by a restart.
func checkParts(t *testing.T, m *Machine, z *schemas.ZoneRecord) {
	t.Helper()
	v, seen := partsLogs.LoadOrStore(partsLogKey{m, z}, testkit.PartsLog{})
	log := v.(testkit.PartsLog)
	testkit.Write[*schemas.ZoneRecord](t, log, m.AppendParts(nil, z.ZoneID, z, !seen))
	back, err := New(DefaultConfig()).Assemble(z.ZoneID, log.Parts(t))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(sortedZone(back), sortedZone(z)) {
		t.Fatalf("the zone assembled from its parts differs:\n got %+v\nwant %+v", sortedZone(back), sortedZone(z))
	}
}

// sortedZone is canon(z) with its lists in id order: the order of a
// zone's lists in memory is not state (Assemble).
func sortedZone(z *schemas.ZoneRecord) schemas.ZoneRecord {
	c := canon(z)
	c.Hosts = slices.Clone(c.Hosts)
	slices.SortFunc(c.Hosts, func(a, b schemas.HostCapacity) int { return strings.Compare(a.HostID, b.HostID) })
	c.Allocations = slices.Clone(c.Allocations)
	slices.SortFunc(c.Allocations, func(a, b schemas.Allocation) int {
		return strings.Compare(a.VmID+"\x00"+a.HostID, b.VmID+"\x00"+b.HostID)
	})
	c.Volumes = slices.Clone(c.Volumes)
	slices.SortFunc(c.Volumes, func(a, b schemas.VolumeClaim) int { return strings.Compare(a.VolumeID, b.VolumeID) })
	c.Nics = slices.Clone(c.Nics)
	slices.SortFunc(c.Nics, func(a, b schemas.NicClaim) int { return strings.Compare(a.NicID, b.NicID) })
	c.Pools = slices.Clone(c.Pools)
	slices.SortFunc(c.Pools, func(a, b schemas.PoolState) int { return strings.Compare(a.PoolID, b.PoolID) })
	c.Networks = slices.Clone(c.Networks)
	slices.SortFunc(c.Networks, func(a, b schemas.NetworkState) int { return strings.Compare(a.NetworkID, b.NetworkID) })
	return c
}
