package schemas

// HostCommand holds the fields of every admin command on host.commands.v1.
type HostCommand struct {
	CommandID string `avro:"command_id" doc:"Unique command id."`
	HostID    string `avro:"host_id" doc:"Host; also the record key."`
	Account   string `avro:"account" doc:"Admin account that asked."`
	IssuedAt  int64  `avro:"issued_at" doc:"Unix milliseconds."`
	Caller    Caller `avro:"caller" doc:"Who asked: account, API key and request id."`
}

// EnableHost lets placement use a host again.
type EnableHost struct{ HostCommand }

// DisableHost keeps placement off a host; its VMs keep running.
type DisableHost struct{ HostCommand }

// PrepareForMaintenance migrates every VM off a host, then puts it in Maintenance.
type PrepareForMaintenance struct{ HostCommand }

// CancelMaintenance returns a host in (or preparing for) maintenance to Enabled.
type CancelMaintenance struct{ HostCommand }

// RemoveHost forgets a host; its agent is refused from then on.
type RemoveHost struct{ HostCommand }

// AddHost registers a host before its agent connects: the way in when
// auto-registration is off, and the way back for a removed host. What the
// agent's hello says of the host (its place, capacity, tags) replaces
// what the admin gave here.
type AddHost struct {
	HostCommand
	Name       string `avro:"name" doc:"Display name."`
	ZoneID     string `avro:"zone_id" doc:"Zone."`
	PodID      string `avro:"pod_id" doc:"Pod."`
	ClusterID  string `avro:"cluster_id" doc:"Cluster."`
	Hypervisor string `avro:"hypervisor" doc:"Hypervisor type."`
}

// UnmanageHost stops managing a host: it leaves placement, and a silent
// agent is neither investigated nor escalated, so nothing is done to its
// VMs while an operator works on it.
type UnmanageHost struct{ HostCommand }

// ManageHost takes an Unmanaged host back: Enabled, and watched again.
type ManageHost struct{ HostCommand }
