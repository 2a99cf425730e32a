package placement

import "github.com/vmplane/vmplane/schemas"

// Names of the scored planners.
const (
	BinpackName = "BinpackPlanner"
	SpreadName  = "SpreadPlanner"
)

// Binpack packs VMs onto as few hosts as possible (Nomad's binpack): the
// fullest clusters first, and in a cluster the host whose utilization after
// the placement is highest. Empty hosts stay empty for large VMs and can be
// powered down.
type Binpack struct{}

// Name implements Planner.
func (Binpack) Name() string { return BinpackName }

// ResourceUsage implements Planner.
func (Binpack) ResourceUsage() string { return Shared }

// CompareClusters implements Planner: least free capacity first.
func (Binpack) CompareClusters(_ View, _ *schemas.PlaceVm, a, b *Cluster) int {
	return byFreeCapacity(b, a)
}

// ScoreHost implements HostScorer.
func (Binpack) ScoreHost(zone View, h Host, req *schemas.PlaceVm) float64 {
	return zone.UtilizationAfter(h, req)
}

// Spread spreads load evenly (Nomad's spread): the clusters with most room
// first, and in a cluster the host left least utilized by the placement.
type Spread struct{}

// Name implements Planner.
func (Spread) Name() string { return SpreadName }

// ResourceUsage implements Planner.
func (Spread) ResourceUsage() string { return Shared }

// CompareClusters implements Planner.
func (Spread) CompareClusters(_ View, _ *schemas.PlaceVm, a, b *Cluster) int {
	return byFreeCapacity(a, b)
}

// ScoreHost implements HostScorer.
func (Spread) ScoreHost(zone View, h Host, req *schemas.PlaceVm) float64 {
	return -zone.UtilizationAfter(h, req)
}
