package api

import "time"

// VM is the JSON of a VM.
type VM struct {
	ID             string    `json:"id"`
	Name           string    `json:"name"`
	Account        string    `json:"account"`
	Offering       string    `json:"offering"`
	VmState        string    `json:"vm_state"`
	TaskState      string    `json:"task_state"`
	PowerState     string    `json:"power_state"`
	LegacyState    string    `json:"legacy_state"`
	HostID         string    `json:"host_id"`
	AllowedActions []string  `json:"allowed_actions"`
	HA             bool      `json:"ha"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
	CPU            int32     `json:"cpu"`
	MemoryMB       int64     `json:"memory_mb"`
	ZoneID         string    `json:"zone_id"`
	Epoch          int64     `json:"epoch"`
	JobID          string    `json:"job_id,omitempty"`
	// HostStatus is the agent status of the VM's host. While it is not
	// Up nobody is watching the VM: PowerState is then PowerUnknown, and
	// LastPowerState is what was last seen, at PowerStateAt (a report, or
	// its host's last ping).
	HostStatus     string     `json:"host_status,omitempty"`
	LastPowerState string     `json:"last_power_state,omitempty"`
	PowerStateAt   *time.Time `json:"power_state_at,omitempty"`
	// Volumes (not deleted, by device) and NICs of the VM.
	Volumes []Volume `json:"volumes"`
	Nics    []Nic    `json:"nics"`
}

// Snapshot is the JSON of a VM's snapshot (GET /v1/vms/{id}/snapshots).
type Snapshot struct {
	VmID    string    `json:"vm_id"`
	Name    string    `json:"name"`
	JobID   string    `json:"job_id"`
	TakenAt time.Time `json:"taken_at"`
}

// DeployRequest is the body of POST /v1/vms. Offering and Template are a
// name or an id; HA unset means the offering's default. Without a
// template the VM has no root volume; RootDiskGB 0 is the template's size,
// DataDiskGB 0 no data volume. Networks are names or ids; none means the
// zone's default network, if it has one.
type DeployRequest struct {
	Name          string   `json:"name" required:"true"`
	Offering      string   `json:"offering" required:"true"`
	HA            *bool    `json:"ha,omitempty"`
	AffinityGroup string   `json:"affinity_group,omitempty"`
	Template      string   `json:"template,omitempty"`
	RootDiskGB    int64    `json:"root_disk_gb,omitempty"`
	DataDiskGB    int64    `json:"data_disk_gb,omitempty"`
	Networks      []string `json:"networks,omitempty"`
}

// ActionRequest is the body of POST /v1/vms/{id}/actions: the action name
// and the parameters some actions take. The answer is the Job the action
// became.
type ActionRequest struct {
	Action       string  `json:"action" required:"true"`
	Force        *bool   `json:"force,omitempty"`
	Hard         *bool   `json:"hard,omitempty"`
	HostID       *string `json:"host_id,omitempty"`
	Image        *string `json:"image,omitempty"`
	SnapshotName *string `json:"snapshot_name,omitempty"`
	Offering     *string `json:"offering,omitempty"`
	VolumeID     *string `json:"volume_id,omitempty"`
	VolumeName   *string `json:"volume_name,omitempty"`
	SizeGB       *int64  `json:"size_gb,omitempty"`
}
