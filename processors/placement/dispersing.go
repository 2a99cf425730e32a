package placement

import (
	"cmp"

	"github.com/vmplane/vmplane/schemas"
)

// UserDispersingName is the name of the UserDispersingPlanner.
const UserDispersingName = "UserDispersingPlanner"

// UserDispersing is CloudStack's UserDispersingPlanner: an account's VMs are
// spread, so one host or cluster failing takes as few of them as possible.
// Clusters holding the fewest of the account's VMs come first (then by free
// capacity), and within a cluster the host holding the fewest.
type UserDispersing struct{}

// Name implements Planner.
func (UserDispersing) Name() string { return UserDispersingName }

// ResourceUsage implements Planner.
func (UserDispersing) ResourceUsage() string { return Shared }

// CompareClusters implements Planner.
func (UserDispersing) CompareClusters(zone View, _ *schemas.PlaceVm, a, b *Cluster) int {
	if c := cmp.Compare(zone.AccountVMs(a), zone.AccountVMs(b)); c != 0 {
		return c
	}
	return byFreeCapacity(a, b)
}

// ScoreHost implements HostScorer: fewer of the account's VMs is better.
func (UserDispersing) ScoreHost(zone View, h Host, _ *schemas.PlaceVm) float64 {
	return -float64(zone.AccountHostVMs(h))
}

// TopScore implements TopScorer: a host holding none of the account's VMs
// is as good as a host gets, and most hosts hold none.
func (UserDispersing) TopScore() float64 { return 0 }
