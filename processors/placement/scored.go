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
func (Binpack) ScoreHost(_ View, h Host, req *schemas.PlaceVm) float64 {
	return utilizationAfter(h.HostCapacity, req)
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
func (Spread) ScoreHost(_ View, h Host, req *schemas.PlaceVm) float64 {
	return -utilizationAfter(h.HostCapacity, req)
}

// utilizationAfter is the mean of the CPU and memory fractions of the
// host's over-committed capacity that would be in use after the placement.
func utilizationAfter(h *schemas.HostCapacity, req *schemas.PlaceVm) float64 {
	cpu, mem := float64(cpuLimit(*h)), float64(memLimit(*h))
	var u float64
	if cpu > 0 {
		u += float64(int64(h.UsedCPU)+int64(req.Offering.CPU)) / cpu
	}
	if mem > 0 {
		u += float64(h.UsedMemoryMB+req.Offering.MemoryMB) / mem
	}
	return u / 2
}
