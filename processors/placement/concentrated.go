package placement

import (
	"cmp"

	"github.com/vmplane/vmplane/schemas"
)

// UserConcentratedPodName is the name of the UserConcentratedPodPlanner.
const UserConcentratedPodName = "UserConcentratedPodPlanner"

// UserConcentratedPod is CloudStack's UserConcentratedPodPlanner: an
// account's VMs are kept together, close on the network. Clusters of the
// pods holding the most of the account's VMs come first; within a pod, and
// for an account with no VMs yet, the most free capacity first.
type UserConcentratedPod struct{}

// Name implements Planner.
func (UserConcentratedPod) Name() string { return UserConcentratedPodName }

// ResourceUsage implements Planner.
func (UserConcentratedPod) ResourceUsage() string { return Shared }

// CompareClusters implements Planner.
func (UserConcentratedPod) CompareClusters(zone View, _ *schemas.PlaceVm, a, b *Cluster) int {
	if c := cmp.Compare(zone.AccountPodVMs(b), zone.AccountPodVMs(a)); c != 0 {
		return c
	}
	if c := cmp.Compare(a.PodID, b.PodID); c != 0 {
		return c
	}
	return byFreeCapacity(a, b)
}
