package api

import "time"

// Host is the JSON of a host.
type Host struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	ZoneID        string `json:"zone_id"`
	PodID         string `json:"pod_id"`
	ClusterID     string `json:"cluster_id"`
	Hypervisor    string `json:"hypervisor"`
	Status        string `json:"status"`
	ResourceState string `json:"resource_state"`
	Reservable    bool   `json:"reservable"`
	CPU           int32  `json:"cpu"`
	MemoryMB      int64  `json:"memory_mb"`
	UsedCPU       int32  `json:"used_cpu"`
	UsedMemoryMB  int64  `json:"used_memory_mb"`
	// CPUOvercommit and MemOvercommit are the over-commit ratios placement
	// applies to the host: its own, else cpu.overprovisioning.factor and
	// mem.overprovisioning.factor of its cluster, zone or globally (a
	// changed setting reaches placement with the host's next status).
	// CPUCapacity and MemoryCapacityMB are what placement may hand out,
	// cpu and memory_mb times the ratio, floored: used_cpu and
	// used_memory_mb count against them.
	CPUOvercommit    float64  `json:"cpu_overcommit"`
	CPUCapacity      int64    `json:"cpu_capacity"`
	MemOvercommit    float64  `json:"mem_overcommit"`
	MemoryCapacityMB int64    `json:"memory_capacity_mb"`
	Tags             []string `json:"tags"`
	VMCount          int      `json:"vm_count"`
	// LastPingAt is the last ping the read model knows of. Pings alone do
	// not change the read model: an Up host's status, and this time with
	// it, is republished every 10 ping intervals, so the agent may have
	// pinged since, by up to LastPingLagSeconds (that refresh and one
	// interval more).
	LastPingAt         *time.Time `json:"last_ping_at"`
	LastPingLagSeconds int64      `json:"last_ping_lag_seconds"`
	UpdatedAt          time.Time  `json:"updated_at"`
}

// HostDetail is GET /v1/hosts/{id}: the host, its planner reservation and
// the VMs placement has allocated on it.
type HostDetail struct {
	Host
	Reservation *HostReservation `json:"reservation"`
	Allocations []HostAllocation `json:"allocations"`
}

// HostReservation is a host's planner reservation (CloudStack's
// op_host_planner_reservation); null when the host is not reserved.
type HostReservation struct {
	Planner       string `json:"planner"`
	ResourceUsage string `json:"resource_usage"`
	Account       string `json:"account,omitempty"`
}

// HostAllocation is one VM's claim on a host.
type HostAllocation struct {
	VmID     string    `json:"vm_id"`
	Account  string    `json:"account"`
	CPU      int32     `json:"cpu"`
	MemoryMB int64     `json:"memory_mb"`
	At       time.Time `json:"at"`
}

// HostActionRequest is the body of POST /v1/hosts/{id}/actions.
type HostActionRequest struct {
	Action string `json:"action" required:"true"`
}

// HostAddRequest is the body of POST /v1/hosts: a host an admin registers
// before its agent connects (the way in when auto-registration is off, and
// the way back for a removed host). The agent's hello replaces what is
// given here with what the host says of itself.
type HostAddRequest struct {
	ID         string `json:"id" required:"true"`
	Name       string `json:"name,omitempty"`
	ZoneID     string `json:"zone_id,omitempty"`
	PodID      string `json:"pod_id,omitempty"`
	ClusterID  string `json:"cluster_id,omitempty"`
	Hypervisor string `json:"hypervisor,omitempty"`
}

// HostCommandAccepted answers a host action: the command is in the log,
// and the host processor applies it in order with the host's other inputs.
// Host commands are no VM jobs; GET /v1/hosts/{id} shows the outcome
// (resource_state), and the host's status on host.status.v1 carries the
// command id of the change.
type HostCommandAccepted struct {
	CommandID  string    `json:"command_id"`
	HostID     string    `json:"host_id"`
	Action     string    `json:"action"`
	Command    string    `json:"command"`
	AcceptedAt time.Time `json:"accepted_at"`
	// Host is the host as the read model shows it when the command was
	// accepted, before the command is applied.
	Host Host `json:"host"`
}
