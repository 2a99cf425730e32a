package vm

import (
	"fmt"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// Terminate deletes a VM. It is always allowed and never queues: the job in
// flight and the queued ones are cancelled first (see tx.terminate). Then,
// all in task state Deleting: when a host holds the VM and it is not known
// to be off, StopVm(force); then DestroyVm on that host, and on the
// destination of a migration it cancelled (paramAlsoOn); then the VM is
// Deleted, its capacity released, and it is expunged after ExpungeDelay.
func terminateFlow() flow {
	return flow{start: terminateStart, advance: terminateNext, answerFailed: terminateAnswerFailed, failed: terminateFailed}
}

func terminateStart(t *tx, _ any) { terminateNext(t) }

// paramAlsoOn names a second host the terminate destroys the VM on: the
// destination of a migration it cancelled; paramAlsoSent is set once the
// destroy there is sent.
const (
	paramAlsoOn   = "also_on"
	paramAlsoSent = "also_sent"
)

func destroyVm(_ *tx, ac *schemas.AgentCommand) any { return &schemas.DestroyVm{AgentCommand: *ac} }

func terminateNext(t *tx) {
	s := t.s
	switch {
	case s.HostID != "" && s.Job.Phase == "" && s.PowerState != schemas.PowerOff:
		t.step(TaskDeleting, "stop", "force-stopping the VM on host "+s.HostID,
			map[string]any{"host_id": s.HostID, "command_id": t.nextID(), "epoch": s.Epoch, "force": true})
		t.callAgent(phaseStopping, s.HostID, "")
	case s.HostID != "" && s.Job.Phase != phaseDestroying:
		t.step(TaskDeleting, "destroy", "destroying the VM and its disks on host "+s.HostID,
			map[string]any{"host_id": s.HostID, "command_id": t.nextID(), "epoch": s.Epoch})
		t.callAgent(phaseDestroying, s.HostID, "")
	case s.Job.Params[paramAlsoOn] != "" && s.Job.Params[paramAlsoSent] == "":
		// The migration this terminate cancelled may have moved the VM:
		// it is destroyed there too, after its source, whose partition
		// holds the MigrateVm before the source's destroy.
		also := s.Job.Params[paramAlsoOn]
		s.Job.Params[paramAlsoSent] = "true"
		t.step(TaskDeleting, "destroy", "destroying the VM on host "+also+", where the cancelled migration may have moved it",
			map[string]any{"host_id": also, "command_id": t.nextID(), "epoch": s.Epoch})
		t.callAgent(phaseDestroying, also, "")
	default:
		if s.Job.Phase == "" {
			t.step(TaskDeleting, "delete", "no host holds the VM", nil)
		}
		s.VmState = StateDeleted
		s.DeletedAt = t.ms
		if s.ExpungeAt == 0 {
			s.ExpungeAt = t.ms + t.cfg.ExpungeDelay.Milliseconds()
		}
		// Release every claim of the VM: this also frees what a PlaceVm of a
		// cancelled job may still allocate, since placement handles the
		// zone's requests in order.
		t.release("")
		s.HostID, s.PodID, s.ClusterID = "", "", ""
		t.succeed(fmt.Sprintf("the VM is deleted; expunge at %s", time.UnixMilli(s.ExpungeAt).UTC().Format(time.RFC3339)))
	}
}

// terminateAnswerFailed: a failed force stop does not stop a terminate
// (DestroyVm removes a running VM too); a failed destroy fails the job.
func terminateAnswerFailed(t *tx, a *schemas.AgentAnswer) {
	if t.s.Job.Phase == phaseStopping {
		t.s.Job.Wait = schemas.JobWait{}
		terminateNext(t)
		return
	}
	t.fail("AgentError", fmt.Sprintf("%s on host %s: %s", a.CommandType, a.HostID, a.Error), false)
}

// terminateFailed: a terminate that gives up before it destroyed the VM
// on the destination of the migration it cancelled leaves the VM in Error,
// with the claims of both hosts: it may run on either, and the next report
// that has it running, or its host finding it off, settles them (found by
// the simulation, seed 184).
func terminateFailed(t *tx) {
	s := t.s
	also := s.Job.Params[paramAlsoOn]
	if also == "" {
		return
	}
	s.VmState = StateError
	t.lostTrack()
	if s.Job.Params[paramAlsoSent] != "" && s.HostID != also {
		// The source destroyed it: only the destination may have it,
		// and a second Terminate destroys it there (found by the
		// simulation, seed 26000: the source's claim outlived a VM
		// destroyed there).
		t.releaseOn(s.HostID)
		s.HostID, s.PodID, s.ClusterID = also, "", ""
	}
}
