package vm

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/vmplane/vmplane/schemas"
)

// The five volume actions (docs/design.md §5.7), allowed on an Active or
// Stopped VM that has a host (one never placed has no host to make a file
// on, and is refused). Each is one agent command on the VM's host, the
// answer alone ending it, after a placement for the two that need pool
// capacity:
//
//   - AttachVolume of a new volume: PlaceVm{volumes_only} on the VM's host
//     gives it a pool, then AttachVolumeVm makes and attaches its file;
//     of a detached volume of the VM: AttachVolumeVm alone.
//   - DetachVolume: DetachVolumeVm; the volume is kept, Detached.
//   - ResizeVolume: PlaceVm{volumes_only} claims the new size on the
//     volume's pool, then ResizeVolumeVm grows the file. A resize that
//     fails after the claim keeps the larger claim: the file may have grown
//     (an unanswered command), and a claim too large is safe where one too
//     small is not.
//   - SnapshotVolume: SnapshotVolumeVm, and VolumeSnapshotTaken.
//   - DeleteVolume of a detached volume: DeleteVolumeVm, then its pool
//     claim goes (ReleaseVm{volume_ids}).
//
// A new volume whose attach fails after placement stays the VM's, Detached
// on its pool: its file may exist, and the user can attach or delete it.

// Job parameters of the volume actions besides the commands' own.
const (
	paramVolumeID   = "volume_id"
	paramVolumeName = "volume_name"
	paramSizeGB     = "size_gb"
	// paramNewDevice is the device id of the new volume an attach makes.
	paramNewDevice = "new_device"
)

func attachVolumeFlow() flow {
	return flow{start: attachStart, placed: attachPlaced, advance: attachDone, undo: attachUndo}
}

func detachVolumeFlow() flow { return flow{start: detachStart, advance: detachDone} }

func resizeVolumeFlow() flow {
	return flow{start: resizeVolumeStart, placed: resizeVolumePlaced, advance: resizeVolumeDone}
}

func snapshotVolumeFlow() flow { return flow{start: snapshotVolumeStart, advance: snapshotVolumeDone} }

func deleteVolumeFlow() flow { return flow{start: deleteVolumeStart, advance: deleteVolumeDone} }

// The checks of the five rows: a reason and detail for JobRejected, or ""
// to go on.

func attachCheck(s *schemas.VmRecord, cmd any) (reason, detail string) {
	c := cmd.(*schemas.AttachVolume)
	if reason, detail = hostOfVolumes(s); reason != "" {
		return reason, detail
	}
	if c.VolumeID != "" {
		v, reason, detail := volumeNamed(s, c.VolumeID)
		switch {
		case reason != "":
			return reason, detail
		case c.SizeGB != 0:
			return schemas.CodeInvalid, "size_gb is for a new volume; volume " + c.VolumeID + " keeps its size"
		case v.Kind == schemas.VolumeRoot:
			return schemas.CodeInvalid, "volume " + v.VolumeID + " is the VM's root volume, always attached"
		case v.State != schemas.VolumeDetached:
			return schemas.CodeInvalidState, "volume " + v.VolumeID + " is attached already"
		}
		return "", ""
	}
	if reason, detail = sizeRefused(c.SizeGB); reason != "" {
		return reason, detail
	}
	if n := len(storageOf(s).Volumes); n >= maxVolumes {
		return schemas.CodeInvalid, fmt.Sprintf("VM %s has %d volumes, the most a VM takes; delete one first", s.VmID, n)
	}
	return "", ""
}

func detachCheck(s *schemas.VmRecord, cmd any) (reason, detail string) {
	v, reason, detail := volumeOfCommand(s, cmd.(*schemas.DetachVolume).VolumeID)
	switch {
	case reason != "":
		return reason, detail
	case v.Kind == schemas.VolumeRoot:
		return schemas.CodeInvalid, "volume " + v.VolumeID + " is the VM's root volume, which cannot be detached"
	case v.State == schemas.VolumeDetached:
		return schemas.CodeInvalidState, "volume " + v.VolumeID + " is detached already"
	}
	return "", ""
}

func resizeVolumeCheck(s *schemas.VmRecord, cmd any) (reason, detail string) {
	c := cmd.(*schemas.ResizeVolume)
	v, reason, detail := volumeOfCommand(s, c.VolumeID)
	if reason != "" {
		return reason, detail
	}
	if reason, detail = sizeRefused(c.SizeGB); reason != "" {
		return reason, detail
	}
	if mb := c.SizeGB * 1024; mb <= v.SizeMB {
		return schemas.CodeInvalid, fmt.Sprintf("volume %s has %d MiB; %d GiB (%d MiB) is not larger, and a volume only grows", v.VolumeID, v.SizeMB, c.SizeGB, mb)
	}
	if v.PoolID == "" {
		return schemas.CodeInvalidState, "volume " + v.VolumeID + " is on no pool yet; start the VM first"
	}
	return "", ""
}

func snapshotVolumeCheck(s *schemas.VmRecord, cmd any) (reason, detail string) {
	_, reason, detail = volumeOfCommand(s, cmd.(*schemas.SnapshotVolume).VolumeID)
	return reason, detail
}

func deleteVolumeCheck(s *schemas.VmRecord, cmd any) (reason, detail string) {
	v, reason, detail := volumeOfCommand(s, cmd.(*schemas.DeleteVolume).VolumeID)
	switch {
	case reason != "":
		return reason, detail
	case v.Kind == schemas.VolumeRoot:
		return schemas.CodeInvalid, "volume " + v.VolumeID + " is the VM's root volume; it goes with the VM"
	case v.State != schemas.VolumeDetached:
		return schemas.CodeInvalidState, "volume " + v.VolumeID + " is attached to the VM; detach it first"
	}
	return "", ""
}

// hostOfVolumes refuses a volume action on a VM with no host: never placed
// (or recovered and not started since), it has no host to act on.
func hostOfVolumes(s *schemas.VmRecord) (reason, detail string) {
	if s.HostID == "" {
		return schemas.CodeInvalidState, "VM " + s.VmID + " has no host yet: start it, then act on its volumes"
	}
	return "", ""
}

// volumeOfCommand is the VM's volume a command names, with the refusal of
// a VM with no host or a volume it does not have.
func volumeOfCommand(s *schemas.VmRecord, id string) (v schemas.Volume, reason, detail string) {
	if reason, detail = hostOfVolumes(s); reason != "" {
		return v, reason, detail
	}
	return volumeNamed(s, id)
}

func volumeNamed(s *schemas.VmRecord, id string) (v schemas.Volume, reason, detail string) {
	if id == "" {
		return v, "Invalid", "volume_id is empty"
	}
	i := volumeIndex(s, id)
	if i < 0 {
		ids := make([]string, 0, len(storageOf(s).Volumes))
		for _, x := range storageOf(s).Volumes {
			ids = append(ids, x.VolumeID)
		}
		has := "it has none"
		if len(ids) > 0 {
			has = "it has " + strings.Join(ids, ", ")
		}
		return v, "NotFound", "VM " + s.VmID + " has no volume " + id + "; " + has
	}
	return s.Storage.Volumes[i], "", ""
}

// sizeRefused refuses a size in GiB that is not positive or too large.
func sizeRefused(gb int64) (reason, detail string) {
	if gb <= 0 || gb > maxVolumeMB/1024 {
		return schemas.CodeInvalid, fmt.Sprintf("size_gb %d is not between 1 and %d", gb, maxVolumeMB/1024)
	}
	return "", ""
}

// jobVolume is the volume the running job acts on: the record's, or the
// new one an attach is making, not in the record until placed.
func (t *tx) jobVolume() schemas.Volume {
	s := t.s
	p := s.Job.Params
	if i := volumeIndex(s, p[paramVolumeID]); i >= 0 {
		return s.Storage.Volumes[i]
	}
	dev, _ := strconv.ParseInt(p[paramNewDevice], 10, 32)
	gb, _ := strconv.ParseInt(p[paramSizeGB], 10, 64)
	name := p[paramVolumeName]
	if name == "" {
		name = p[paramVolumeID]
	}
	return schemas.Volume{VolumeID: p[paramVolumeID], Name: name, Kind: schemas.VolumeData, DeviceID: int32(dev),
		SizeMB: gb * 1024, State: schemas.VolumeAllocated, CreatedAt: s.Job.StartedAt}
}

// setJobVolume replaces the running job's volume in the record.
func (t *tx) setJobVolume(v schemas.Volume) {
	if i := volumeIndex(t.s, v.VolumeID); i >= 0 {
		t.s.Storage.Volumes[i] = v
	}
}

// nextDevice is the device id of a new data volume: the lowest that no
// volume of the VM holds, detached ones too, which keep theirs. Reusing a
// deleted volume's id keeps ids below the VM's volume limit, within what
// a hypervisor takes (the QEMU driver's 24 disks).
func nextDevice(s *schemas.VmRecord) int32 {
	used := map[int32]bool{}
	for _, v := range storageOf(s).Volumes {
		used[v.DeviceID] = true
	}
	dev := int32(1)
	for used[dev] {
		dev++
	}
	return dev
}

// placeVolumes asks placement for pool capacity for v on the VM's host
// (id from the step just emitted) and joins on the decision.
func (t *tx) placeVolumes(v schemas.Volume) {
	s := t.s
	id := t.currentID()
	t.emit(schemas.TopicPlacementRequests, s.ZoneID, &schemas.PlaceVm{
		RequestID: id, VmID: s.VmID, ZoneID: s.ZoneID, Account: s.Account, Epoch: s.Epoch, Offering: s.Offering,
		HostID: s.HostID, HostRequired: true, VolumesOnly: true, Volumes: []schemas.Volume{v}, StorageTags: storageOf(s).StorageTags, At: t.ms,
	})
	s.Job.Phase = phasePlacing
	s.Job.Wait = schemas.JobWait{Kind: waitPlacement, RequestID: id, Deadline: s.Job.Deadline}
}

// volumeStep emits a step of a volume action that sends its agent command
// next, and sends it.
func (t *tx) volumeStep(task, name, text string, v schemas.Volume) {
	s := t.s
	t.step(task, name, text, map[string]any{"host_id": s.HostID, "volume_id": v.VolumeID, "pool_id": v.PoolID,
		"command_id": t.nextID(), "epoch": s.Epoch})
	t.callAgent(phaseActing, s.HostID, "")
}

func attachStart(t *tx, _ any) {
	s := t.s
	p := t.params()
	if id := p[paramVolumeID]; id != "" {
		v := t.jobVolume()
		t.volumeStep(TaskAttachingVolume, "attach", fmt.Sprintf("attaching volume %s on pool %s to the VM on host %s", id, v.PoolID, s.HostID), v)
		return
	}
	dev := nextDevice(s)
	p[paramNewDevice] = strconv.Itoa(int(dev))
	p[paramVolumeID] = dataVolumeID(s.VmID, dev, s.Epoch)
	v := t.jobVolume()
	t.step(TaskAttachingVolume, "schedule", fmt.Sprintf("asking placement for a pool for new volume %s (%d MiB) that host %s reaches", v.VolumeID, v.SizeMB, s.HostID),
		map[string]any{"host_id": s.HostID, "volume_id": v.VolumeID, "size_mb": v.SizeMB, "request_id": t.nextID(), "epoch": s.Epoch})
	t.placeVolumes(v)
}

func attachPlaced(t *tx, d *schemas.PlacementDecided) {
	s := t.s
	s.Job.Wait = schemas.JobWait{}
	v := t.jobVolume()
	if i := slices.IndexFunc(d.Volumes, func(x schemas.Volume) bool { return x.VolumeID == v.VolumeID }); i >= 0 {
		v.PoolID, v.PoolPath = d.Volumes[i].PoolID, d.Volumes[i].PoolPath
	}
	if v.PoolID == "" {
		// What placement claimed, if anything, goes back.
		t.releaseVolumes(v.VolumeID)
		s.Job.Phase = ""
		t.fail(schemas.CodePlacementFailed, "placement gave new volume "+v.VolumeID+" no pool", false)
		return
	}
	st := t.storage()
	st.Volumes = append(st.Volumes, v)
	t.volumeChanged(v, false)
	t.volumeStep(TaskAttachingVolume, "attach", fmt.Sprintf("making new volume %s on pool %s and attaching it to the VM on host %s", v.VolumeID, v.PoolID, s.HostID), v)
}

func attachDone(t *tx) {
	v := t.jobVolume()
	v.State = schemas.VolumeReady
	t.setJobVolume(v)
	t.volumeChanged(v, false)
	t.succeed(fmt.Sprintf("volume %s is attached to the VM on host %s as device %d", v.VolumeID, t.s.HostID, v.DeviceID))
}

// attachUndo takes back a new volume of a failed attach: a claim placement
// may still make is released; one placed and in the record stays,
// Detached, since its file may exist.
func attachUndo(t *tx) {
	s := t.s
	p := s.Job.Params
	if p[paramNewDevice] == "" {
		return
	}
	switch s.Job.Phase {
	case phasePlacing:
		t.releaseVolumes(p[paramVolumeID])
	case phaseActing:
		if i := volumeIndex(s, p[paramVolumeID]); i >= 0 && s.Storage.Volumes[i].State == schemas.VolumeAllocated {
			s.Storage.Volumes[i].State = schemas.VolumeDetached
			t.volumeChanged(s.Storage.Volumes[i], false)
		}
	}
}

// releaseVolumes releases the pool claims of volumes (the host claims
// stay).
func (t *tx) releaseVolumes(ids ...string) {
	s := t.s
	t.emit(schemas.TopicPlacementRequests, s.ZoneID, &schemas.ReleaseVm{RequestID: schemas.BoundID(s.Job.JobID + "-volumes"),
		VmID: s.VmID, ZoneID: s.ZoneID, VolumeIDs: ids, At: t.ms})
}

func detachStart(t *tx, _ any) {
	v := t.jobVolume()
	t.volumeStep(TaskDetachingVolume, "detach", fmt.Sprintf("detaching volume %s from the VM on host %s", v.VolumeID, t.s.HostID), v)
}

func detachDone(t *tx) {
	v := t.jobVolume()
	v.State = schemas.VolumeDetached
	t.setJobVolume(v)
	t.volumeChanged(v, false)
	t.succeed(fmt.Sprintf("volume %s is detached and kept on pool %s", v.VolumeID, v.PoolID))
}

// resizedVolume is the job's volume with the size the resize asked for.
func (t *tx) resizedVolume() schemas.Volume {
	v := t.jobVolume()
	gb, _ := strconv.ParseInt(t.s.Job.Params[paramSizeGB], 10, 64)
	v.SizeMB = gb * 1024
	return v
}

func resizeVolumeStart(t *tx, _ any) {
	s := t.s
	v := t.resizedVolume()
	t.step(TaskResizingVolume, "schedule", fmt.Sprintf("asking placement for %d MiB for volume %s on pool %s", v.SizeMB, v.VolumeID, v.PoolID),
		map[string]any{"host_id": s.HostID, "volume_id": v.VolumeID, "pool_id": v.PoolID, "size_mb": v.SizeMB, "request_id": t.nextID(), "epoch": s.Epoch})
	t.placeVolumes(v)
}

func resizeVolumePlaced(t *tx, _ *schemas.PlacementDecided) {
	t.s.Job.Wait = schemas.JobWait{}
	v := t.resizedVolume()
	t.volumeStep(TaskResizingVolume, "resize", fmt.Sprintf("growing volume %s to %d MiB on host %s", v.VolumeID, v.SizeMB, t.s.HostID), v)
}

func resizeVolumeDone(t *tx) {
	v := t.resizedVolume()
	t.setJobVolume(v)
	t.volumeChanged(v, false)
	t.succeed(fmt.Sprintf("volume %s has %d MiB", v.VolumeID, v.SizeMB))
}

func snapshotVolumeStart(t *tx, _ any) {
	p := t.params()
	if p[paramSnapshotName] == "" {
		p[paramSnapshotName] = t.s.Job.JobID
	}
	v := t.jobVolume()
	t.volumeStep(TaskSnapshottingVolume, "snapshot", fmt.Sprintf("taking snapshot %s of volume %s on host %s", quote(p[paramSnapshotName]), v.VolumeID, t.s.HostID), v)
}

func snapshotVolumeDone(t *tx) {
	s := t.s
	name := s.Job.Params[paramSnapshotName]
	v := t.jobVolume()
	t.event(&schemas.VolumeSnapshotTaken{VmID: s.VmID, Account: s.Account, VolumeID: v.VolumeID, SnapshotName: name, JobID: s.Job.JobID, At: t.ms})
	t.succeed(fmt.Sprintf("snapshot %s of volume %s taken", quote(name), v.VolumeID))
}

func deleteVolumeStart(t *tx, _ any) {
	v := t.jobVolume()
	t.volumeStep(TaskDeletingVolume, "delete", fmt.Sprintf("deleting volume %s from pool %s through host %s", v.VolumeID, v.PoolID, t.s.HostID), v)
}

func deleteVolumeDone(t *tx) {
	s := t.s
	v := t.jobVolume()
	t.releaseVolumes(v.VolumeID)
	s.Storage.Volumes = slices.DeleteFunc(s.Storage.Volumes, func(x schemas.Volume) bool { return x.VolumeID == v.VolumeID })
	t.volumeChanged(v, true)
	t.succeed(fmt.Sprintf("volume %s is deleted; its pool %s is freed", v.VolumeID, v.PoolID))
}

// The agent commands of the volume actions.

func attachVolumeVm(t *tx, ac *schemas.AgentCommand) any {
	return &schemas.AttachVolumeVm{AgentCommand: *ac, Volume: t.jobVolume()}
}

func detachVolumeVm(t *tx, ac *schemas.AgentCommand) any {
	return &schemas.DetachVolumeVm{AgentCommand: *ac, Volume: t.jobVolume()}
}

func resizeVolumeVm(t *tx, ac *schemas.AgentCommand) any {
	return &schemas.ResizeVolumeVm{AgentCommand: *ac, Volume: t.resizedVolume()}
}

func snapshotVolumeVm(t *tx, ac *schemas.AgentCommand) any {
	return &schemas.SnapshotVolumeVm{AgentCommand: *ac, Volume: t.jobVolume(), SnapshotName: t.s.Job.Params[paramSnapshotName]}
}

func deleteVolumeVm(t *tx, ac *schemas.AgentCommand) any {
	return &schemas.DeleteVolumeVm{AgentCommand: *ac, Volume: t.jobVolume()}
}
