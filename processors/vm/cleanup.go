package vm

import (
	"fmt"

	"github.com/vmplane/vmplane/schemas"
)

// A start that times out unanswered (docs/design.md §5.3). The job's
// StartVm went to a host and no answer came: the agent may not have read it
// (it expires with the job, so it never will), or may have started the VM
// and its answer is on the way. Giving up at once would release the
// host's claim and let the next job start the VM elsewhere while this copy
// runs — two guests of one VM. So the job first stops the VM on that host
// (phaseCleanup, a forced StopVm, which the agent reads after the StartVm,
// on the same partition) and gives up only once that host says the VM is
// not running there. A host that does not answer the cleanup either leaves
// the VM in Error on that host, still holding its claim: where it runs is
// unknown until that host reports or goes down, or the VM is terminated,
// as CloudStack leaves a VM whose stop could not be confirmed.

// phaseCleanup: the forced StopVm of a start that timed out unanswered.
const phaseCleanup = "cleanup"

// paramTimedOut keeps why the job gave up, for its JobFailed after the
// cleanup.
const paramTimedOut = "timed_out"

// startPhase reports whether a phase's agent command is a StartVm.
func startPhase(phase string) bool {
	return phase == phaseSpawning || phase == phaseStarting || phase == phaseResizeStarting
}

// cleanUpStart ends a start that timed out waiting on its host: when the
// agent answered ok that the VM runs there, only the report confirming it
// is missing, so the VM stays there with its claim; when it did not
// answer, the cleanup begins. It reports whether it took the job over;
// otherwise the job fails as any timeout does.
func (t *tx) cleanUpStart(why string) bool {
	j := t.s.Job
	w := j.Wait
	if !startPhase(j.Phase) || w.Kind != waitAnswer || w.HostID == "" {
		return false
	}
	if w.Answered {
		p := j.Params[paramAnsweredPower]
		switch {
		case !onHost(p):
			return false
		case j.Phase == phaseResizeStarting:
			// The VM runs with its new size, which placement already
			// claims: only the report confirming it is late. The resize
			// took effect, and ends as it would have.
			t.s.PowerState, t.s.PowerHost = p, w.HostID
			t.advance()
		default:
			t.s.PowerState, t.s.PowerHost = p, w.HostID
			t.keepClaims = true
			t.fail("Timeout", why+"; the agent answered that the VM runs on host "+w.HostID+", where it stays", true)
		}
		return true
	}
	if j.Params == nil {
		j.Params = map[string]string{}
	}
	j.Params[paramTimedOut] = why
	t.step(TaskStopping, "cleanup", fmt.Sprintf("%s: stopping the VM on host %s before giving up, since the start there was never answered", why, w.HostID),
		map[string]any{"host_id": w.HostID, "command_id": t.nextID(), "epoch": t.s.Epoch})
	// The cleanup gets a deadline of its own, and its command expires
	// with it.
	j.Deadline = t.ms + 3*t.cfg.ResendAfter.Milliseconds()
	t.callAgent(phaseCleanup, w.HostID, "")
	return true
}

// cleanupAnswered ends the job once the host answered the cleanup: a VM
// that is not running there gives its claims back as a timed-out job
// does; one that runs there after all stays, Active where it runs.
func (t *tx) cleanupAnswered(a *schemas.AgentAnswer) {
	why := t.s.Job.Params[paramTimedOut]
	if a.PowerState == schemas.PowerUnknown || a.PowerState == "" {
		// The agent could not look (its host unreachable, or the stop
		// expired unread): nothing is confirmed, as if it had not
		// answered (found by the simulation: an expired cleanup read as
		// "off" let HA start a second copy).
		t.cleanupTimedOut()
		return
	}
	if onHost(a.PowerState) {
		t.s.PowerState, t.s.PowerHost = a.PowerState, a.HostID
		t.keepClaims = true
		t.fail("Timeout", why+"; the VM runs on host "+a.HostID+" and stays there", true)
		return
	}
	t.s.PowerState, t.s.PowerHost = a.PowerState, a.HostID
	t.fail("Timeout", why, false)
}

// cleanupTimedOut ends a job whose cleanup was not answered either: the
// VM may run on that host, so it keeps the claim there, in Error.
func (t *tx) cleanupTimedOut() {
	host := t.s.Job.Wait.HostID
	t.keepClaims = true
	t.s.HostID = host
	t.failAs(StateError, "Timeout", t.s.Job.Params[paramTimedOut]+"; host "+host+" did not confirm the VM is off there, so it keeps its claim")
}
