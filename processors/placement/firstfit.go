package placement

import (
	"sort"

	"github.com/vmplane/vmplane/schemas"
)

// FirstFitName is the name of the FirstFitPlanner, the default planner.
const FirstFitName = "FirstFitPlanner"

// FirstFit is CloudStack's FirstFitPlanner: clusters with the most free
// capacity first, so new VMs go where there is most room. CPU is compared
// first (CloudStack's default host.capacityType.to.order.clusters), then
// memory, then the cluster id so equal clusters keep a stable order.
type FirstFit struct{}

// Name implements Planner.
func (FirstFit) Name() string { return FirstFitName }

// ResourceUsage implements Planner: first-fit hosts are shared.
func (FirstFit) ResourceUsage() string { return Shared }

// OrderClusters implements Planner.
func (FirstFit) OrderClusters(zone View, _ *schemas.PlaceVm) []string {
	cs := append([]Cluster(nil), zone.Clusters...)
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		if a.FreeCPU != b.FreeCPU {
			return a.FreeCPU > b.FreeCPU
		}
		if a.FreeMemoryMB != b.FreeMemoryMB {
			return a.FreeMemoryMB > b.FreeMemoryMB
		}
		return a.ID < b.ID
	})
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	return ids
}
