package schemas

// PlannerSpec describes a deployment planner (CloudStack's
// listDeploymentPlanners). Offerings name planners by Name; the placement
// processor implements each one, and a test holds the two lists together.
type PlannerSpec struct {
	Name string
	// ResourceUsage is Shared or Dedicated: whether the hosts the planner
	// picks may serve other planners and accounts too.
	ResourceUsage string
	Description   string
}

// Planner modes of an Offering (planner_mode).
const (
	PlannerModeStrict    = "Strict"
	PlannerModePreferred = "Preferred"
)

// DefaultPlanner is the default of vm.deployment.planner.
const DefaultPlanner = "FirstFitPlanner"

// Planners lists the deployment planners, in the order the API shows them.
var Planners = []PlannerSpec{
	{"FirstFitPlanner", "Shared", "Clusters with the most free capacity first (CPU, then memory); the first host that fits."},
	{"UserDispersingPlanner", "Shared", "Spreads an account's VMs: clusters and hosts holding the fewest of its VMs first."},
	{"UserConcentratedPodPlanner", "Shared", "Packs an account's VMs: pods holding the most of its VMs first."},
	{"ImplicitDedicationPlanner", "Dedicated", "Hosts used by one account only; Strict fails without a free or own host, Preferred falls back to shared hosts."},
	{"BinpackPlanner", "Shared", "Scores hosts by utilization after placement and picks the fullest that fits (Nomad binpack)."},
	{"SpreadPlanner", "Shared", "Scores hosts by utilization after placement and picks the emptiest (Nomad spread)."},
}
