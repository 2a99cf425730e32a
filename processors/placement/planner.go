package placement

import (
	"cmp"

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
	// CompareClusters says which of two clusters to try first for req:
	// negative for a, positive for b, 0 for no preference (the lower
	// cluster id goes first). The manager asks it for as few pairs as it
	// can, so it must be a consistent order and cheap: a comparison, not
	// a walk of the zone.
	CompareClusters(zone View, req *schemas.PlaceVm, a, b *Cluster) int
}

// HostScorer is a Planner that also ranks the hosts of a cluster: the
// manager takes the acceptable host with the highest score in the first
// cluster that has one (ties go to the lower host id). Planners without it
// take the first acceptable host in host id order.
type HostScorer interface {
	ScoreHost(zone View, h Host, req *schemas.PlaceVm) float64
}

// TopScorer is a HostScorer whose scores never exceed TopScore: the
// manager stops at the first acceptable host that reaches it, which is
// the host a walk of the whole cluster would take (ties go to the lower
// host id).
type TopScorer interface {
	HostScorer
	TopScore() float64
}

// Host is one host of a zone as a planner sees it.
type Host struct {
	*schemas.HostCapacity
	i int // position in the zone's ledger
}

// fallbackPlanner is a Dedicated planner that may, when no host can be had
// on its own terms, place as a Shared planner (ImplicitDedication's
// Preferred mode).
type fallbackPlanner interface {
	FallBackToShared(req *schemas.PlaceVm) bool
}

// View is what a planner sees of a zone for one request: the counts of the
// request's account. It is backed by the machine's index and valid only
// during the call.
type View struct {
	ix *zoneIndex
	// use is the request's account's counts, nil when it has none.
	use *accountUse
}

// view is the planners' view of a zone for a request of account.
func (ix *zoneIndex) view(account string) View { return View{ix: ix, use: ix.accounts[account]} }

// Cluster is one cluster of a zone as a planner sees it.
type Cluster struct {
	ID    string
	PodID string
	// FreeCPU and FreeMemoryMB sum, over the cluster's reservable hosts,
	// capacity × over-commit minus what is allocated.
	FreeCPU      int64
	FreeMemoryMB int64
	Hosts        int
	// n and pod number the cluster and its pod in the index's per-account
	// counts.
	n, pod int
}

// AccountVMs is how many VMs of the request's account the cluster holds.
func (v View) AccountVMs(c *Cluster) int {
	if v.use == nil {
		return 0
	}
	return countAt(v.use.clusters, c.n)
}

// AccountPodVMs is how many VMs of the request's account the cluster's pod
// holds.
func (v View) AccountPodVMs(c *Cluster) int {
	if v.use == nil {
		return 0
	}
	return countAt(v.use.pods, c.pod)
}

// AccountHostVMs is how many VMs of the request's account the host holds.
func (v View) AccountHostVMs(h Host) int {
	if v.use == nil {
		return 0
	}
	return tallyOf(v.ix.accountsOn[h.i], v.use.id)
}

// UtilizationAfter is the mean of the CPU and memory fractions of the
// host's over-committed capacity that would be in use after placing req.
func (v View) UtilizationAfter(h Host, req *schemas.PlaceVm) float64 {
	limit, free := v.ix.limit[h.i], v.ix.free[h.i]
	var u float64
	if limit.cpu > 0 {
		u += float64(limit.cpu-free.cpu+int64(req.Offering.CPU)) / float64(limit.cpu)
	}
	if limit.mem > 0 {
		u += float64(limit.mem-free.mem+req.Offering.MemoryMB) / float64(limit.mem)
	}
	return u / 2
}

// DedicatedHosts is how many hosts of the cluster are reserved Dedicated
// for the request's account.
func (v View) DedicatedHosts(c *Cluster) int {
	if v.use == nil {
		return 0
	}
	return countAt(v.use.dedicated, c.n)
}

// byFreeCapacity is FirstFit's order: most free CPU, then memory.
func byFreeCapacity(a, b *Cluster) int {
	if c := cmp.Compare(b.FreeCPU, a.FreeCPU); c != 0 {
		return c
	}
	return cmp.Compare(b.FreeMemoryMB, a.FreeMemoryMB)
}

// builtins are the planners of schemas.Planners, in that order.
func builtins() []Planner {
	return []Planner{FirstFit{}, UserDispersing{}, UserConcentratedPod{}, ImplicitDedication{}, Binpack{}, Spread{}}
}
