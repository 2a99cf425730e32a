package api

// Offering is the JSON of a service offering.
type Offering struct {
	ID                string   `json:"id"`
	Name              string   `json:"name"`
	CPU               int32    `json:"cpu"`
	MemoryMB          int64    `json:"memory_mb"`
	HA                bool     `json:"ha"`
	DeploymentPlanner string   `json:"deployment_planner"`
	PlannerMode       string   `json:"planner_mode,omitempty"`
	HostTags          []string `json:"host_tags"`
	StorageTags       []string `json:"storage_tags"`
}

// OfferingRequest is the body of POST /v1/offerings; HA left out is false.
type OfferingRequest struct {
	Name              string   `json:"name" required:"true"`
	CPU               int32    `json:"cpu" required:"true"`
	MemoryMB          int64    `json:"memory_mb" required:"true"`
	HA                bool     `json:"ha,omitempty"`
	DeploymentPlanner string   `json:"deployment_planner,omitempty"`
	PlannerMode       string   `json:"planner_mode,omitempty"`
	HostTags          []string `json:"host_tags,omitempty"`
	StorageTags       []string `json:"storage_tags,omitempty"`
}

// OfferingUpdate is the body of PATCH /v1/offerings/{id}: the fields to
// change, the others left out. CPU and memory are the size of every VM
// deployed on the offering and cannot change: a request that changes
// either is refused and names a new offering as the way. A name changes
// the offering's name, not its id.
type OfferingUpdate struct {
	Name              *string   `json:"name,omitempty"`
	CPU               *int32    `json:"cpu,omitempty"`
	MemoryMB          *int64    `json:"memory_mb,omitempty"`
	HA                *bool     `json:"ha,omitempty"`
	DeploymentPlanner *string   `json:"deployment_planner,omitempty"`
	PlannerMode       *string   `json:"planner_mode,omitempty"`
	HostTags          *[]string `json:"host_tags,omitempty"`
	StorageTags       *[]string `json:"storage_tags,omitempty"`
}

// Planner is one entry of GET /v1/planners (listDeploymentPlanners).
type Planner struct {
	Name          string `json:"name"`
	ResourceUsage string `json:"resource_usage"`
	Description   string `json:"description"`
	Default       bool   `json:"default"`
}
