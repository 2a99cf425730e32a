package schemas

// Storage: templates, primary storage pools and the volumes of VMs.
//
// A pool is a zone's resource: the placement processor keeps it in the
// zone's ledger (ZoneRecord.Pools) and claims its capacity for volumes in
// the same decision that claims a host, so two deploys never overfill it.
// A volume belongs to its VM: the VM processor keeps it in VmRecord.Storage
// and tells the agent, in StartVm and the volume commands, where its file
// lives (the pool's directory on the host).

// Pool scopes: where a pool's directory is reachable from.
const (
	// PoolScopeZone is shared storage every host of the zone reaches.
	PoolScopeZone = "Zone"
	// PoolScopeCluster is shared storage the hosts of one cluster reach.
	PoolScopeCluster = "Cluster"
	// PoolScopeHost is host-local storage: one host reaches it, and a VM
	// with a volume there cannot live-migrate.
	PoolScopeHost = "Host"
)

// Pool states.
const (
	PoolUp          = "Up"
	PoolMaintenance = "Maintenance"
	PoolFailed      = "Failed"
	PoolDisabled    = "Disabled"
)

// Volume kinds and states.
const (
	VolumeRoot = "Root"
	VolumeData = "Data"

	// VolumeAllocated: claimed on a pool, no file yet.
	VolumeAllocated = "Allocated"
	// VolumeReady: the file exists and the volume is attached to its VM.
	VolumeReady = "Ready"
	// VolumeDetached: a data volume kept, not attached to its VM.
	VolumeDetached = "Detached"
)

// Template is an image in the catalog (catalog.v1, key "template:" + id):
// what a deploy's root volume and a rebuild are made of. On a QEMU host the
// image is the directory <templates>/<id>/ (disk.qcow2, and vmlinuz and
// initrd.img for a direct kernel boot).
type Template struct {
	ID        string `avro:"id" doc:"Template id."`
	Name      string `avro:"name" doc:"Template name."`
	Format    string `avro:"format" doc:"Disk image format: qcow2 or raw."`
	SizeMB    int64  `avro:"size_mb" doc:"Virtual size of the image, MiB: a root volume is at least this big."`
	OsType    string `avro:"os_type" doc:"Guest operating system, e.g. Debian GNU/Linux 12 (64-bit)."`
	Deleted   bool   `avro:"deleted" doc:"The template was removed from the catalog; VMs made of it keep their volumes."`
	CreatedAt int64  `avro:"created_at" doc:"Unix milliseconds."`
}

// TemplateKey is the catalog.v1 key of a template: offerings and templates
// share the compacted topic, and an offering and a template of one id must
// not replace each other.
func TemplateKey(id string) string { return "template:" + id }

// UpdateStoragePool creates, changes or deletes a primary storage pool: the
// desired state of the whole pool (placement.requests.v1, key: zone id).
type UpdateStoragePool struct {
	RequestID  string   `avro:"request_id" doc:"Unique request id."`
	PoolID     string   `avro:"pool_id" doc:"Pool id."`
	ZoneID     string   `avro:"zone_id" doc:"Zone; also the record key."`
	Name       string   `avro:"name" doc:"Pool name."`
	Scope      string   `avro:"scope" doc:"Zone, Cluster or Host."`
	ClusterID  string   `avro:"cluster_id" doc:"Cluster of a Cluster-scoped pool; empty otherwise."`
	HostID     string   `avro:"host_id" doc:"Host of a Host-scoped (local) pool; empty otherwise."`
	Path       string   `avro:"path" doc:"Absolute directory of the pool on the hosts that reach it."`
	CapacityMB int64    `avro:"capacity_mb" doc:"Capacity, MiB."`
	Tags       []string `avro:"tags" doc:"Storage tags; an offering's storage tags must all be on the pool of its volumes."`
	State      string   `avro:"state" doc:"Up, Maintenance (no new volumes), Failed (its VMs' disks are gone: an HA case) or Disabled."`
	Deleted    bool     `avro:"deleted" doc:"Remove the pool; refused while volumes are on it."`
	At         int64    `avro:"at" doc:"Unix milliseconds."`
	Caller     Caller   `avro:"caller" doc:"Who asked: account, API key and request id (the gateway's request); account system for what vmplane writes itself."`
}

// StoragePoolChanged is a pool as placement holds it after a change of the
// pool or of its claims (placement.events.v1, key: zone id).
type StoragePoolChanged struct {
	Pool    PoolState `avro:"pool" doc:"The pool."`
	Deleted bool      `avro:"deleted" doc:"The pool was removed."`
	Refused string    `avro:"refused" doc:"Why the UpdateStoragePool was refused (the pool is then as before); empty when applied."`
	At      int64     `avro:"at" doc:"Unix milliseconds."`
}

// PoolState is a pool in the placement ledger.
type PoolState struct {
	PoolID     string   `avro:"pool_id" doc:"Pool id."`
	ZoneID     string   `avro:"zone_id" doc:"Zone."`
	Name       string   `avro:"name" doc:"Pool name."`
	Scope      string   `avro:"scope" doc:"Zone, Cluster or Host."`
	ClusterID  string   `avro:"cluster_id" doc:"Cluster of a Cluster-scoped pool."`
	HostID     string   `avro:"host_id" doc:"Host of a Host-scoped pool."`
	Path       string   `avro:"path" doc:"Directory of the pool on its hosts."`
	CapacityMB int64    `avro:"capacity_mb" doc:"Capacity, MiB."`
	UsedMB     int64    `avro:"used_mb" doc:"Claimed by volumes, MiB."`
	Volumes    int32    `avro:"volumes" doc:"Volumes on the pool."`
	Tags       []string `avro:"tags" doc:"Storage tags."`
	State      string   `avro:"state" doc:"Up, Maintenance, Failed or Disabled."`
}

// VmStorage is what a VM has besides CPU and memory: its template, volumes
// and NICs. Out of line in VmRecord (nil for a VM with none).
type VmStorage struct {
	TemplateID  string   `avro:"template_id" doc:"Template the root volume was made of; empty for none."`
	StorageTags []string `avro:"storage_tags" doc:"Tags the pools of its volumes must carry (its offering's at deploy)."`
	Volumes     []Volume `avro:"volumes" doc:"Volumes, the root first."`
	Nics        []Nic    `avro:"nics" doc:"NICs, by device id."`
}

// Volume is a disk of a VM: in the VM's record, in the agent commands that
// create, attach or remove it, and in placement's requests and decisions.
type Volume struct {
	VolumeID   string `avro:"volume_id" doc:"Volume id."`
	Name       string `avro:"name" doc:"Volume name."`
	Kind       string `avro:"kind" doc:"Root or Data."`
	DeviceID   int32  `avro:"device_id" doc:"Disk order on the VM: 0 for the root, 1 and up for data volumes."`
	PoolID     string `avro:"pool_id" doc:"Pool holding it; empty until placed."`
	PoolPath   string `avro:"pool_path" doc:"Directory of the pool on the host: the volume's file is <pool_path>/<volume_id>.qcow2."`
	SizeMB     int64  `avro:"size_mb" doc:"Virtual size, MiB."`
	TemplateID string `avro:"template_id" doc:"Image a root volume is an overlay of; empty for a blank volume."`
	State      string `avro:"state" doc:"Allocated, Ready or Detached."`
	CreatedAt  int64  `avro:"created_at" doc:"Unix milliseconds."`
}

// VolumeChanged tells the read model a VM's volume was created, changed or
// removed (vm.events.v1, key: VM id).
type VolumeChanged struct {
	VmID    string `avro:"vm_id" doc:"VM; also the record key."`
	Account string `avro:"account" doc:"Owning account."`
	ZoneID  string `avro:"zone_id" doc:"Zone."`
	Volume  Volume `avro:"volume" doc:"The volume as it is now."`
	Deleted bool   `avro:"deleted" doc:"The volume was removed (deleted, or destroyed with its VM)."`
	JobID   string `avro:"job_id" doc:"Job that changed it; empty for none."`
	At      int64  `avro:"at" doc:"Unix milliseconds."`
}

// VolumeSnapshotTaken records a snapshot of one volume (vm.events.v1, key:
// VM id); the host keeps the data, inside the volume's file.
type VolumeSnapshotTaken struct {
	VmID         string `avro:"vm_id" doc:"VM; also the record key."`
	Account      string `avro:"account" doc:"Owning account."`
	VolumeID     string `avro:"volume_id" doc:"Volume."`
	SnapshotName string `avro:"snapshot_name" doc:"Snapshot name, unique per volume."`
	JobID        string `avro:"job_id" doc:"Job that took it."`
	At           int64  `avro:"at" doc:"Unix milliseconds."`
}

// VolumeSnapshotPrefix begins the name a volume snapshot has inside its
// volume's file, where the VM's snapshots (taken of every disk at once)
// keep theirs too: "volume:daily" and a VM snapshot "daily" never meet. A
// VM snapshot name may not begin with it.
const VolumeSnapshotPrefix = "volume:"

// StoragePoolDown tells a VM that a pool holding one of its volumes failed
// (vm.signals.v1, key: VM id).
type StoragePoolDown struct {
	VmID   string `avro:"vm_id" doc:"VM; also the record key."`
	PoolID string `avro:"pool_id" doc:"The failed pool."`
	ZoneID string `avro:"zone_id" doc:"Zone."`
	At     int64  `avro:"at" doc:"Unix milliseconds."`
}
