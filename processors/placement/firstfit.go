package placement

import "github.com/vmplane/vmplane/schemas"

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

// CompareClusters implements Planner.
func (FirstFit) CompareClusters(_ View, _ *schemas.PlaceVm, a, b *Cluster) int {
	return byFreeCapacity(a, b)
}
