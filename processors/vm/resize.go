package vm

import (
	"encoding/json"
	"fmt"

	"github.com/vmplane/vmplane/schemas"
)

// Resize changes a VM's offering. A Stopped VM holds no capacity and runs
// nowhere: its offering changes at once and the next Start places it with
// the new size. A running VM asks placement (ResizeVm): on the same host
// when the new size fits there, the VM restarts with it; on another host it
// moves live with the new size, and its old allocation stays claimed until
// confirm. Either way the VM ends Resized (ResizeVerify done), waiting for
// ConfirmResize (keep) or RevertResize (go back).
func resizeFlow() flow {
	return flow{start: resizeStart, placed: resizePlaced, advance: resizeAdvance, releaseOnFail: resizeRelease}
}

// resizeSends are the agent commands of a resize and of its revert: a
// restart in place with the new (or old) size, or a move with it.
var resizeSends = sends{phaseResizeStopping: forceStopVm, phaseResizeStarting: startVm, phaseMigrating: migrateVm,
	phaseCleanup: forceStopVm}

// newOffering is the offering a Resize job asked for.
func (t *tx) newOffering() schemas.Offering {
	var o schemas.Offering
	if err := json.Unmarshal([]byte(t.s.Job.Params[paramOffering]), &o); err != nil {
		return t.s.Offering
	}
	return o
}

// sizeNow is the offering an agent command of the running job uses: the
// new one while resizing, the old one while reverting.
func (t *tx) sizeNow() schemas.Offering {
	switch t.s.Job.JobType {
	case ActResize:
		return t.newOffering()
	case ActRevertResize:
		return oldOffering(t.s)
	}
	return t.s.Offering
}

func resizeStart(t *tx, _ any) {
	s := t.s
	off := t.newOffering()
	if s.VmState == StateStopped {
		t.step(TaskResizing, "resize", fmt.Sprintf("the VM is stopped: its offering becomes %s (%d CPU, %d MiB)", offeringName(off), off.CPU, off.MemoryMB),
			map[string]any{"offering": offeringName(off), "cpu": off.CPU, "memory_mb": off.MemoryMB})
		s.Offering = off
		t.succeed("the VM is resized; it takes the new size at its next start")
		return
	}
	t.step(TaskScheduling, "schedule", fmt.Sprintf("asking placement for room for offering %s (%d CPU, %d MiB), on host %s if it fits",
		offeringName(off), off.CPU, off.MemoryMB, s.HostID),
		map[string]any{"offering": offeringName(off), "host_id": s.HostID, "request_id": t.nextID(), "epoch": s.Epoch})
	t.resizeRequest(off)
}

// resizeRequest asks placement to hold off for the VM (same host if it
// fits) and joins on the decision.
func (t *tx) resizeRequest(off schemas.Offering) {
	s := t.s
	id := t.currentID()
	t.emit(schemas.TopicPlacementRequests, s.ZoneID, &schemas.ResizeVm{
		RequestID: id, VmID: s.VmID, ZoneID: s.ZoneID, Account: s.Account, Epoch: s.Epoch, Offering: off, At: t.ms,
		Volumes: placedVolumes(s), Nics: nicsOf(s)})
	s.Job.Phase = phasePlacing
	s.Job.Wait = schemas.JobWait{Kind: waitPlacement, RequestID: id, Deadline: s.Job.Deadline}
}

func offeringName(o schemas.Offering) string {
	if o.Name != "" {
		return o.Name
	}
	return o.ID
}

func resizePlaced(t *tx, d *schemas.PlacementDecided) {
	s := t.s
	s.Job.Wait = schemas.JobWait{}
	p := t.params()
	p[paramSource] = s.HostID
	if d.HostID == s.HostID {
		t.restartInPlace("restarting the VM on host " + s.HostID + " with its new size")
		return
	}
	p[paramDest], p[paramDestPod], p[paramDestCluster] = d.HostID, d.PodID, d.ClusterID
	t.step(TaskMigrating, "migrate", fmt.Sprintf("moving the VM live from host %s to host %s with its new size", s.HostID, d.HostID),
		map[string]any{"source": s.HostID, "host_id": d.HostID, "command_id": t.nextID(), "epoch": s.Epoch})
	t.callAgent(phaseMigrating, d.HostID, schemas.PowerOn)
}

// restartInPlace powers the VM off to start it again with sizeNow.
func (t *tx) restartInPlace(text string) {
	s := t.s
	t.step(TaskResizing, "stop", text, map[string]any{"host_id": s.HostID, "command_id": t.nextID(), "epoch": s.Epoch})
	t.callAgent(phaseResizeStopping, s.HostID, schemas.PowerOff)
}

// resizeAdvance goes on after each agent step of a resize or a revert.
func resizeAdvance(t *tx) {
	s := t.s
	switch s.Job.Phase {
	case phaseResizeStopping:
		size := t.sizeNow()
		t.step(TaskResizing, "start", fmt.Sprintf("starting the VM on host %s with %d CPU, %d MiB", s.HostID, size.CPU, size.MemoryMB),
			map[string]any{"host_id": s.HostID, "command_id": t.nextID(), "epoch": s.Epoch})
		t.callAgent(phaseResizeStarting, s.HostID, schemas.PowerOn)
		return
	case phaseMigrating:
		p := s.Job.Params
		t.moveDone()
		s.HostID, s.PodID, s.ClusterID = p[paramDest], p[paramDestPod], p[paramDestCluster]
	}
	if s.Job.JobType == ActRevertResize {
		revertDone(t)
		return
	}
	p := s.Job.Params
	old := s.Offering
	s.Rare.OldOffering = &old
	s.Offering = t.newOffering()
	s.Rare.ResizeSourceHost = ""
	if p[paramDest] != "" {
		s.Rare.ResizeSourceHost = p[paramSource]
	}
	t.step(TaskResizeVerify, "verify", "the VM runs with its new size on host "+s.HostID+"; confirm or revert the resize", nil)
	s.VmState = StateResized
	t.succeed("resized, waiting for confirm or revert")
}

// settleClaim makes the VM's claim on its host its exact size: a release
// and an adopt, since an in-place resize claims the larger of both sizes
// until the VM settles on one.
func (t *tx) settleClaim() {
	if host := t.s.HostID; host != "" {
		t.release(host)
		t.adopt(host)
	}
}

// resizeRelease undoes the claim of a failed resize: the destination of a
// move, or the new size of an in-place resize (its claim goes back to the
// old size on that host).
func resizeRelease(t *tx) {
	s := t.s
	p := s.Job.Params
	switch {
	case p[paramDest] != "":
		migrateRelease(t)
	case p[paramSource] == "":
		t.releaseUndecided()
	default:
		// In place. A VM that still runs there runs at its old size (the
		// restart with the new one never happened): a fact, so its claim
		// there goes back to that size whether or not it fits now (an
		// adopt after a release). Asking placement to resize it again
		// could move the claim to a host the VM never went to. A VM that
		// is off there (stopped for the restart, or by the cleanup of an
		// unanswered start) holds nothing.
		t.release(p[paramSource])
		if onHost(s.PowerState) && s.PowerHost == p[paramSource] {
			t.adopt(p[paramSource])
		}
	}
}

// ConfirmResize keeps the new size: the allocation left on the old host of
// a move is released.
func confirmResizeFlow() flow { return flow{start: confirmStart} }

func confirmStart(t *tx, _ any) {
	s := t.s
	old := s.Rare.ResizeSourceHost
	text := "keeping the new size"
	if old != "" && old != s.HostID {
		text += "; releasing the old allocation on host " + old
	}
	t.step(TaskResizeVerify, "confirm", text, map[string]any{"old_host": old})
	if old != "" && old != s.HostID {
		t.release(old)
	} else {
		// In place, the claim covered both sizes: it becomes the new one.
		t.settleClaim()
	}
	s.Rare.OldOffering, s.Rare.ResizeSourceHost = nil, ""
	s.VmState = StateActive
	t.succeed("resize confirmed")
}

// RevertResize goes back to the old size: back to the old host (whose
// allocation was kept) after a move, or a restart with the old size after
// placement gave it back in place.
func revertResizeFlow() flow {
	return flow{start: revertStart, placed: revertPlaced, advance: resizeAdvance, releaseOnFail: migrateRelease}
}

func revertStart(t *tx, _ any) {
	s := t.s
	p := t.params()
	old := s.Rare.ResizeSourceHost
	if old != "" && old != s.HostID {
		p[paramSource], p[paramDest] = s.HostID, old
		t.step(TaskMigrating, "migrate", fmt.Sprintf("moving the VM back live from host %s to host %s with its old size", s.HostID, old),
			map[string]any{"source": s.HostID, "host_id": old, "command_id": t.nextID(), "epoch": s.Epoch})
		t.callAgent(phaseMigrating, old, schemas.PowerOn)
		return
	}
	o := oldOffering(s)
	t.step(TaskResizing, "schedule", fmt.Sprintf("asking placement for the old size %s (%d CPU, %d MiB) on host %s", offeringName(o), o.CPU, o.MemoryMB, s.HostID),
		map[string]any{"offering": offeringName(o), "request_id": t.nextID(), "epoch": s.Epoch})
	t.resizeRequest(o)
}

func revertPlaced(t *tx, d *schemas.PlacementDecided) {
	s := t.s
	s.Job.Wait = schemas.JobWait{}
	if d.HostID != s.HostID {
		// The old size no longer fits where the VM runs (its claim there
		// went back to what runs, a failed restart's rollback), and
		// placement found room elsewhere: a revert in place cannot use
		// it, so that claim goes and the VM stays as it is (found by the
		// simulation, seed 9451: the revert restarted the VM in place,
		// and the other host's claim stayed for good).
		t.release(d.HostID)
		s.Job.Phase = ""
		t.fail(schemas.CodePlacementFailed, fmt.Sprintf("the old size no longer fits on host %s (placement offered host %s; a revert in place cannot move the VM)", s.HostID, d.HostID), false)
		return
	}
	t.restartInPlace("restarting the VM on host " + s.HostID + " with its old size")
}

func revertDone(t *tx) {
	s := t.s
	p := s.Job.Params
	s.Offering, s.Rare.OldOffering, s.Rare.ResizeSourceHost = oldOffering(s), nil, ""
	if p[paramDest] != "" {
		// Back on the old host: the new one's claim goes.
		t.releaseOn(p[paramSource])
	} else {
		// In place, the claim covered both sizes: it becomes the old one.
		t.settleClaim()
	}
	s.VmState = StateActive
	t.succeed("resize reverted; the VM runs with its old size on host " + s.HostID)
}
