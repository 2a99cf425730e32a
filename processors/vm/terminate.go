package vm

import (
	"fmt"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// Terminate deletes a VM. It is always allowed and never queues: the job in
// flight and the queued ones are cancelled first (see tx.terminate). Then,
// all in task state Deleting: when a host holds the VM and it is not known
// to be off, StopVm(force); then DestroyVm on that host, and on every host
// the VM may be on (VmRecord.MaybeOn: the destination of a migration it
// cancelled, or one an earlier job could not rule out); then the VM is
// Deleted, its capacity released, and it is expunged after ExpungeDelay.
func terminateFlow() flow {
	return flow{start: terminateStart, advance: terminateNext, answerFailed: terminateAnswerFailed, failed: terminateFailed}
}

func terminateStart(t *tx, _ any) { terminateNext(t) }

// paramDestroying names the host the destroy in flight is sent to;
// paramOwnDestroyed is set once the VM's own host answered its destroy.
const (
	paramDestroying   = "destroying"
	paramOwnDestroyed = "own_destroyed"
)

// destroyVm removes the VM with every volume it has, detached ones too:
// they are the VM's, and go with it.
func destroyVm(t *tx, ac *schemas.AgentCommand) any {
	return &schemas.DestroyVm{AgentCommand: *ac, Volumes: storageOf(t.s).Volumes}
}

func terminateNext(t *tx) {
	s := t.s
	t.destroyedOn()
	switch {
	case s.HostID != "" && s.Job.Phase == "" && s.PowerState != schemas.PowerOff:
		t.step(TaskDeleting, "stop", "force-stopping the VM on host "+s.HostID,
			map[string]any{"host_id": s.HostID, "command_id": t.nextID(), "epoch": s.Epoch, "force": true})
		t.callAgent(phaseStopping, s.HostID, "")
	case s.HostID != "" && s.Job.Params[paramOwnDestroyed] == "":
		t.destroyOn(s.HostID, "destroying the VM and its disks on host "+s.HostID)
	case len(s.Rare.MaybeOn) > 0:
		// A migration this terminate cancelled, or an earlier job, may
		// have moved the VM: it is destroyed there too, after its own
		// host, whose partition holds the MigrateVm before the destroy.
		also := s.Rare.MaybeOn[0]
		t.destroyOn(also, "destroying the VM on host "+also+", where it may have moved")
	default:
		if s.Job.Phase == "" {
			t.step(TaskDeleting, "delete", "no host holds the VM", nil)
		}
		s.VmState = StateDeleted
		s.Rare.DeletedAt = t.ms
		if s.Rare.ExpungeAt == 0 {
			s.Rare.ExpungeAt = t.ms + t.cfg.ExpungeDelay.Milliseconds()
		}
		// Release every claim of the VM: this also frees what a PlaceVm of a
		// cancelled job may still allocate, since placement handles the
		// zone's requests in order.
		t.release("")
		s.HostID, s.PodID, s.ClusterID = "", "", ""
		// The destroys took the VM's disks and its snapshots with them;
		// its addresses stay until it is expunged.
		t.dropSnapshots(func(string) bool { return true })
		t.volumesDestroyed()
		t.succeed(fmt.Sprintf("the VM is deleted; expunge at %s", time.UnixMilli(s.Rare.ExpungeAt).UTC().Format(time.RFC3339)))
	}
}

// destroyOn sends the DestroyVm to host.
func (t *tx) destroyOn(host, text string) {
	s := t.s
	t.step(TaskDeleting, "destroy", text, map[string]any{"host_id": host, "command_id": t.nextID(), "epoch": s.Epoch})
	t.callAgent(phaseDestroying, host, "")
	t.params()[paramDestroying] = host
}

// destroyedOn takes the destroy just answered: the VM is gone from that
// host. Another host than its own gives its claim back at once, so a
// terminate that fails later leaves claims only where the VM may be.
func (t *tx) destroyedOn() {
	s := t.s
	host := s.Job.Params[paramDestroying]
	if s.Job.Phase != phaseDestroying || host == "" {
		return
	}
	delete(s.Job.Params, paramDestroying)
	if host == s.HostID {
		s.Job.Params[paramOwnDestroyed] = "true"
		return
	}
	t.release(host)
}

// terminateAnswerFailed: a failed force stop does not stop a terminate
// (DestroyVm removes a running VM too); a failed destroy fails the job.
func terminateAnswerFailed(t *tx, a *schemas.AgentAnswer) {
	if t.s.Job.Phase == phaseStopping {
		t.s.Job.Wait = schemas.JobWait{}
		terminateNext(t)
		return
	}
	t.fail(schemas.CodeAgentError, fmt.Sprintf("%s on host %s: %s", a.CommandType, a.HostID, a.Error), false)
}

// terminateFailed: a terminate that gives up while a host it has not
// destroyed on may hold the VM leaves the VM in Error, keeping the claims
// where it may be: the next report that has it running, or the answers to
// CheckVm (maybeon.go), settle them (found by the simulation, seed 184).
// When its own host destroyed it, only the others may have it: the first
// becomes its host and the own host's claim goes (seed 26000: the source's
// claim outlived a VM destroyed there).
func terminateFailed(t *tx) {
	s := t.s
	if len(s.Rare.MaybeOn) == 0 {
		return
	}
	s.VmState = StateError
	t.lostTrack()
	if s.Job.Params[paramOwnDestroyed] != "" {
		t.releaseOn(s.HostID)
		s.HostID, s.PodID, s.ClusterID = s.Rare.MaybeOn[0], "", ""
		t.notOn(s.HostID)
	}
}
