package placement

import (
	"cmp"
	"slices"

	"github.com/vmplane/vmplane/schemas"
)

// Resource usages of a planner (CloudStack's PlannerResourceUsage): Shared
// hosts may be used by every Shared planner; a Dedicated host belongs to one
// planner and one account until its reservation is released.
const (
	Shared    = "Shared"
	Dedicated = "Dedicated"
)

// Planner orders the clusters of a zone for one request. It only orders:
// the planning manager (place.go) checks fit, tags, reservability, affinity
// and host reservations, so every planner gets those rules right by
// construction.
type Planner interface {
	// Name is the planner's name as offerings spell it (deployment_planner).
	Name() string
	// ResourceUsage is Shared or Dedicated.
	ResourceUsage() string
	// OrderClusters returns the ids of the clusters to try, best first.
	// Clusters it leaves out are not tried.
	OrderClusters(zone View, req *schemas.PlaceVm) []string
}

// HostScorer is a Planner that also ranks the hosts of a cluster: the
// manager takes the acceptable host with the highest score in the first
// cluster that has one (ties go to the lower host id). Planners without it
// take the first acceptable host in host id order.
type HostScorer interface {
	ScoreHost(zone View, h *schemas.HostCapacity, req *schemas.PlaceVm) float64
}

// fallbackPlanner is a Dedicated planner that may, when no host can be had
// on its own terms, place as a Shared planner (ImplicitDedication's
// Preferred mode).
type fallbackPlanner interface {
	FallBackToShared(req *schemas.PlaceVm) bool
}

// View is what a planner sees of a zone: its clusters with their free
// capacity, and the counts of an account's VMs and dedicated hosts. It is
// backed by the machine's index and valid only during the call.
type View struct {
	ZoneID   string
	Clusters []Cluster
	ix       *zoneIndex
}

// Cluster is one cluster of a zone as a planner sees it.
type Cluster struct {
	ID    string
	PodID string
	// FreeCPU and FreeMemoryMB sum, over the cluster's reservable hosts,
	// capacity × over-commit minus what is allocated.
	FreeCPU      int64
	FreeMemoryMB int64
	Hosts        int
}

// view builds the planner's view of a zone from the index; clusters come
// ordered by id so that a planner which keeps the order is deterministic.
func (ix *zoneIndex) view() View {
	v := View{ZoneID: ix.z.ZoneID, Clusters: make([]Cluster, 0, len(ix.clusterIDs)), ix: ix}
	for _, id := range ix.clusterIDs {
		c := ix.clusters[id]
		v.Clusters = append(v.Clusters, Cluster{ID: id, PodID: c.pod, FreeCPU: c.freeCPU, FreeMemoryMB: c.freeMemoryMB, Hosts: len(c.hosts)})
	}
	return v
}

// AccountVMs is how many VMs of account the cluster holds.
func (v View) AccountVMs(account, clusterID string) int {
	if u := v.ix.accounts[account]; u != nil {
		return u.clusters[clusterID]
	}
	return 0
}

// AccountPodVMs is how many VMs of account the pod holds.
func (v View) AccountPodVMs(account, podID string) int {
	if u := v.ix.accounts[account]; u != nil {
		return u.pods[podID]
	}
	return 0
}

// AccountHostVMs is how many VMs of account the host holds.
func (v View) AccountHostVMs(account, hostID string) int {
	if u := v.ix.accounts[account]; u != nil {
		return u.hosts[hostID]
	}
	return 0
}

// DedicatedHosts is how many hosts of the cluster are reserved Dedicated
// for account.
func (v View) DedicatedHosts(account, clusterID string) int {
	return v.ix.dedicated[account][clusterID]
}

// byFreeCapacity is FirstFit's order: most free CPU, then memory, then id.
func byFreeCapacity(a, b Cluster) int {
	if c := cmp.Compare(b.FreeCPU, a.FreeCPU); c != 0 {
		return c
	}
	if c := cmp.Compare(b.FreeMemoryMB, a.FreeMemoryMB); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// orderBy sorts a copy of the clusters and returns their ids. Every order
// ends on the cluster id, so an unstable sort is deterministic.
func orderBy(cs []Cluster, less func(a, b Cluster) int) []string {
	cs = slices.Clone(cs)
	slices.SortFunc(cs, func(a, b Cluster) int {
		if c := less(a, b); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	return ids
}

// builtins are the planners of schemas.Planners, in that order.
func builtins() []Planner {
	return []Planner{FirstFit{}, UserDispersing{}, UserConcentratedPod{}, ImplicitDedication{}, Binpack{}, Spread{}}
}
