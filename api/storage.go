package api

import "time"

// Template is the JSON of a template (GET /v1/templates).
type Template struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Format    string    `json:"format"`
	SizeGB    int64     `json:"size_gb"`
	OsType    string    `json:"os_type"`
	Deleted   bool      `json:"deleted,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// TemplateRequest is the body of POST /v1/templates. ID left out is the
// name: the image's directory on a QEMU host is <templates>/<id>/.
type TemplateRequest struct {
	ID     string `json:"id,omitempty"`
	Name   string `json:"name" required:"true"`
	Format string `json:"format" required:"true"`
	SizeGB int64  `json:"size_gb" required:"true"`
	OsType string `json:"os_type" required:"true"`
}

// Pool is the JSON of a primary storage pool (GET /v1/pools). LastError
// is why the latest change asked of it was refused; State is Refused for
// a pool whose creation was.
type Pool struct {
	ID         string    `json:"id"`
	ZoneID     string    `json:"zone_id"`
	Name       string    `json:"name"`
	Scope      string    `json:"scope"`
	ClusterID  string    `json:"cluster_id,omitempty"`
	HostID     string    `json:"host_id,omitempty"`
	Path       string    `json:"path"`
	CapacityGB int64     `json:"capacity_gb"`
	UsedGB     int64     `json:"used_gb"`
	CapacityMB int64     `json:"capacity_mb"`
	UsedMB     int64     `json:"used_mb"`
	Volumes    int32     `json:"volumes"`
	Tags       []string  `json:"tags"`
	State      string    `json:"state"`
	LastError  string    `json:"last_error,omitempty"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// PoolRequest is the body of POST /v1/pools. Zone left out is the
// gateway's zone; ID left out is pool-<zone>-<name>.
type PoolRequest struct {
	ID         string   `json:"id,omitempty"`
	ZoneID     string   `json:"zone_id,omitempty"`
	Name       string   `json:"name" required:"true"`
	Scope      string   `json:"scope" required:"true"`
	ClusterID  string   `json:"cluster_id,omitempty"`
	HostID     string   `json:"host_id,omitempty"`
	Path       string   `json:"path" required:"true"`
	CapacityGB int64    `json:"capacity_gb" required:"true"`
	Tags       []string `json:"tags,omitempty"`
}

// PoolUpdate is the body of PATCH /v1/pools/{id}: the fields to change.
type PoolUpdate struct {
	CapacityGB *int64    `json:"capacity_gb,omitempty"`
	Tags       *[]string `json:"tags,omitempty"`
	State      *string   `json:"state,omitempty"`
}

// PoolAccepted answers a pool's create, update or delete: the request as
// written to placement.requests.v1, which placement applies or refuses
// (GET /v1/pools/{id} then shows the pool, or its last_error).
type PoolAccepted struct {
	RequestID string    `json:"request_id"`
	Pool      Pool      `json:"pool"`
	Deleted   bool      `json:"deleted,omitempty"`
	At        time.Time `json:"at"`
}

// Network is the JSON of a guest network (GET /v1/networks): Size
// addresses a NIC can get, Allocated of them held.
type Network struct {
	ID        string    `json:"id"`
	ZoneID    string    `json:"zone_id"`
	Name      string    `json:"name"`
	Cidr      string    `json:"cidr"`
	Gateway   string    `json:"gateway"`
	Default   bool      `json:"default"`
	Size      int32     `json:"size"`
	Allocated int32     `json:"allocated"`
	State     string    `json:"state"`
	LastError string    `json:"last_error,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

// NetworkRequest is the body of POST /v1/networks. Zone left out is the
// gateway's zone; ID left out is net-<zone>-<name>.
type NetworkRequest struct {
	ID      string `json:"id,omitempty"`
	ZoneID  string `json:"zone_id,omitempty"`
	Name    string `json:"name" required:"true"`
	Cidr    string `json:"cidr" required:"true"`
	Gateway string `json:"gateway" required:"true"`
	Default bool   `json:"default,omitempty"`
}

// NetworkAccepted answers a network's create or delete, as PoolAccepted.
type NetworkAccepted struct {
	RequestID string    `json:"request_id"`
	Network   Network   `json:"network"`
	Deleted   bool      `json:"deleted,omitempty"`
	At        time.Time `json:"at"`
}

// Volume is the JSON of a VM's volume (GET /v1/volumes, and in a VM).
type Volume struct {
	ID         string           `json:"id"`
	VmID       string           `json:"vm_id"`
	Account    string           `json:"account"`
	ZoneID     string           `json:"zone_id"`
	Name       string           `json:"name"`
	Kind       string           `json:"kind"`
	DeviceID   int32            `json:"device_id"`
	PoolID     string           `json:"pool_id"`
	SizeGB     int64            `json:"size_gb"`
	SizeMB     int64            `json:"size_mb"`
	TemplateID string           `json:"template_id,omitempty"`
	State      string           `json:"state"`
	Deleted    bool             `json:"deleted,omitempty"`
	CreatedAt  time.Time        `json:"created_at"`
	Snapshots  []VolumeSnapshot `json:"snapshots,omitempty"`
}

// VolumeSnapshot is a snapshot of one volume.
type VolumeSnapshot struct {
	Name    string    `json:"name"`
	JobID   string    `json:"job_id"`
	TakenAt time.Time `json:"taken_at"`
}

// Nic is the JSON of a VM's network interface.
type Nic struct {
	ID        string `json:"id"`
	NetworkID string `json:"network_id"`
	DeviceID  int32  `json:"device_id"`
	MAC       string `json:"mac"`
	IP        string `json:"ip"`
	Gateway   string `json:"gateway"`
	Cidr      string `json:"cidr"`
}

// VolumeActionRequest is the body of POST /v1/volumes/{id}/actions: a
// volume action of its VM (attach_volume of a detached volume,
// detach_volume, resize_volume, snapshot_volume, delete_volume), the
// volume being the route's. The answer is the Job the VM's action became.
type VolumeActionRequest struct {
	Action       string  `json:"action" required:"true"`
	SizeGB       *int64  `json:"size_gb,omitempty"`
	SnapshotName *string `json:"snapshot_name,omitempty"`
}
