package vm

import (
	"fmt"
	"strconv"

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

// mayPowerOn are the jobs whose one agent command may leave an off VM on
// its host — running, paused or suspended, every state that holds capacity
// (starts aside, which cleanUpStart handles; found by the simulation, seed
// 40564: a Suspend timed out on an older PowerOff, the VM went Stopped and
// gave its claim back, and the suspended VM's report adopted it beyond the
// host's capacity).
var mayPowerOn = map[string]bool{ActReboot: true, ActRescue: true, ActUnrescue: true, ActRebuild: true, ActResume: true, ActUnpause: true,
	ActPause: true, ActSuspend: true}

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
		if !onHost(p) {
			return false
		}
		t.s.PowerState, t.s.PowerHost = p, w.HostID
		if j.Phase == phaseResizeStarting {
			// The VM runs with its new size, which placement already
			// claims: only the report confirming it is late. The resize
			// took effect, and ends as it would have.
			t.advance()
		} else {
			t.keepClaims = true
			t.fail(schemas.CodeTimeout, why+"; the agent answered that the VM runs on host "+w.HostID+", where it stays", true)
		}
		return true
	}
	t.params()[paramTimedOut] = why
	t.step(TaskStopping, "cleanup", fmt.Sprintf("%s: stopping the VM on host %s before giving up, since the start there was never answered", why, w.HostID),
		map[string]any{"host_id": w.HostID, "command_id": t.nextID(), "epoch": t.s.Epoch})
	// The cleanup gets a deadline of its own, and its command expires
	// with it.
	j.Deadline = t.graceDeadline()
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
	t.s.PowerState, t.s.PowerHost = a.PowerState, a.HostID
	if onHost(a.PowerState) {
		t.keepClaims = true
		t.fail(schemas.CodeTimeout, why+"; the VM runs on host "+a.HostID+" and stays there", true)
		return
	}
	t.fail(schemas.CodeTimeout, why, false)
}

// cleanupTimedOut ends a job whose cleanup was not answered either: the
// VM may run on that host, so it keeps the claim there, in Error.
func (t *tx) cleanupTimedOut() {
	host := t.s.Job.Wait.HostID
	t.keepClaims = true
	t.s.HostID = host
	t.failAs(StateError, schemas.CodeTimeout, t.s.Job.Params[paramTimedOut]+"; host "+host+" did not confirm the VM is off there, so it keeps its claim")
}

// A migration that times out unanswered. Its MigrateVm may have moved the
// VM or not: the agent reads it no later than its expiry (the job's
// deadline), and its answer may be on the way. Releasing the destination
// at once would leave a VM that did move there without a claim, and
// releasing nothing would leave one that did not with a claim where it
// never went. So the job waits a little more (phaseSettling) for a report:
// the VM on the destination ends the migration as done; on the source, in
// a report taken after the expiry, fails it and releases the destination.
// With no such report before the settling deadline the job fails as a
// failed migration does (settleTimedOut).

// phaseSettling: a migration past its deadline, waiting for a report that
// says which side of the move the VM is on.
const phaseSettling = "settling"

// paramExpired keeps when the migration's command expired (Unix
// milliseconds): only a source's report taken later says the VM stayed.
const paramExpired = "expired_at"

// paramCommand keeps the id of the migration's command while it settles,
// so that its late answer still counts.
const paramCommand = "command_id"

// settleMove takes over a migration that timed out waiting for its answer
// or for the destination's report, and reports whether it did.
func (t *tx) settleMove(why string) bool {
	j := t.s.Job
	w := j.Wait
	if j.Phase != phaseMigrating || w.Kind != waitAnswer {
		return false
	}
	if w.Reported {
		// The destination said the VM runs there: the move happened,
		// only the agent's answer is late.
		t.advance()
		return true
	}
	if w.Answered {
		// The agent answered that the move is done: only the
		// destination's report is late (found by the simulation, seed
		// 1938: releasing the destination left a VM that ran there
		// without a claim, and its source's claim for good).
		power := j.Params[paramAnsweredPower]
		if !onHost(power) {
			return false
		}
		t.s.PowerState, t.s.PowerHost = power, w.HostID
		t.advance()
		return true
	}
	p := t.params()
	p[paramTimedOut] = why
	p[paramExpired] = strconv.FormatInt(j.Deadline, 10)
	p[paramCommand] = w.RequestID
	t.step(TaskMigrating, "settle", fmt.Sprintf("%s: waiting for host %s or %s to report where the VM runs before giving up", why, j.Params[paramSource], j.Params[paramDest]),
		map[string]any{"source": j.Params[paramSource], "host_id": j.Params[paramDest]})
	j.Phase = phaseSettling
	j.Wait = schemas.JobWait{}
	j.Deadline = t.graceDeadline()
	return true
}

// moveReported applies a report during phaseSettling. The VM running on
// the destination ends the migration as done, whenever the report was
// taken: a move that happened cannot be undone by the command. On the
// source, only a report taken after the command expired says it stayed
// (found by the simulation, seed 10456: a destination report taken before
// the expiry was ignored, the destination released, and the VM ran there
// without a claim).
func (t *tx) moveReported(host, power string, at int64) {
	j := t.s.Job
	if !onHost(power) {
		return
	}
	switch host {
	case j.Params[paramDest]:
		j.Phase = phaseMigrating
		t.advance()
	case j.Params[paramSource]:
		expired, err := strconv.ParseInt(j.Params[paramExpired], 10, 64)
		if err == nil && at > expired {
			t.fail(schemas.CodeTimeout, j.Params[paramTimedOut]+"; the VM stayed on host "+host, false)
		}
	}
}

// moveAnswered applies the migration's late answer during phaseSettling:
// ok, the VM moved and the migration ends as done (found by the
// simulation, seed 1998: the answer was ignored, the settling gave up and
// released the destination the VM ran on). A failure answered before the
// command expired says it stayed; a refusal as expired says nothing.
func (t *tx) moveAnswered(a *schemas.AgentAnswer) {
	j := t.s.Job
	if a.CommandID != j.Params[paramCommand] || a.Epoch != t.s.Epoch {
		return
	}
	if a.OK {
		t.params()[paramAnsweredAt] = strconv.FormatInt(a.AnsweredAt, 10)
		t.s.PowerState, t.s.PowerHost = schemas.PowerOn, j.Params[paramDest]
		j.Phase = phaseMigrating
		t.advance()
		return
	}
	if expired, err := strconv.ParseInt(j.Params[paramExpired], 10, 64); err == nil && a.AnsweredAt != 0 && a.AnsweredAt < expired {
		t.fail(schemas.CodeAgentError, fmt.Sprintf("%s on host %s: %s", a.CommandType, a.HostID, a.Error), false)
	}
}

// settleTimedOut ends a migration no report settled: where the VM runs is
// unknown. Both hosts keep their claims (releasing the destination let
// placement fill it, and the VM's report from there then adopted it beyond
// its capacity: found by the simulation, seed 2547); the VM stays placed on
// its source, the destination is a host it may be on (maybeon.go), asked
// with CheckVm until its agent answers. It rests in Error rather than
// Active: a source that stops listing it then starts no HA restart, since
// the VM may run on the destination (seed 35296: a resize's move happened
// unseen, and when the source stopped listing the VM, HA started a second
// copy there). A report or an answer that has it running settles it: an
// Error VM found running follows to Active and is adopted there, which
// releases the other claim.
func (t *tx) settleTimedOut() {
	t.keepClaims = true
	t.mayBeOn(t.s.Job.Params[paramDest])
	t.lostTrack()
	t.failAs(StateError, schemas.CodeTimeout, t.s.Job.Params[paramTimedOut]+"; no host said where the VM runs: it rests in Error, with the claims of both hosts, until one says")
}

// lostTrack forgets the VM's power for a job that ends not knowing where
// the VM runs: the next report of its host is news then, even one that
// repeats the last (an Error VM found off gives back every claim it may
// hold, observe; found by the simulation, seed 362).
func (t *tx) lostTrack() {
	t.s.PowerState, t.s.PowerHost = schemas.PowerUnknown, ""
}
