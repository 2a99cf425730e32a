package schemas

// VmCommand holds the fields every command on vm.commands.v1 carries.
type VmCommand struct {
	CommandID string `avro:"command_id" doc:"Unique id of the command; the job it creates has the same id. A repeated command_id returns the existing job."`
	VmID      string `avro:"vm_id" doc:"VM the command is for; also the record key."`
	Account   string `avro:"account" doc:"Account that owns the VM (an admin acting on a user's VM writes the user's account here; caller names the admin)."`
	Origin    string `avro:"origin" doc:"api, work or internal."`
	IssuedAt  int64  `avro:"issued_at" doc:"When the command was issued, Unix milliseconds."`
	Caller    Caller `avro:"caller" doc:"Who asked: account, API key and request id; account system for what vmplane started itself."`
}

// Deploy creates a VM and starts it on a host chosen by placement.
type Deploy struct {
	VmCommand
	Name          string   `avro:"name" doc:"Display name of the VM."`
	ZoneID        string   `avro:"zone_id" doc:"Zone to deploy in."`
	Offering      Offering `avro:"offering" doc:"The service offering at the time of the request."`
	HA            bool     `avro:"ha" doc:"Restart the VM elsewhere when its host fails."`
	AffinityGroup string   `avro:"affinity_group" doc:"Affinity or anti-affinity group name; empty for none."`
	Template      Template `avro:"template" doc:"Template of the root volume, as the catalog had it; id empty for a VM with no root volume."`
	RootSizeMB    int64    `avro:"root_size_mb" doc:"Root volume size, MiB; 0 for the template's size."`
	DataDiskMB    int64    `avro:"data_disk_mb" doc:"Size of a data volume to create with the VM, MiB; 0 for none."`
	NetworkIDs    []string `avro:"network_ids" doc:"Networks to give the VM a NIC on, in device order; empty for none (the gateway puts the zone's default network here when the request names none)."`
	StorageTags   []string `avro:"storage_tags" doc:"Tags the pool of the VM's volumes must carry: the offering's storage tags."`
}

// Start powers on a Stopped VM.
type Start struct {
	VmCommand
	HostID string `avro:"host_id" doc:"Host to start on; empty lets placement choose."`
}

// Stop powers off a VM.
type Stop struct {
	VmCommand
	Force bool `avro:"force" doc:"Power off at once instead of a guest shutdown."`
}

// Reboot restarts a running VM.
type Reboot struct {
	VmCommand
	Hard bool `avro:"hard" doc:"Reset instead of a guest reboot."`
}

// Pause freezes a running VM in memory.
type Pause struct{ VmCommand }

// Unpause resumes a Paused VM.
type Unpause struct{ VmCommand }

// Suspend saves a running VM to disk and stops it.
type Suspend struct{ VmCommand }

// Resume restores a Suspended VM.
type Resume struct{ VmCommand }

// Rescue boots a VM from a rescue image.
type Rescue struct {
	VmCommand
	Image string `avro:"image" doc:"Rescue image; empty for the default."`
}

// Unrescue returns a Rescued VM to its own disk.
type Unrescue struct{ VmCommand }

// Rebuild reinstalls a VM's root disk from an image.
type Rebuild struct {
	VmCommand
	Image string `avro:"image" doc:"Image to rebuild from; empty for the VM's own."`
}

// Snapshot takes a disk snapshot of a VM.
type Snapshot struct {
	VmCommand
	SnapshotName string `avro:"snapshot_name" doc:"Name of the snapshot."`
}

// RevertSnapshot returns a Stopped VM's disk to one of its snapshots.
type RevertSnapshot struct {
	VmCommand
	SnapshotName string `avro:"snapshot_name" doc:"Name of the snapshot to revert to."`
}

// DeleteSnapshot removes one of a VM's snapshots.
type DeleteSnapshot struct {
	VmCommand
	SnapshotName string `avro:"snapshot_name" doc:"Name of the snapshot to delete."`
}

// Migrate moves a VM to another host (live when it runs, cold when Stopped).
type Migrate struct {
	VmCommand
	HostID string `avro:"host_id" doc:"Destination host; empty lets placement choose one other than the source."`
}

// Resize changes a VM's offering.
type Resize struct {
	VmCommand
	Offering Offering `avro:"offering" doc:"The new service offering."`
}

// ConfirmResize keeps a Resized VM's new size and releases the old allocation.
type ConfirmResize struct{ VmCommand }

// RevertResize restores a Resized VM's old size.
type RevertResize struct{ VmCommand }

// Terminate deletes a VM. It is always allowed and cancels the job in flight.
type Terminate struct{ VmCommand }

// CancelJob asks the VM processor to cancel one job of the VM
// (docs/design.md §5.3): a queued job leaves the queue; a running one stops
// at its next safe point, before it sends its next agent command, and one
// whose agent command was sent first waits for the answer. It is no job of
// its own and does not embed VmCommand: the cancelled job's JobCancelled
// says who cancelled it.
type CancelJob struct {
	CommandID string `avro:"command_id" doc:"Unique id of the request; a repeat changes nothing."`
	VmID      string `avro:"vm_id" doc:"VM of the job; also the record key."`
	JobID     string `avro:"job_id" doc:"The job to cancel."`
	Account   string `avro:"account" doc:"Account of the caller."`
	By        string `avro:"by" doc:"Who asks, as the job's JobCancelled names it: key <key id> of account <account>."`
	Reason    string `avro:"reason" doc:"Why, as the caller says; empty for none."`
	IssuedAt  int64  `avro:"issued_at" doc:"When the request was issued, Unix milliseconds."`
	Caller    Caller `avro:"caller" doc:"Who asked: account, API key and request id."`
}

// Recover brings a Deleted VM back, Stopped, before it is expunged.
type Recover struct{ VmCommand }

// AttachVolume gives a VM a data volume: a new one of size_gb, or its own
// detached volume_id again.
type AttachVolume struct {
	VmCommand
	VolumeID   string `avro:"volume_id" doc:"A detached volume of the VM to attach again; empty for a new volume."`
	VolumeName string `avro:"volume_name" doc:"Name of a new volume; empty names it by its id."`
	SizeGB     int64  `avro:"size_gb" doc:"Size of a new volume, GiB."`
}

// DetachVolume takes a data volume off its VM and keeps it.
type DetachVolume struct {
	VmCommand
	VolumeID string `avro:"volume_id" doc:"Volume to detach."`
}

// ResizeVolume grows a volume of a VM.
type ResizeVolume struct {
	VmCommand
	VolumeID string `avro:"volume_id" doc:"Volume to grow."`
	SizeGB   int64  `avro:"size_gb" doc:"New size, GiB; never smaller than the volume."`
}

// SnapshotVolume takes a snapshot of one volume of a VM.
type SnapshotVolume struct {
	VmCommand
	VolumeID     string `avro:"volume_id" doc:"Volume."`
	SnapshotName string `avro:"snapshot_name" doc:"Snapshot name, unique per volume; empty names it by its job id."`
}

// DeleteVolume removes a detached data volume of a VM and frees its pool.
type DeleteVolume struct {
	VmCommand
	VolumeID string `avro:"volume_id" doc:"Detached volume to delete."`
}
