package placement

import (
	"cmp"

	"github.com/vmplane/vmplane/schemas"
)

// ImplicitDedicationName is the name of the ImplicitDedicationPlanner.
const ImplicitDedicationName = "ImplicitDedicationPlanner"

// ImplicitDedication is CloudStack's ImplicitDedicationPlanner: the hosts it
// picks run VMs of one account only (its reservations are Dedicated). It
// prefers hosts already dedicated to the account, so an account uses as few
// hosts as it can, then empty hosts of the clusters with most room.
//
// The offering's planner_mode chooses Strict (the default: no host of its
// own means no placement) or Preferred (then a shared host will do, and the
// VM is placed as by a Shared planner).
type ImplicitDedication struct{}

// Name implements Planner.
func (ImplicitDedication) Name() string { return ImplicitDedicationName }

// ResourceUsage implements Planner.
func (ImplicitDedication) ResourceUsage() string { return Dedicated }

// CompareClusters implements Planner.
func (ImplicitDedication) CompareClusters(zone View, _ *schemas.PlaceVm, a, b *Cluster) int {
	if c := cmp.Compare(zone.DedicatedHosts(b), zone.DedicatedHosts(a)); c != 0 {
		return c
	}
	return byFreeCapacity(a, b)
}

// ScoreHost implements HostScorer: a host already dedicated to the account
// beats a fresh one.
func (ImplicitDedication) ScoreHost(_ View, h Host, req *schemas.PlaceVm) float64 {
	if h.ResourceUsage == Dedicated && h.ReservedFor == req.Account {
		return 1
	}
	return 0
}

// FallBackToShared implements fallbackPlanner.
func (ImplicitDedication) FallBackToShared(req *schemas.PlaceVm) bool {
	return req.Offering.PlannerMode == schemas.PlannerModePreferred
}
