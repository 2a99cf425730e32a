package placement

import (
	"sort"

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
// the planning manager (place.go) checks fit, tags, reservability and host
// reservations, so every planner gets those rules right by construction.
type Planner interface {
	// Name is the planner's name as offerings spell it (deployment_planner).
	Name() string
	// ResourceUsage is Shared or Dedicated.
	ResourceUsage() string
	// OrderClusters returns the ids of the clusters to try, best first.
	// Clusters it leaves out are not tried.
	OrderClusters(zone View, req *schemas.PlaceVm) []string
}

// View is what a planner sees of a zone: its clusters and their hosts, with
// over-commit already applied to the free figures.
type View struct {
	ZoneID   string
	Clusters []Cluster
}

// Cluster is one cluster of a zone as a planner sees it.
type Cluster struct {
	ID    string
	PodID string
	// FreeCPU and FreeMemoryMB sum, over the cluster's reservable hosts,
	// capacity × over-commit minus what is allocated.
	FreeCPU      int64
	FreeMemoryMB int64
	// Hosts are copies of the cluster's ledger rows, ordered by host id.
	Hosts []schemas.HostCapacity
}

// view builds the planner's view of a zone; clusters come ordered by id so
// that a planner which keeps the order is deterministic.
func view(z *schemas.ZoneRecord) View {
	byID := map[string]*Cluster{}
	var ids []string
	for _, h := range z.Hosts {
		c, ok := byID[h.ClusterID]
		if !ok {
			c = &Cluster{ID: h.ClusterID, PodID: h.PodID}
			byID[h.ClusterID] = c
			ids = append(ids, h.ClusterID)
		}
		c.Hosts = append(c.Hosts, h)
		if h.Reservable {
			c.FreeCPU += max(cpuLimit(h)-int64(h.UsedCPU), 0)
			c.FreeMemoryMB += max(memLimit(h)-h.UsedMemoryMB, 0)
		}
	}
	sort.Strings(ids)
	v := View{ZoneID: z.ZoneID, Clusters: make([]Cluster, 0, len(ids))}
	for _, id := range ids {
		c := byID[id]
		sort.Slice(c.Hosts, func(i, j int) bool { return c.Hosts[i].HostID < c.Hosts[j].HostID })
		v.Clusters = append(v.Clusters, *c)
	}
	return v
}
