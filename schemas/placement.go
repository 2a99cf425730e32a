package schemas

// PlaceVm asks the zone's placement owner for a host.
type PlaceVm struct {
	RequestID     string   `avro:"request_id" doc:"Unique request id, echoed in the decision."`
	VmID          string   `avro:"vm_id" doc:"VM to place."`
	ZoneID        string   `avro:"zone_id" doc:"Zone; also the record key."`
	Account       string   `avro:"account" doc:"Owning account."`
	Epoch         int64    `avro:"epoch" doc:"VM epoch, echoed in the decision."`
	Offering      Offering `avro:"offering" doc:"Offering to place with."`
	AvoidHosts    []string `avro:"avoid_hosts" doc:"Hosts not to choose (e.g. the migration source)."`
	HostID        string   `avro:"host_id" doc:"Host asked for; empty lets the planner choose."`
	AffinityGroup string   `avro:"affinity_group" doc:"Affinity group."`
	At            int64    `avro:"at" doc:"Unix milliseconds."`
	Adopt         bool     `avro:"adopt" doc:"Claim on host_id whether or not it fits, releasing every other claim of the VM: the VM already runs there (an out-of-band start or move)."`
	HostRequired  bool     `avro:"host_required" doc:"host_id is required (an API user's start or migrate to a host), not preferred: a host that is refused fails the request instead of letting the planner choose another."`
	Volumes       []Volume `avro:"volumes" doc:"The VM's volumes: one without pool_id is given a pool the chosen host reaches; one with a pool_id requires a host that reaches it, and its claim there becomes size_mb."`
	Nics          []Nic    `avro:"nics" doc:"The VM's NICs: one without an ip is given an address of its network; one with an ip keeps it."`
	VolumesOnly   bool     `avro:"volumes_only" doc:"Claim pools for volumes only, on the VM's host host_id (a volume attached or grown): no host claim changes."`
	StorageTags   []string `avro:"storage_tags" doc:"Tags the pool of a volume without pool_id must carry."`
}

// ReleaseVm frees a VM's allocation.
type ReleaseVm struct {
	RequestID  string   `avro:"request_id" doc:"Unique request id."`
	VmID       string   `avro:"vm_id" doc:"VM."`
	ZoneID     string   `avro:"zone_id" doc:"Zone; also the record key."`
	HostID     string   `avro:"host_id" doc:"Host to release on; empty for every host of the VM."`
	At         int64    `avro:"at" doc:"Unix milliseconds."`
	VolumeIDs  []string `avro:"volume_ids" doc:"Volumes whose pool claims to release (deleted volumes); the host claims are then kept."`
	AllVolumes bool     `avro:"all_volumes" doc:"Release every volume claim of the VM too (its disks were destroyed)."`
	Nics       bool     `avro:"nics" doc:"Release the VM's addresses too (the VM was expunged)."`
}

// ResizeVm changes a VM's allocation on its host, or asks for another host.
type ResizeVm struct {
	RequestID string   `avro:"request_id" doc:"Unique request id."`
	VmID      string   `avro:"vm_id" doc:"VM."`
	ZoneID    string   `avro:"zone_id" doc:"Zone; also the record key."`
	Account   string   `avro:"account" doc:"Owning account."`
	Epoch     int64    `avro:"epoch" doc:"VM epoch."`
	Offering  Offering `avro:"offering" doc:"New offering."`
	At        int64    `avro:"at" doc:"Unix milliseconds."`
	Volumes   []Volume `avro:"volumes" doc:"The VM's placed volumes: a host it moves to must reach their pools (as PlaceVm's)."`
	Nics      []Nic    `avro:"nics" doc:"The VM's NICs, which keep their addresses."`
}

// CapacityAllocated records a claim of host capacity for a VM.
type CapacityAllocated struct {
	ZoneID         string `avro:"zone_id" doc:"Zone; also the record key."`
	HostID         string `avro:"host_id" doc:"Host."`
	VmID           string `avro:"vm_id" doc:"VM."`
	Account        string `avro:"account" doc:"Owning account."`
	CPU            int32  `avro:"cpu" doc:"CPUs claimed."`
	MemoryMB       int64  `avro:"memory_mb" doc:"Memory claimed, MiB."`
	HostUsedCPU    int32  `avro:"host_used_cpu" doc:"CPUs in use on the host after the claim."`
	HostUsedMemory int64  `avro:"host_used_memory_mb" doc:"Memory in use on the host after the claim, MiB."`
	RequestID      string `avro:"request_id" doc:"Request that claimed it."`
	At             int64  `avro:"at" doc:"Unix milliseconds."`
}

// CapacityReleased records a release of host capacity.
type CapacityReleased struct {
	ZoneID         string `avro:"zone_id" doc:"Zone; also the record key."`
	HostID         string `avro:"host_id" doc:"Host."`
	VmID           string `avro:"vm_id" doc:"VM."`
	CPU            int32  `avro:"cpu" doc:"CPUs released."`
	MemoryMB       int64  `avro:"memory_mb" doc:"Memory released, MiB."`
	HostUsedCPU    int32  `avro:"host_used_cpu" doc:"CPUs in use on the host after the release."`
	HostUsedMemory int64  `avro:"host_used_memory_mb" doc:"Memory in use after the release, MiB."`
	RequestID      string `avro:"request_id" doc:"Request that released it."`
	At             int64  `avro:"at" doc:"Unix milliseconds."`
}

// HostReserved records a planner host reservation (op_host_planner_reservation).
type HostReserved struct {
	ZoneID        string `avro:"zone_id" doc:"Zone; also the record key."`
	HostID        string `avro:"host_id" doc:"Host."`
	Planner       string `avro:"planner" doc:"Planner that reserved it."`
	ResourceUsage string `avro:"resource_usage" doc:"Shared or Dedicated."`
	Account       string `avro:"account" doc:"Account for Dedicated reservations."`
	At            int64  `avro:"at" doc:"Unix milliseconds."`
}

// HostReservationReleased records the end of a planner host reservation.
type HostReservationReleased struct {
	ZoneID string `avro:"zone_id" doc:"Zone; also the record key."`
	HostID string `avro:"host_id" doc:"Host."`
	Reason string `avro:"reason" doc:"Why."`
	At     int64  `avro:"at" doc:"Unix milliseconds."`
}

// ZoneRecord is the placement processor's state of one zone (changelog placement.state.v1).
type ZoneRecord struct {
	ZoneID      string         `avro:"zone_id" doc:"Zone id."`
	Hosts       []HostCapacity `avro:"hosts" doc:"Hosts of the zone with their capacity and reservation."`
	Allocations []Allocation   `avro:"allocations" doc:"Claims of capacity by VMs."`
	Decided     []string       `avro:"decided" doc:"Latest request ids answered, for dedup."`
	Pools       []PoolState    `avro:"pools" doc:"Primary storage pools of the zone."`
	Networks    []NetworkState `avro:"networks" doc:"Guest networks of the zone."`
	Volumes     []VolumeClaim  `avro:"volumes" doc:"Claims of pool capacity by volumes."`
	Nics        []NicClaim     `avro:"nics" doc:"Addresses held by NICs."`
}

// The placement processor writes a zone to placement.state.v1 in parts
// (docs/design.md §7), so that a transaction writes what its decisions
// changed, not the zone's megabytes: ZoneHeader under the zone key, and
// under schemas.PartKey(zone, name) a ZoneHost per host (name
// "host:<host_id>"), a ZoneVm per VM with claims ("vm:<vm_id>"), a
// ZonePool per pool ("pool:<pool_id>") and a ZoneNetwork per network
// ("net:<network_id>"). A ZoneRecord under the zone key is a zone written
// whole, as before the parts.

// ZoneHeader is what a zone's placement state holds besides its hosts,
// VMs, pools and networks.
type ZoneHeader struct {
	ZoneID  string   `avro:"zone_id" doc:"Zone id."`
	Decided []string `avro:"decided" doc:"Latest request ids answered, for dedup, oldest first."`
}

// ZoneHost is one host of a zone's placement state.
type ZoneHost struct {
	Host HostCapacity `avro:"host" doc:"The host: capacity, use, reservation and lease."`
}

// ZoneVm is one VM's claims in a zone's placement state.
type ZoneVm struct {
	VmID        string        `avro:"vm_id" doc:"VM."`
	Allocations []Allocation  `avro:"allocations" doc:"The VM's claims of host capacity (two while it moves)."`
	Volumes     []VolumeClaim `avro:"volumes" doc:"The VM's volumes' claims of pool capacity."`
	Nics        []NicClaim    `avro:"nics" doc:"The addresses the VM's NICs hold."`
}

// ZonePool is one storage pool of a zone's placement state.
type ZonePool struct {
	Pool PoolState `avro:"pool" doc:"The pool with what its volumes claim."`
}

// ZoneNetwork is one guest network of a zone's placement state.
type ZoneNetwork struct {
	Network NetworkState `avro:"network" doc:"The network with what its NICs hold."`
}

// VolumeClaim is one volume's claim on a pool.
type VolumeClaim struct {
	VmID     string `avro:"vm_id" doc:"VM."`
	VolumeID string `avro:"volume_id" doc:"Volume."`
	PoolID   string `avro:"pool_id" doc:"Pool."`
	SizeMB   int64  `avro:"size_mb" doc:"Size claimed, MiB."`
}

// NicClaim is one NIC's address.
type NicClaim struct {
	VmID      string `avro:"vm_id" doc:"VM."`
	NicID     string `avro:"nic_id" doc:"NIC."`
	NetworkID string `avro:"network_id" doc:"Network."`
	IP        string `avro:"ip" doc:"Address."`
	MAC       string `avro:"mac" doc:"MAC address."`
}

// HostCapacity is one host in the placement ledger.
type HostCapacity struct {
	HostID        string   `avro:"host_id" doc:"Host."`
	PodID         string   `avro:"pod_id" doc:"Pod."`
	ClusterID     string   `avro:"cluster_id" doc:"Cluster."`
	CPU           int32    `avro:"cpu" doc:"Physical CPUs."`
	MemoryMB      int64    `avro:"memory_mb" doc:"Memory, MiB."`
	CPUOvercommit float64  `avro:"cpu_overcommit" doc:"CPU over-commit ratio."`
	MemOvercommit float64  `avro:"mem_overcommit" doc:"Memory over-commit ratio."`
	UsedCPU       int32    `avro:"used_cpu" doc:"CPUs allocated."`
	UsedMemoryMB  int64    `avro:"used_memory_mb" doc:"Memory allocated, MiB."`
	Reservable    bool     `avro:"reservable" doc:"Host is Up and Enabled."`
	Tags          []string `avro:"tags" doc:"Host tags."`
	Planner       string   `avro:"planner" doc:"Planner holding a reservation; empty for none."`
	ResourceUsage string   `avro:"resource_usage" doc:"Shared or Dedicated, with planner."`
	ReservedFor   string   `avro:"reserved_for" doc:"Account of a Dedicated reservation."`
	EmptySince    int64    `avro:"empty_since" doc:"When the host last became empty, Unix milliseconds; 0 while it has VMs."`
	LeaseProject  string   `avro:"lease_project" doc:"Project an active lease dedicates the host to; empty for none."`
	LeaseID       string   `avro:"lease_id" doc:"Active lease holding the host; empty for none."`
}

// Allocation is one VM's claim on a host.
type Allocation struct {
	VmID          string `avro:"vm_id" doc:"VM."`
	HostID        string `avro:"host_id" doc:"Host."`
	Account       string `avro:"account" doc:"Owning account."`
	CPU           int32  `avro:"cpu" doc:"CPUs."`
	MemoryMB      int64  `avro:"memory_mb" doc:"Memory, MiB."`
	RequestID     string `avro:"request_id" doc:"Request that claimed it."`
	AffinityGroup string `avro:"affinity_group" doc:"Account-scoped affinity group key (account/kind:name) of the VM; empty for none."`
}
