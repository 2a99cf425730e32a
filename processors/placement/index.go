package placement

import (
	"slices"
	"sort"

	"github.com/vmplane/vmplane/schemas"
)

// zoneIndex is derived from one *schemas.ZoneRecord and kept in step with it
// by every change the machine makes, so a decision costs the clusters it
// orders and the hosts it looks at, never a walk over the whole zone. It is
// not state: a zone the machine has not indexed (restored from the
// changelog, or built by a test) is indexed from scratch on first sight.
type zoneIndex struct {
	z        *schemas.ZoneRecord
	host     map[string]int // host id → position in z.Hosts
	clusters map[string]*clusterIndex
	// byID holds the clusters sorted by id, so every walk is deterministic.
	byID []*clusterIndex
	// pods numbers the pods (Cluster.pod) and clusterCount the clusters
	// ever indexed (Cluster.n): the per-account counts are slices by these
	// numbers, so a planner's comparison reads no map.
	pods         map[string]int
	clusterCount int
	// allocs maps a VM to the positions of its allocations in z.Allocations.
	allocs map[string][]int
	// hostVMs counts the allocations on each host.
	hostVMs map[string]int
	// accounts counts each account's allocations per cluster and pod, and
	// the hosts reserved Dedicated for it: what the account-aware planners
	// order by. groups counts each affinity group's allocations.
	accounts map[string]*accountUse
	groups   map[string]*groupUse
	// accountsOn and groupsOn hold, by host position, the tallies of the
	// accounts and groups with VMs on the host (tally.go).
	accountsOn, groupsOn [][]tally
	// limit is what each host (by position) may hand out, capacity ×
	// over-commit; free is what it may still take, limit minus what is
	// allocated, negative on a host an adopted VM over-commits. The filters
	// and the scores read them instead of recomputing them.
	limit, free []capacity
	// releasable holds the hosts whose reservation waits for the release
	// period: reserved and empty.
	releasable map[string]bool
	decided    map[string]bool
	// candidates is the clusters of a queue, kept between decisions.
	candidates []rankedCluster
	storeIndex
	// changed marks the parts of the zone changed since they were written
	// (parts.go); nil while the index is built, which changes nothing.
	changed *changes
}

// clusterIndex is one cluster: what a planner sees of it, kept up to date
// on every change, and its hosts (positions, by host id).
type clusterIndex struct {
	Cluster
	hosts []int
}

// capacity is an amount of CPUs and memory (MiB).
type capacity struct{ cpu, mem int64 }

// accountUse is one account's allocations per cluster and pod (by
// Cluster.n and Cluster.pod) and its Dedicated hosts per cluster.
type accountUse struct {
	id                        int32 // in the hosts' account tallies
	clusters, pods, dedicated []int
}

// groupUse is one affinity group.
type groupUse struct {
	id  int32 // in the hosts' group tallies
	vms int   // its allocations in the zone
}

// addAt adds d to s[k], growing s as needed.
func addAt(s *[]int, k, d int) {
	if k >= len(*s) {
		*s = append(*s, make([]int, k+1-len(*s))...)
	}
	(*s)[k] += d
}

// countAt is s[k], 0 beyond s.
func countAt(s []int, k int) int {
	if k < len(s) {
		return s[k]
	}
	return 0
}

// account returns an account's counts, creating them.
func (ix *zoneIndex) account(name string) *accountUse {
	u := ix.accounts[name]
	if u == nil {
		u = &accountUse{id: int32(len(ix.accounts))}
		ix.accounts[name] = u
	}
	return u
}

// index returns the index of z, building it when z is not the zone the
// machine indexed last for this key.
func (m *Machine) index(z *schemas.ZoneRecord) *zoneIndex {
	if ix, ok := m.indexes[z.ZoneID]; ok && ix.z == z {
		return ix
	}
	ix := buildIndex(z)
	ix.changed = newChanges()
	m.indexes[z.ZoneID] = ix
	return ix
}

// reindex builds the index of ix's zone afresh, after a change that moves
// positions, keeping what ix marked changed.
func (m *Machine) reindex(ix *zoneIndex) {
	fresh := buildIndex(ix.z)
	fresh.changed = ix.changed
	m.indexes[ix.z.ZoneID] = fresh
}

func buildIndex(z *schemas.ZoneRecord) *zoneIndex {
	ix := &zoneIndex{
		z: z, host: make(map[string]int, len(z.Hosts)), clusters: map[string]*clusterIndex{}, pods: map[string]int{},
		allocs: make(map[string][]int, len(z.Allocations)), hostVMs: map[string]int{},
		accounts: map[string]*accountUse{}, groups: map[string]*groupUse{}, releasable: map[string]bool{},
		limit: make([]capacity, len(z.Hosts)), free: make([]capacity, len(z.Hosts)), accountsOn: make([][]tally, len(z.Hosts)), groupsOn: make([][]tally, len(z.Hosts)),
		decided: make(map[string]bool, len(z.Decided)),
	}
	// Hosts are indexed in id order so each cluster's list comes sorted.
	order := make([]int, len(z.Hosts))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return z.Hosts[order[a]].HostID < z.Hosts[order[b]].HostID })
	for _, i := range order {
		h := &z.Hosts[i]
		ix.host[h.HostID] = i
		c := ix.cluster(h.ClusterID, h.PodID)
		c.hosts = append(c.hosts, i)
		c.Hosts++
		ix.count(i, +1)
	}
	for i, a := range z.Allocations {
		ix.allocs[a.VmID] = append(ix.allocs[a.VmID], i)
		ix.use(a, +1)
	}
	for _, h := range z.Hosts {
		ix.track(h.HostID)
	}
	for _, id := range z.Decided {
		ix.decided[id] = true
	}
	ix.indexStorage()
	return ix
}

// cluster returns a cluster's index, creating it.
func (ix *zoneIndex) cluster(id, pod string) *clusterIndex {
	c, ok := ix.clusters[id]
	if !ok {
		p, ok := ix.pods[pod]
		if !ok {
			p = len(ix.pods)
			ix.pods[pod] = p
		}
		c = &clusterIndex{Cluster: Cluster{ID: id, PodID: pod, n: ix.clusterCount, pod: p}}
		ix.clusterCount++
		ix.clusters[id] = c
		k, _ := slices.BinarySearchFunc(ix.byID, id, func(c *clusterIndex, id string) int { return compare(c.ID, id) })
		ix.byID = slices.Insert(ix.byID, k, c)
	}
	return c
}

// count adds (sign +1) or removes (-1) host i's free capacity and its
// dedication from the aggregates. Callers remove, change the host, add:
// adding marks the host's part changed, so every change of a host that
// the aggregates follow reaches the changelog.
func (ix *zoneIndex) count(i int, sign int64) {
	h := &ix.z.Hosts[i]
	c := ix.clusters[h.ClusterID]
	limit := capacity{cpuLimit(*h), memLimit(*h)}
	free := capacity{limit.cpu - int64(h.UsedCPU), limit.mem - h.UsedMemoryMB}
	if sign > 0 {
		ix.limit[i], ix.free[i] = limit, free
		ix.hostChanged(h.HostID)
	}
	if h.Reservable {
		c.FreeCPU += sign * max(free.cpu, 0)
		c.FreeMemoryMB += sign * max(free.mem, 0)
	}
	if h.ResourceUsage == Dedicated && h.ReservedFor != "" {
		addAt(&ix.account(h.ReservedFor).dedicated, c.n, int(sign))
	}
}

// use adds or removes an allocation from the per-host, per-account and
// per-group counts.
func (ix *zoneIndex) use(a schemas.Allocation, sign int) {
	ix.hostVMs[a.HostID] += sign
	if ix.hostVMs[a.HostID] == 0 {
		delete(ix.hostVMs, a.HostID)
	}
	i, ok := ix.host[a.HostID]
	if !ok {
		return
	}
	h := &ix.z.Hosts[i]
	c := ix.clusters[h.ClusterID]
	u := ix.account(a.Account)
	ix.accountsOn[i] = tallyAdd(ix.accountsOn[i], u.id, sign)
	addAt(&u.clusters, c.n, sign)
	addAt(&u.pods, c.pod, sign)
	if a.AffinityGroup != "" {
		g := ix.groups[a.AffinityGroup]
		if g == nil {
			g = &groupUse{id: int32(len(ix.groups))}
			ix.groups[a.AffinityGroup] = g
		}
		g.vms += sign
		ix.groupsOn[i] = tallyAdd(ix.groupsOn[i], g.id, sign)
	}
}

// track keeps the releasable set right for one host.
func (ix *zoneIndex) track(hostID string) {
	i, ok := ix.host[hostID]
	if ok && ix.z.Hosts[i].Planner != "" && ix.z.Hosts[i].EmptySince != 0 {
		ix.releasable[hostID] = true
	} else {
		delete(ix.releasable, hostID)
	}
}

// addHost appends a new host to the ledger and the index.
func (ix *zoneIndex) addHost(h schemas.HostCapacity) int {
	ix.z.Hosts = append(ix.z.Hosts, h)
	ix.limit, ix.free = append(ix.limit, capacity{}), append(ix.free, capacity{})
	ix.accountsOn, ix.groupsOn = append(ix.accountsOn, nil), append(ix.groupsOn, nil)
	i := len(ix.z.Hosts) - 1
	ix.host[h.HostID] = i
	ix.insertInCluster(i)
	ix.count(i, +1)
	return i
}

func (ix *zoneIndex) insertInCluster(i int) {
	h := &ix.z.Hosts[i]
	c := ix.cluster(h.ClusterID, h.PodID)
	at, _ := slices.BinarySearchFunc(c.hosts, h.HostID, func(j int, id string) int {
		return compare(ix.z.Hosts[j].HostID, id)
	})
	c.hosts = slices.Insert(c.hosts, at, i)
	c.Hosts++
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// allocationsOf returns a VM's allocations' positions (shared; do not keep).
func (ix *zoneIndex) allocationsOf(vmID string) []int { return ix.allocs[vmID] }

// appendAllocation adds an allocation to the ledger and the index.
func (ix *zoneIndex) appendAllocation(a schemas.Allocation) {
	ix.z.Allocations = append(ix.z.Allocations, a)
	ix.allocs[a.VmID] = append(ix.allocs[a.VmID], len(ix.z.Allocations)-1)
	ix.use(a, +1)
	ix.vmChanged(a.VmID)
}

// removeAllocation deletes allocation p by moving the last one into its
// place: constant time, and as deterministic as the order of the steps.
func (ix *zoneIndex) removeAllocation(p int) schemas.Allocation {
	z := ix.z
	a := z.Allocations[p]
	ix.use(a, -1)
	ix.dropPos(a.VmID, p)
	ix.vmChanged(a.VmID)
	last := len(z.Allocations) - 1
	if p != last {
		moved := z.Allocations[last]
		z.Allocations[p] = moved
		ps := ix.allocs[moved.VmID]
		for k, q := range ps {
			if q == last {
				ps[k] = p
			}
		}
	}
	z.Allocations = z.Allocations[:last]
	return a
}

func (ix *zoneIndex) dropPos(vmID string, p int) {
	ps := slices.DeleteFunc(ix.allocs[vmID], func(q int) bool { return q == p })
	if len(ps) == 0 {
		delete(ix.allocs, vmID)
	} else {
		ix.allocs[vmID] = ps
	}
}
