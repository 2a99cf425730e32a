package schemas

// AgentCommand holds the fields of every command on agent.commands.v1.
type AgentCommand struct {
	CommandID string `avro:"command_id" doc:"Unique id; agents execute a command id once and answer repeats with the first answer."`
	HostID    string `avro:"host_id" doc:"Host whose agent executes it; also the record key."`
	VmID      string `avro:"vm_id" doc:"VM concerned; empty for host commands."`
	Epoch     int64  `avro:"epoch" doc:"VM epoch, echoed in the answer."`
	JobID     string `avro:"job_id" doc:"Job that sent it."`
	IssuedAt  int64  `avro:"issued_at" doc:"Unix milliseconds."`
	ExpiresAt int64  `avro:"expires_at" doc:"When the command expires, Unix milliseconds: an agent that reads it later answers it without carrying it out, since the job that sent it has timed out by then. 0 for never."`
}

// AgentCommandRecord is a pointer to any command of agent.commands.v1.
type AgentCommandRecord interface {
	// Command returns the fields every agent command shares.
	Command() *AgentCommand
}

// Command returns c itself. Every agent command embeds AgentCommand and so
// has it, which lets a reader reach the shared fields of any command
// without a switch over the command types.
func (c *AgentCommand) Command() *AgentCommand { return c }

// Expired reports whether the command has expired at now (Unix
// milliseconds): the job that sent it has timed out, and an agent answers
// it without carrying it out.
func (c *AgentCommand) Expired(now int64) bool { return c.ExpiresAt != 0 && now > c.ExpiresAt }

// StartVm defines (if needed) and powers on a VM on the host.
type StartVm struct {
	AgentCommand
	Name     string   `avro:"name" doc:"VM display name."`
	CPU      int32    `avro:"cpu" doc:"Virtual CPUs."`
	MemoryMB int64    `avro:"memory_mb" doc:"Memory in MiB."`
	Volumes  []Volume `avro:"volumes" doc:"Disks, the root first: each a file <pool_path>/<volume_id>.qcow2, made on first start (the root as an overlay of its template)."`
	Nics     []Nic    `avro:"nics" doc:"Network interfaces, by device id."`
}

// StopVm powers off a VM.
type StopVm struct {
	AgentCommand
	Force bool `avro:"force" doc:"Power off at once instead of a guest shutdown."`
}

// DestroyVm removes a VM and its disks from the host.
type DestroyVm struct {
	AgentCommand
	Volumes []Volume `avro:"volumes" doc:"The VM's volumes, whose files go too."`
}

// RebootVm restarts a VM.
type RebootVm struct {
	AgentCommand
	Hard bool `avro:"hard" doc:"Reset instead of a guest reboot."`
}

// PauseVm freezes a VM.
type PauseVm struct{ AgentCommand }

// UnpauseVm resumes a frozen VM.
type UnpauseVm struct{ AgentCommand }

// SuspendVm saves a VM to disk.
type SuspendVm struct{ AgentCommand }

// ResumeVm restores a suspended VM.
type ResumeVm struct{ AgentCommand }

// RescueVm boots a VM from a rescue image.
type RescueVm struct {
	AgentCommand
	Image string `avro:"image" doc:"Rescue image."`
}

// UnrescueVm returns a rescued VM to its own disk.
type UnrescueVm struct{ AgentCommand }

// RebuildVm reinstalls a VM's root disk.
type RebuildVm struct {
	AgentCommand
	Image   string   `avro:"image" doc:"Image."`
	Volumes []Volume `avro:"volumes" doc:"The VM's volumes; the root's file is made again from its template_id."`
}

// SnapshotVm snapshots a VM's disk.
type SnapshotVm struct {
	AgentCommand
	SnapshotName string `avro:"snapshot_name" doc:"Snapshot name."`
}

// RevertSnapshotVm returns a VM's disk to one of its snapshots; the VM is
// off.
type RevertSnapshotVm struct {
	AgentCommand
	SnapshotName string `avro:"snapshot_name" doc:"Snapshot name."`
}

// DeleteSnapshotVm removes one of a VM's snapshots; deleting one the host
// does not have succeeds.
type DeleteSnapshotVm struct {
	AgentCommand
	SnapshotName string `avro:"snapshot_name" doc:"Snapshot name."`
}

// MigrateVm live-migrates a VM from this host (the source) to another.
type MigrateVm struct {
	AgentCommand
	DestHostID string   `avro:"dest_host_id" doc:"Destination host."`
	CPU        int32    `avro:"cpu" doc:"Virtual CPUs at the destination."`
	MemoryMB   int64    `avro:"memory_mb" doc:"Memory at the destination, MiB."`
	Volumes    []Volume `avro:"volumes" doc:"The VM's disks, as at the destination."`
	Nics       []Nic    `avro:"nics" doc:"The VM's network interfaces."`
}

// AbortMigrateVm asks the source's agent to abort the live migration that
// MigrateCommandID started, when its job is cancelled while the migration
// runs: the migration stops, the VM runs on at the source, and the
// MigrateVm is answered as failed. A migration that has ended (or not
// begun: the MigrateVm read after the abort fails at once) is not undone;
// the abort's own answer says which.
type AbortMigrateVm struct {
	AgentCommand
	MigrateCommandID string `avro:"migrate_command_id" doc:"The MigrateVm whose migration to abort."`
}

// CheckVm asks an agent for one VM's power on the host, changing nothing:
// the answer's power_state is the VM's state there, PowerOff when the host
// has no such VM. The VM processor sends it to the hosts that keep a claim
// for a VM it lost track of (VmRecord.maybe_on), since a host that never
// had the VM never reports it.
type CheckVm struct{ AgentCommand }

// CheckHost asks an agent to check whether a neighbour host is alive. It is
// addressed by cluster, not by host: the record is keyed by the target host,
// and any agent serving another live host of ClusterID answers it (the
// target's own agent may be the one that is gone).
type CheckHost struct {
	AgentCommand
	TargetHostID string   `avro:"target_host_id" doc:"Host to check."`
	ClusterID    string   `avro:"cluster_id" doc:"Cluster of the target; an agent serving another host of it answers."`
	Method       string   `avro:"method" doc:"neighbour (can a neighbour reach the host) or vm-activity (do the host's VMs still write to shared storage)."`
	VmIDs        []string `avro:"vm_ids" doc:"VMs last seen on the target, for vm-activity."`
}

// FenceHost asks an agent serving another host of the target's cluster to
// power the target off through its fencing device (IPMI, a PDU, the
// simulator). Addressed like CheckHost; answered by a CheckHostAnswer whose
// result is Down once the target is off for sure, else Unknown.
type FenceHost struct {
	AgentCommand
	TargetHostID string `avro:"target_host_id" doc:"Host to fence."`
	ClusterID    string `avro:"cluster_id" doc:"Cluster of the target; an agent serving another host of it fences."`
}

// AgentRejected tells an agent that its host is unknown or removed; its
// reports are ignored.
type AgentRejected struct {
	AgentCommand
	Reason string `avro:"reason" doc:"Why."`
}

// AttachVolumeVm makes a data volume's file if it has none and attaches it
// to the VM: at once to a running guest (hot-plug), else at its next start.
type AttachVolumeVm struct {
	AgentCommand
	Volume Volume `avro:"volume" doc:"The volume."`
}

// DetachVolumeVm detaches a data volume from the VM, keeping its file.
type DetachVolumeVm struct {
	AgentCommand
	Volume Volume `avro:"volume" doc:"The volume."`
}

// ResizeVolumeVm grows a volume's file to its size_mb.
type ResizeVolumeVm struct {
	AgentCommand
	Volume Volume `avro:"volume" doc:"The volume, with its new size."`
}

// SnapshotVolumeVm takes a snapshot inside a volume's file.
type SnapshotVolumeVm struct {
	AgentCommand
	Volume       Volume `avro:"volume" doc:"The volume."`
	SnapshotName string `avro:"snapshot_name" doc:"Snapshot name."`
}

// DeleteVolumeVm removes a detached volume's file.
type DeleteVolumeVm struct {
	AgentCommand
	Volume Volume `avro:"volume" doc:"The volume."`
}
