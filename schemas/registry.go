package schemas

import "reflect"

// recordDocs lists every top-level record with the doc of its schema. The
// order is the order of the .avsc files' generation; nothing depends on it.
var recordDocs = []struct {
	v   any
	doc string
}{
	{Deploy{}, "Create a VM and start it on a host chosen by placement."},
	{Start{}, "Power on a Stopped VM."},
	{Stop{}, "Power off a VM."},
	{Reboot{}, "Restart a running VM."},
	{Pause{}, "Freeze a running VM."},
	{Unpause{}, "Resume a Paused VM."},
	{Suspend{}, "Save a running VM to disk."},
	{Resume{}, "Restore a Suspended VM."},
	{Rescue{}, "Boot a VM from a rescue image."},
	{Unrescue{}, "Return a Rescued VM to its own disk."},
	{Rebuild{}, "Reinstall a VM's root disk."},
	{Snapshot{}, "Snapshot a VM's disk."},
	{Migrate{}, "Move a VM to another host."},
	{Resize{}, "Change a VM's offering."},
	{ConfirmResize{}, "Keep a Resized VM's new size."},
	{RevertResize{}, "Restore a Resized VM's old size."},
	{Terminate{}, "Delete a VM; always allowed, cancels the job in flight."},
	{CancelJob{}, "Cancel one job of a VM, queued or running."},
	{RevertSnapshot{}, "Return a Stopped VM's disk to a snapshot."},
	{DeleteSnapshot{}, "Delete a VM's snapshot."},
	{Recover{}, "Bring a Deleted VM back, Stopped, before it is expunged."},
	{AttachVolume{}, "Give a VM a data volume, new or its own detached one."},
	{DetachVolume{}, "Take a data volume off its VM, keeping it."},
	{ResizeVolume{}, "Grow a volume of a VM."},
	{SnapshotVolume{}, "Snapshot one volume of a VM."},
	{DeleteVolume{}, "Remove a detached data volume of a VM."},
	{PowerReport{}, "Raw power state of one VM as its host's agent saw it."},
	{AgentAnswer{}, "Agent's answer to an agent command about a VM."},
	{PlacementDecided{}, "Placement chose a host for a VM."},
	{PlacementFailed{}, "Placement found no host for a VM."},
	{HostDown{}, "The VM's last host was fenced."},
	{VmMissingFromHost{}, "The VM's host stopped listing it."},
	{StoragePoolDown{}, "A pool holding one of the VM's volumes failed."},
	{JobAccepted{}, "A command became a job."},
	{JobStepped{}, "One step of a job."},
	{JobSucceeded{}, "A job reached its goal."},
	{JobFailed{}, "A job failed."},
	{JobCancelled{}, "A job was cancelled, by Terminate or CancelJob."},
	{JobRejected{}, "A command was not allowed."},
	{VmStateChanged{}, "The VM after a change."},
	{PowerStateObserved{}, "A power report agreed with the VM."},
	{AlertRaised{}, "Something for an operator to look at."},
	{AlertAcknowledged{}, "Someone has seen an alert."},
	{VmExpunged{}, "A Deleted VM was expunged."},
	{SnapshotTaken{}, "A VM's snapshot was taken."},
	{SnapshotDeleted{}, "A VM's snapshot is gone."},
	{VolumeChanged{}, "A VM's volume was created, changed or removed."},
	{NicChanged{}, "A VM's NIC got or released its address."},
	{VolumeSnapshotTaken{}, "A snapshot of one volume was taken."},
	{VmRecord{}, "VM processor state of one VM (changelog)."},
	{StartVm{}, "Agent command: power on a VM."},
	{StopVm{}, "Agent command: power off a VM."},
	{DestroyVm{}, "Agent command: remove a VM."},
	{RebootVm{}, "Agent command: restart a VM."},
	{PauseVm{}, "Agent command: freeze a VM."},
	{UnpauseVm{}, "Agent command: unfreeze a VM."},
	{SuspendVm{}, "Agent command: suspend a VM."},
	{ResumeVm{}, "Agent command: resume a VM."},
	{RescueVm{}, "Agent command: rescue a VM."},
	{UnrescueVm{}, "Agent command: unrescue a VM."},
	{RebuildVm{}, "Agent command: rebuild a VM."},
	{SnapshotVm{}, "Agent command: snapshot a VM."},
	{RevertSnapshotVm{}, "Agent command: revert a VM's disk to a snapshot."},
	{DeleteSnapshotVm{}, "Agent command: delete a VM's snapshot."},
	{AttachVolumeVm{}, "Agent command: make a data volume's file if needed and attach it."},
	{DetachVolumeVm{}, "Agent command: detach a data volume, keeping its file."},
	{ResizeVolumeVm{}, "Agent command: grow a volume's file."},
	{SnapshotVolumeVm{}, "Agent command: snapshot a volume inside its file."},
	{DeleteVolumeVm{}, "Agent command: remove a detached volume's file."},
	{MigrateVm{}, "Agent command: live-migrate a VM."},
	{AbortMigrateVm{}, "Agent command: abort a live migration in flight, its job cancelled."},
	{CheckVm{}, "Agent command: read one VM's power, changing nothing."},
	{CheckHost{}, "Agent command: check a neighbour host."},
	{FenceHost{}, "Agent command: power a neighbour host off."},
	{AgentRejected{}, "The host processor refuses an agent's host."},
	{AgentConnected{}, "An agent connected for a host."},
	{AgentPing{}, "An agent's heartbeat for a host."},
	{AgentDisconnected{}, "An agent stopped serving a host."},
	{CheckHostAnswer{}, "Answer to CheckHost or FenceHost."},
	{MaintenanceMigrationEnded{}, "A maintenance Migrate job of a host ended."},
	{EnableHost{}, "Admin: enable a host."},
	{AddHost{}, "Admin: register a host before its agent connects."},
	{UnmanageHost{}, "Admin: stop managing a host."},
	{ManageHost{}, "Admin: manage an Unmanaged host again."},
	{DisableHost{}, "Admin: disable a host."},
	{PrepareForMaintenance{}, "Admin: empty a host for maintenance."},
	{CancelMaintenance{}, "Admin: leave maintenance."},
	{RemoveHost{}, "Admin: remove a host."},
	{HostStatus{}, "Latest status of a host."},
	{HostRecord{}, "Host processor state of one host (changelog)."},
	{PlaceVm{}, "Ask placement for a host."},
	{ReleaseVm{}, "Free a VM's allocation."},
	{ResizeVm{}, "Change a VM's allocation."},
	{CapacityAllocated{}, "Host capacity claimed for a VM."},
	{CapacityReleased{}, "Host capacity released."},
	{HostReserved{}, "A planner reserved a host."},
	{HostReservationReleased{}, "A planner host reservation ended."},
	{StoragePoolChanged{}, "A storage pool after a change of it or its claims."},
	{NetworkChanged{}, "A guest network after a change of it or its addresses."},
	{ZoneRecord{}, "Placement processor state of one zone (changelog)."},
	{ZoneHeader{}, "Placement processor state of one zone: its header (changelog part)."},
	{ZoneHost{}, "Placement processor state of one zone: one host (changelog part)."},
	{ZoneVm{}, "Placement processor state of one zone: one VM's claims (changelog part)."},
	{ZonePool{}, "Placement processor state of one zone: one storage pool (changelog part)."},
	{ZoneNetwork{}, "Placement processor state of one zone: one guest network (changelog part)."},
	{CreateLease{}, "Reserve hosts over a time window."},
	{UpdateLease{}, "Change a lease."},
	{DeleteLease{}, "End and remove a lease."},
	{LeaseStatusChanged{}, "A lease after a change."},
	{UpdateStoragePool{}, "Create, change or delete a primary storage pool."},
	{UpdateNetwork{}, "Create or delete a guest network."},
	{LeaseHostChanged{}, "A lease zone's host became reservable or stopped being so."},
	{LeaseZoneRecord{}, "Lease processor state of one zone (changelog)."},
	{LeaseZoneHeader{}, "Lease processor state of one zone: its header (changelog part)."},
	{LeaseZoneHost{}, "Lease processor state of one zone: one host (changelog part)."},
	{LeaseZoneVm{}, "Lease processor state of one zone: one VM's claims (changelog part)."},
	{ServiceOffering{}, "A service offering in the catalog."},
	{Template{}, "A template (image) in the catalog."},
	{AccountCreated{}, "An account was created."},
	{ApiKeyIssued{}, "An API key was issued."},
	{ApiKeyRevoked{}, "An API key was revoked."},
	{SettingChanged{}, "An operator setting was set at a scope."},
}

// Names returns the record name of every top-level record, in registry order.
func Names() []string {
	out := make([]string, len(recordDocs))
	for i, r := range recordDocs {
		out[i] = reflect.TypeOf(r.v).Name()
	}
	return out
}

// TypeName returns the record name of v (a value or pointer of a schemas type).
func TypeName(v any) string {
	t := reflect.TypeOf(v)
	if e, ok := byType[t]; ok {
		return e.name
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return ""
	}
	return t.Name()
}
