package vm

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// What a job waits for (JobWait.Kind). An Answer wait with Power set needs
// both the ok answer and a report of that power state from the host, in
// either order.
const (
	waitPlacement = "Placement"
	waitAnswer    = "Answer"
)

// Phases of the flows (JobState.Phase). A row's sends names the agent
// command of each phase that sends one, so a Tick can send it again.
const (
	phasePlacing    = "placing"
	phaseSpawning   = "spawning"
	phaseStarting   = "starting"
	phaseStopping   = "stopping"
	phaseDestroying = "destroying"
	// phaseActing is the single agent command of a simple action (Reboot,
	// Pause, ..., Snapshot); the command is in the action's row.
	phaseActing = "acting"
	// phaseMigrating: MigrateVm sent to the source, waiting for the answer
	// and the destination's report.
	phaseMigrating = "migrating"
	// Resize in place restarts the VM with its new size; revert too.
	phaseResizeStopping = "resize-stopping"
	phaseResizeStarting = "resize-starting"
	// phaseRevertPlacing: a revert in place waits for placement to give
	// the old size back.
	phaseRevertPlacing = "revert-placing"
)

// Job parameters kept in JobState.Params besides the command's own.
const (
	// paramSource is the host a migration leaves; MigrateVm goes to it.
	paramSource = "source"
	// paramDest, paramDestPod, paramDestCluster: the placement decision
	// of a migration, applied when the VM reports from there.
	paramDest        = "dest"
	paramDestPod     = "dest_pod"
	paramDestCluster = "dest_cluster"
	// paramOffering is the new offering of a Resize, JSON encoded.
	paramOffering = "offering"
)

// Outcomes kept in VmRecord.Recent.
const (
	outcomeSucceeded = "succeeded"
	outcomeFailed    = "failed"
	outcomeCancelled = "cancelled"
	outcomeRejected  = "rejected"
)

// recentJobs is how many finished jobs a VM remembers for command-id dedup.
const recentJobs = 16

// paramAnsweredAt keeps, in JobState.Params, the agent's time of the ok
// answer: a power report observed before it predates the command and is
// not a contradiction.
const paramAnsweredAt = "answered_at"

// paramReportedAt keeps the host's time of the destination's power report
// that confirmed a move (moveDone).
const paramReportedAt = "reported_at"

// paramAnsweredPower keeps the power state the ok answer said the command
// left the VM in, for a job that times out before the report that would
// confirm it (cleanup.go).
const paramAnsweredPower = "answered_power"

// flow is one job type's behaviour; the job machinery calls it.
type flow struct {
	// start runs the first steps of a job that just began.
	start func(t *tx, cmd any)
	// advance goes on after the job's wait was satisfied.
	advance func(t *tx)
	// answerFailed handles a not-ok agent answer; nil fails the job with
	// reason AgentError.
	answerFailed func(t *tx, a *schemas.AgentAnswer)
	// holds reports whether a failing job holds placement capacity that
	// must be released.
	holds func(j schemas.JobState) bool
	// releaseOnFail, when set, replaces holds: it releases exactly what
	// the failing job claimed (a migration must not release the source).
	releaseOnFail func(t *tx)
	// failed runs when the job fails, before JobFailed (HA retries).
	failed func(t *tx)
	// undo, when set, takes back what a failing job made besides host
	// claims (a new volume's pool claim), whatever else is released.
	undo func(t *tx)
	// placed, when set, takes the placement decision instead of moving
	// the VM there at once (a migration moves when the VM reports).
	placed func(t *tx, d *schemas.PlacementDecided)
}

func originOf(c schemas.VmCommand) string {
	if c.Origin == "" {
		return schemas.OriginAPI
	}
	return c.Origin
}

func (t *tx) refOf(action string, c schemas.VmCommand) schemas.JobRef {
	account := c.Account
	if account == "" && t.s != nil {
		account = t.s.Account
	}
	return schemas.JobRef{JobID: c.CommandID, VmID: t.key, Account: account, JobType: action, Origin: originOf(c), At: t.ms}
}

// jobRef is the JobRef of the running job.
func (t *tx) jobRef() schemas.JobRef {
	j := t.s.Job
	return schemas.JobRef{JobID: j.JobID, VmID: t.key, Account: j.Account, JobType: j.JobType, Origin: j.Origin, At: t.ms}
}

// command handles one record of vm.commands.v1.
func (t *tx) command(a *action, c schemas.VmCommand, v any) {
	name := a.name
	if t.key == "" {
		t.key = c.VmID
	}
	ref := t.refOf(name, c)
	if c.CommandID == "" {
		t.reject(ref, c.Caller, schemas.CodeInvalid, "command_id is empty", nil)
		return
	}
	if t.s == nil {
		if name != ActDeploy {
			t.reject(ref, c.Caller, schemas.CodeNotFound, "no VM "+t.key, nil)
			return
		}
		if reason, detail := deployRefused(v.(*schemas.Deploy)); reason != "" {
			t.reject(ref, c.Caller, reason, detail, nil)
			return
		}
		t.create(v.(*schemas.Deploy))
		t.event(&schemas.JobAccepted{JobRef: ref, Caller: c.Caller})
		t.startJob(a, c, v)
		return
	}
	if t.known(c.CommandID) {
		// The job of this command id exists (running, queued or finished):
		// the repeat changes nothing.
		return
	}
	running := t.s.Job.JobID != ""
	switch {
	case name == ActDeploy:
		t.reject(ref, c.Caller, schemas.CodeAlreadyExists, "VM "+t.key+" already exists", nil)
	case name == ActTerminate:
		t.terminate(ref, c, v)
	case running:
		payload, err := schemas.Marshal(v)
		if err != nil {
			t.reject(ref, c.Caller, schemas.CodeInvalid, fmt.Sprintf("queue %s: %v", name, err), nil)
			return
		}
		t.s.Rare.Queue = append(t.s.Rare.Queue, schemas.QueuedCommand{Type: name, CommandID: c.CommandID, Payload: payload})
		t.event(&schemas.JobAccepted{JobRef: ref, Queued: true, Position: int32(len(t.s.Rare.Queue)), Caller: c.Caller})
	case !IsAllowed(name, t.s.VmState, t.s.Rare.TaskState):
		t.reject(ref, c.Caller, schemas.CodeInvalidState, fmt.Sprintf("%s is not allowed while the VM is %s", Snake(name), t.s.VmState),
			AllowedActions(t.s.VmState, t.s.Rare.TaskState))
	case t.refused(a, ref, c.Caller, v):
	default:
		t.event(&schemas.JobAccepted{JobRef: ref, Caller: c.Caller})
		t.startJob(a, c, v)
	}
}

// known reports whether a command id already has a job: running, queued or
// among the recent ones.
func (t *tx) known(id string) bool {
	if t.s.Job.JobID == id {
		return true
	}
	for _, q := range t.s.Rare.Queue {
		if q.CommandID == id {
			return true
		}
	}
	for _, r := range t.s.Recent {
		if r.JobID == id {
			return true
		}
	}
	return false
}

func (t *tx) remember(id, outcome string) {
	t.s.Recent = append(t.s.Recent, schemas.RecentJob{JobID: id, State: outcome})
	if n := len(t.s.Recent); n > recentJobs {
		t.s.Recent = append([]schemas.RecentJob(nil), t.s.Recent[n-recentJobs:]...)
	}
}

func (t *tx) reject(ref schemas.JobRef, caller schemas.Caller, reason, detail string, allowed []string) {
	t.event(&schemas.JobRejected{JobRef: ref, Reason: reason, Detail: detail, AllowedActions: allowed, Caller: caller})
	if t.s != nil && ref.JobID != "" {
		t.remember(ref.JobID, outcomeRejected)
	}
}

// refused rejects a command its row's check refuses in the VM's state; it
// reports whether it did.
func (t *tx) refused(a *action, ref schemas.JobRef, caller schemas.Caller, v any) bool {
	if a.check == nil {
		return false
	}
	reason, detail := a.check(t.s, v)
	if reason == "" {
		return false
	}
	t.reject(ref, caller, reason, detail, AllowedActions(t.s.VmState, t.s.Rare.TaskState))
	return true
}

// terminate never queues: it cancels the running job and every queued one,
// then runs.
func (t *tx) terminate(ref schemas.JobRef, c schemas.VmCommand, v any) {
	// The jobs it cancels end before it is accepted: the journal never
	// shows a VM with two jobs running.
	by := "terminate job " + c.CommandID
	why := "Cancelled by " + by
	if j := t.s.Job; j.JobID != "" {
		// What it claimed goes back now: the terminate may itself fail,
		// and a migration's destination would stay claimed for good
		// (found by the simulation, seed 216). Not the claim of a host
		// that may be starting the VM: a StartVm sent and not known to
		// have failed may have run, and a terminate that fails leaves
		// the VM there, in Error with its claim, as a start's cleanup
		// does (found by the simulation, seed 3592: the VM ran with no
		// claim, and the host was filled beyond its capacity).
		// A migration under way may have moved the VM: both of its
		// hosts keep their claims, and the terminate destroys the VM on
		// both (maybeon.go; found by the simulation, seed 49624; seed
		// 89383: a report had already placed the VM on the destination,
		// and the source's claim stayed).
		moving := j.Phase == phaseMigrating || j.Phase == phaseSettling
		if moving {
			t.mayBeOn(j.Params[paramSource])
			t.mayBeOn(j.Params[paramDest])
		}
		mayRun := (startPhase(j.Phase) || j.Phase == phaseCleanup) && j.Wait.Kind == waitAnswer && j.Wait.HostID != ""
		if !mayRun && !moving {
			t.releaseHeld()
		}
		t.endJob(outcomeCancelled, &schemas.JobCancelled{JobRef: t.jobRef(), Reason: why, VmState: t.s.VmState, StartedAt: t.s.Job.StartedAt,
			By: by, Step: j.Seq, TaskState: t.s.Rare.TaskState}, why, false)
	}
	for _, q := range t.s.Rare.Queue {
		qref := t.queuedRef(q)
		t.event(&schemas.JobCancelled{JobRef: qref, Reason: why, VmState: t.s.VmState, StartedAt: qref.At, By: by})
		t.remember(q.CommandID, outcomeCancelled)
	}
	t.s.Rare.Queue = nil
	t.event(&schemas.JobAccepted{JobRef: ref, Caller: c.Caller})
	t.startJob(actionByName[ActTerminate], c, v)
}

// startJob makes a command the VM's running job: a new epoch, a deadline,
// and the flow's first steps.
func (t *tx) startJob(a *action, c schemas.VmCommand, v any) {
	account := c.Account
	if account == "" {
		account = t.s.Account
	}
	t.s.Epoch++
	t.s.Rare.HAAwaitsCheck = false
	*t.s.Job = schemas.JobState{
		JobID:      c.CommandID,
		JobType:    a.name,
		Origin:     originOf(c),
		Account:    account,
		StartedAt:  t.ms,
		Deadline:   t.ms + t.cfg.JobTimeout.Milliseconds(),
		LastStepAt: t.ms,
		NextWake:   t.ms + t.cfg.WakeupInterval.Milliseconds(),
		Params:     a.jobParams(v),
	}
	a.flow.start(t, v)
}

// startNext starts queued commands until one runs or the queue is empty. A
// queued command is checked against the VM's state when its turn comes.
func (t *tx) startNext() {
	for len(t.s.Rare.Queue) > 0 && t.s.Job.JobID == "" {
		q := t.s.Rare.Queue[0]
		t.s.Rare.Queue = t.s.Rare.Queue[1:]
		v, err := schemas.Unmarshal(q.Payload)
		a, c, ok := commandOf(v)
		if err != nil || !ok {
			ref := schemas.JobRef{JobID: q.CommandID, VmID: t.key, JobType: q.Type, Origin: schemas.OriginAPI, At: t.ms}
			t.event(&schemas.JobFailed{JobRef: ref, Reason: schemas.CodeInternal, Detail: fmt.Sprintf("decode queued %s: %v", q.Type, err), VmState: t.s.VmState, StartedAt: ref.At})
			t.remember(q.CommandID, outcomeFailed)
			continue
		}
		if !IsAllowed(a.name, t.s.VmState, "") {
			t.reject(t.refOf(a.name, c), c.Caller, schemas.CodeInvalidState,
				fmt.Sprintf("%s is not allowed while the VM is %s", Snake(a.name), t.s.VmState), AllowedActions(t.s.VmState, ""))
			continue
		}
		if t.refused(a, t.refOf(a.name, c), c.Caller, v) {
			continue
		}
		t.startJob(a, c, v)
	}
	if len(t.s.Rare.Queue) == 0 {
		t.s.Rare.Queue = nil
	}
}

// endJob ends the running job with its end event; the VM rests in a
// stationary state (task_state empty). next starts the queued commands.
func (t *tx) endJob(outcome string, ev any, reason string, next bool) {
	if outcome != outcomeCancelled && t.cancelRequested() {
		// A cancelled job that ends as its flow ends it: the end says who
		// cancelled it and what its command did (cancel.go).
		outcome, ev = outcomeCancelled, t.cancelledEnd(ev, reason)
		reason = fmt.Sprintf("job %s cancelled by %s", t.s.Job.JobID, t.s.Job.Params[paramCancelBy])
	}
	id := t.s.Job.JobID
	t.remember(id, outcome)
	*t.s.Job = schemas.JobState{}
	t.s.Rare.TaskState = ""
	t.changed(id, reason)
	t.event(ev)
	if next {
		t.startNext()
	}
}

func (t *tx) succeed(text string) {
	t.endJob(outcomeSucceeded, &schemas.JobSucceeded{JobRef: t.jobRef(), VmState: t.s.VmState, StartedAt: t.s.Job.StartedAt}, text, true)
}

// placesVm reports whether the flow's jobs claim capacity through
// placement, and so settle the VM's claims when they end.
func (f flow) placesVm() bool { return f.holds != nil || f.releaseOnFail != nil }

// fail ends the running job with JobFailed, releases the capacity it holds
// and puts the VM in the stationary state matching the last power report.
// follow is set when a power report caused the failure: the VM then follows
// that report.
func (t *tx) fail(reason, detail string, follow bool) {
	t.failAs(t.failState(follow), reason, detail)
}

// releaseHeld releases what the running job may hold and will not keep:
// its flow's releaseOnFail, or every claim when it holds a placement.
func (t *tx) releaseHeld() {
	j := *t.s.Job
	f := flowOf(j.JobType)
	if f.undo != nil {
		f.undo(t)
	}
	switch {
	case t.keepClaims:
	case t.releasedAll:
		// Every claim of the VM is released already.
	case f.releaseOnFail != nil:
		f.releaseOnFail(t)
	case f.holds != nil && f.holds(j):
		t.release("")
	}
}

// failAs is fail with the state the VM rests in given.
func (t *tx) failAs(state, reason, detail string) {
	j := *t.s.Job
	f := flowOf(j.JobType)
	t.releaseHeld()
	t.s.VmState = state
	if s := t.s; t.claimGone && holdsCapacity(state) && s.HostID != "" {
		// The job gave back the claim on the VM's host, but the VM rests
		// there in a state that holds capacity (a Deploy whose guest was
		// paused behind its back; an in-place resize whose stop went
		// unanswered, the VM's power unknown): the claim there comes
		// back, whether or not it fits (found by the simulation, seed
		// 1572: the VM ran on with no claim, and nothing counted it again;
		// seed 37721: the same after the resize, through a Rescue).
		t.adopt(s.HostID)
	}
	ref := t.jobRef()
	if f.failed != nil && !t.cancelRequested() {
		// A cancelled job is not retried (an HA restart). Before endJob, so a retry is scheduled ahead of queued commands
		// that endJob starts (they win: a retry finds a job running).
		f.failed(t)
	}
	t.endJob(outcomeFailed, &schemas.JobFailed{JobRef: ref, Reason: reason, Detail: detail, VmState: t.s.VmState, StartedAt: j.StartedAt},
		fmt.Sprintf("job %s failed: %s", j.JobID, reason), true)
}

func (t *tx) failState(follow bool) string {
	s := t.s
	p := s.PowerState
	if follow {
		if st := stationaryFor(p); st != "" {
			return st
		}
	}
	if s.VmState == StateBuilding {
		// A VM that never reached Active is in Error unless a host says it
		// runs.
		if onHost(p) {
			return stationaryFor(p)
		}
		return StateError
	}
	if consistent(s.VmState, p) {
		return s.VmState
	}
	if st := stationaryFor(p); st != "" {
		return st
	}
	return s.VmState
}

// step emits one JobStepped and enters a task state.
func (t *tx) step(task, name, text string, obj map[string]any) {
	j := t.s.Job
	j.Seq++
	j.LastStepAt = t.ms
	j.StallAlert = false
	t.s.Rare.TaskState = task
	if obj == nil {
		obj = map[string]any{}
	}
	if a := actionByName[j.JobType]; a != nil && a.plan > 0 {
		// The steps before this one are done; its end does the rest.
		obj["done"], obj["total"] = j.Seq-1, max(a.plan, j.Seq)
	}
	b, err := json.Marshal(obj)
	if err != nil {
		b = []byte("{}")
	}
	t.event(&schemas.JobStepped{JobRef: t.jobRef(), Seq: j.Seq, TaskState: task, Step: name, Text: text, Obj: string(b)})
	t.changed(j.JobID, text)
}

// nextID is the id of a request or agent command sent by the next step:
// the job id and that step's number, so a replay derives the same id.
func (t *tx) nextID() string {
	return schemas.BoundID(fmt.Sprintf("%s-%d", t.s.Job.JobID, t.s.Job.Seq+1))
}

func (t *tx) currentID() string {
	return schemas.BoundID(fmt.Sprintf("%s-%d", t.s.Job.JobID, t.s.Job.Seq))
}

// requestPlacement sends PlaceVm (id from the step just emitted) and joins
// on the decision. host is preferred, or required when required is set.
func (t *tx) requestPlacement(host string, required bool) {
	s := t.s
	id := t.currentID()
	t.emit(schemas.TopicPlacementRequests, s.ZoneID, &schemas.PlaceVm{
		RequestID: id, VmID: s.VmID, ZoneID: s.ZoneID, Account: s.Account, Epoch: s.Epoch,
		Offering: s.Offering, HostID: host, HostRequired: required, AffinityGroup: s.Rare.AffinityGroup, At: t.ms,
		Volumes: placedVolumes(s), Nics: nicsOf(s), StorageTags: storageOf(s).StorageTags,
	})
	s.Job.Phase = phasePlacing
	s.Job.Wait = schemas.JobWait{Kind: waitPlacement, RequestID: id, Deadline: s.Job.Deadline}
}

// release frees the VM's placement on host (every host for "").
func (t *tx) release(host string) {
	s := t.s
	if s.ZoneID == "" {
		return
	}
	if host == "" {
		if t.releasedAll {
			return // this transaction released every claim already
		}
		t.releasedAll = true
	}
	if host == "" || host == s.HostID {
		t.claimGone = true // an adopt sent before is undone
	}
	id := schemas.BoundID(s.Job.JobID + "-release")
	if s.Job.JobID == "" {
		id = schemas.BoundID(fmt.Sprintf("%s-release-%d", s.VmID, t.ms))
	}
	rel := &schemas.ReleaseVm{RequestID: id, VmID: s.VmID, ZoneID: s.ZoneID, HostID: host, At: t.ms}
	if host == "" {
		// A decision the VM never took (its job ended first) claimed
		// pools and addresses the record does not know: what the record
		// holds unplaced goes too (found by the simulation, seed 4).
		rel.Nics = unaddressed(s)
		if ids := unplacedVolumes(s); len(ids) > 0 {
			t.emit(schemas.TopicPlacementRequests, s.ZoneID, &schemas.ReleaseVm{RequestID: schemas.BoundID(id + "-volumes"),
				VmID: s.VmID, ZoneID: s.ZoneID, VolumeIDs: ids, At: t.ms})
		}
	}
	t.emit(schemas.TopicPlacementRequests, s.ZoneID, rel)
	t.notOn(host)
}

// callAgent sends an agent command (id from the step just emitted) and
// joins on its answer and, when power is set, on that power report.
func (t *tx) callAgent(phase, host, power string) {
	s := t.s
	id := t.currentID()
	s.Job.Phase = phase
	s.Job.Wait = schemas.JobWait{Kind: waitAnswer, RequestID: id, HostID: host, Power: power,
		Deadline: t.ms + t.cfg.ResendAfter.Milliseconds()}
	t.sendAgent(phase, id, host)
}

// sendAgent sends the agent command that phase of the running job sends,
// with id, to host, the host the job waits on.
func (t *tx) sendAgent(phase, id, host string) {
	s := t.s
	a, ok := actionByName[s.Job.JobType]
	if !ok || a.sends[phase] == nil {
		return
	}
	// The command expires with its job: an agent that reads it after the
	// job timed out must not carry it out behind the job's back.
	ac := schemas.AgentCommand{CommandID: id, HostID: host, VmID: s.VmID, Epoch: s.Epoch, JobID: s.Job.JobID, IssuedAt: t.ms,
		ExpiresAt: s.Job.Deadline}
	v := a.sends[phase](t, &ac)
	t.emit(schemas.TopicAgentCommands, ac.HostID, v)
}

// params returns the running job's parameters, made when it has none.
func (t *tx) params() map[string]string {
	j := t.s.Job
	if j.Params == nil {
		j.Params = map[string]string{}
	}
	return j.Params
}

// graceDeadline is the deadline of a timed-out job's last look at its
// host (a cleanup, a settling): three resend intervals from now.
func (t *tx) graceDeadline() int64 { return t.ms + 3*t.cfg.ResendAfter.Milliseconds() }

// advance ends the job's wait and lets its flow go on.
func (t *tx) advance() {
	t.s.Job.Wait = schemas.JobWait{}
	if t.cancelRequested() {
		t.advanceCancelled()
		return
	}
	flowOf(t.s.Job.JobType).advance(t)
}

// answer wakes a job waiting on this agent command of the current epoch;
// any other answer is stale and ignored.
func (t *tx) answer(a *schemas.AgentAnswer) {
	if a.CommandType == typeCheckVm {
		t.checkAnswered(a)
		return
	}
	if a.PowerHost != "" && a.ReportSeq > 0 {
		// The answer read the VM's power under this sequence: a report of
		// that host taken before it is older, whatever it arrives after.
		// The report sent with the answer shares its sequence and counts.
		t.seenUpTo(a.PowerHost, a.ReportSeq-1)
	}
	j := t.s.Job
	w := &j.Wait
	if a.Epoch < t.s.Epoch {
		t.s.StaleIgnored++
		return
	}
	if j.JobID != "" && j.Phase == phaseSettling {
		t.moveAnswered(a)
		return
	}
	if j.JobID == "" || w.Kind != waitAnswer || w.Answered || a.CommandID != w.RequestID || a.Epoch != t.s.Epoch {
		return
	}
	if j.Phase == phaseCleanup {
		t.cleanupAnswered(a)
		return
	}
	if !a.OK {
		if a = t.failedAnswer(a); a == nil {
			return
		}
	}
	w.Answered = true
	if startPhase(j.Phase) {
		t.volumesReady() // the StartVm made their files
	}
	p := t.params()
	p[paramAnsweredAt] = strconv.FormatInt(a.AnsweredAt, 10)
	if a.PowerState != "" {
		p[paramAnsweredPower] = a.PowerState
	}
	if w.Power == "" || w.Reported {
		t.advance()
	}
}

// failedAnswer applies a failed answer to the running job's command. It
// returns the answer to go on with as ok when the job's goal is reached
// all the same, or nil once the answer is dealt with.
func (t *tx) failedAnswer(a *schemas.AgentAnswer) *schemas.AgentAnswer {
	j := t.s.Job
	w := &j.Wait
	if (startPhase(j.Phase) || j.Phase == phaseMigrating) && onHost(a.PowerState) && a.PowerHost == w.HostID {
		// The StartVm was refused (expired, say), or the MigrateVm failed
		// (the VM is no longer on the source), but the VM runs on the
		// host the job wants it on: an earlier delivery did it, and only
		// that answer was lost (found by the simulation, seed 1226: the
		// failed job released the claim of a VM that ran; seed 56443: a
		// failed migration released the destination the VM had moved to,
		// and HA later started a second copy on the source). The job's
		// goal is reached; it goes on as after an ok answer.
		return &schemas.AgentAnswer{CommandID: a.CommandID, HostID: a.HostID, OK: true, PowerState: a.PowerState, AnsweredAt: a.AnsweredAt}
	}
	if a.AnsweredAt != 0 && a.AnsweredAt >= j.Deadline {
		// Refused as expired (read after the job's deadline): that
		// reading did nothing, but an earlier one, whose answer an agent
		// restarted without its answers has lost, may have. It is no
		// answer; the job times out as if none had come, and a start is
		// cleaned up (found by the simulation, seed 7026: the Deploy
		// failed on the refusal and released the claim of a VM an
		// earlier delivery had started).
		return nil
	}
	if f := flowOf(j.JobType); f.answerFailed != nil {
		f.answerFailed(t, a)
		return nil
	}
	t.fail(schemas.CodeAgentError, fmt.Sprintf("%s on host %s: %s", a.CommandType, a.HostID, a.Error), false)
	return nil
}

func (t *tx) placementDecided(d *schemas.PlacementDecided) {
	s := t.s
	if t.adopted(d) {
		return
	}
	if s.Job.JobID == "" || s.Job.Wait.Kind != waitPlacement || d.RequestID != s.Job.Wait.RequestID || d.Epoch != s.Epoch {
		if d.Epoch < s.Epoch {
			s.StaleIgnored++
		}
		return
	}
	// The pools and addresses are the VM's from now on, wherever the
	// flow takes it: placement claimed them for it.
	t.placedStorage(d)
	if f := flowOf(s.Job.JobType); f.placed != nil {
		f.placed(t, d)
		return
	}
	s.HostID, s.PodID, s.ClusterID = d.HostID, d.PodID, d.ClusterID
	t.advance()
}

func (t *tx) placementFailed(f *schemas.PlacementFailed) {
	s := t.s
	if s.Job.JobID == "" || s.Job.Wait.Kind != waitPlacement || f.RequestID != s.Job.Wait.RequestID || f.Epoch != s.Epoch {
		return
	}
	// Nothing was allocated, so there is nothing to release. The detail
	// names the filters that excluded the hosts, for the job's reader.
	s.Job.Phase = ""
	detail := f.Reason
	if f.Detail != "" {
		detail = f.Reason + ": " + f.Detail
	}
	t.fail(schemas.CodePlacementFailed, detail, false)
}

// wakeJob hands a power report from host to the running job.
func (t *tx) wakeJob(host, power string, at int64) {
	w := &t.s.Job.Wait
	if t.s.Job.Phase == phaseSettling {
		t.moveReported(host, power, at)
		return
	}
	if t.strayHost(host, power) {
		j := *t.s.Job
		// Claimed before the job's own release and before a queued job's
		// PlaceVm, which placement then handles in that order.
		t.adopt(host)
		t.fail(schemas.CodeUnexpectedHost, fmt.Sprintf("the VM runs on host %s, neither the source %s nor the destination %s",
			host, j.Params[paramSource], j.Params[paramDest]), true)
		return
	}
	if w.Kind != waitAnswer || w.Power == "" || host != w.HostID {
		return
	}
	if power == w.Power {
		w.Reported = true
		if at != 0 && t.s.Job.Phase == phaseMigrating {
			t.params()[paramReportedAt] = strconv.FormatInt(at, 10) // moveDone
		}
		if w.Answered {
			t.advance()
		}
		return
	}
	w.Reported = false
	if !w.Answered || power == schemas.PowerUnknown {
		// Before the agent answered, the old power state is what to expect.
		return
	}
	if answered, err := strconv.ParseInt(t.s.Job.Params[paramAnsweredAt], 10, 64); err == nil && at != 0 && at < answered {
		// Observed before the command took effect; a report crossing the
		// answer on another topic, not a contradiction.
		return
	}
	t.fail(schemas.CodeUnexpectedPowerState, fmt.Sprintf("host %s reported %s, expected %s", host, power, w.Power), true)
}

// tickJob runs the running job's timers.
func (t *tx) tickJob() {
	j := t.s.Job
	id := j.JobID
	if t.ms >= j.Deadline {
		why := fmt.Sprintf("no end within %s (phase %s)", t.cfg.JobTimeout, j.Phase)
		switch {
		case j.Phase == phaseCleanup:
			t.staleBefore(j.Deadline)
			t.cleanupTimedOut()
		case j.Phase == phaseSettling:
			t.staleBefore(j.Deadline)
			t.settleTimedOut()
		case t.cleanUpStart(why), t.settleMove(why):
		case t.answeredAtDeadline(why):
		default:
			if j.Wait.Kind == waitAnswer && !j.Wait.Answered {
				t.staleBefore(j.Deadline)
				if mayPowerOn[j.JobType] && !onHost(t.s.PowerState) {
					// The command may have started the VM after the last
					// report, which found it off: the VM keeps its state,
					// its power unknown until a report taken after the
					// deadline, rather than going Stopped and giving its
					// claim back (found by the simulation, seed 6541: a
					// Rescue timed out on a PowerOff taken before the
					// rescue booted the VM, and the next Start ran a
					// second copy elsewhere).
					t.lostTrack()
				}
			}
			t.fail(schemas.CodeTimeout, why, false)
		}
		return
	}
	if !j.StallAlert && t.ms-j.LastStepAt >= t.cfg.StallThreshold.Milliseconds() {
		j.StallAlert = true
		t.alert("JobStalled", fmt.Sprintf("%s-stalled-%d", id, j.Seq), j.Wait.HostID, id,
			fmt.Sprintf("job %s (%s) has had no step for %s (phase %s)", id, j.JobType, time.Duration(t.ms-j.LastStepAt)*time.Millisecond, j.Phase))
	}
	w := &j.Wait
	if w.Kind == waitAnswer && !w.Answered && w.Deadline != 0 && t.ms >= w.Deadline {
		t.sendAgent(j.Phase, w.RequestID, w.HostID)
		w.Deadline = t.ms + t.cfg.ResendAfter.Milliseconds()
	}
	if w.Kind == waitAnswer && w.Answered && (w.Power == "" || w.Reported) {
		t.advance()
	}
	if t.s.Job.JobID == id {
		t.s.Job.NextWake = min(t.ms+t.cfg.WakeupInterval.Milliseconds(), t.s.Job.Deadline)
	}
}

// answeredAtDeadline ends a job whose command was answered ok and whose
// confirming report is all that is missing at its deadline: the answer
// read the VM's power after the command, later than any report so far
// (answer), so the VM takes that power. When it is the one the job waits
// for the job ends as done; otherwise it fails and the VM follows it. It
// reports whether it ended the job (found by the simulation, seed 66797:
// an Unrescue answered PowerOn timed out on an older PowerOff report, the
// VM went Stopped, and the next Start ran a second copy elsewhere).
func (t *tx) answeredAtDeadline(why string) bool {
	j := t.s.Job
	w := j.Wait
	p := j.Params[paramAnsweredPower]
	if w.Kind != waitAnswer || !w.Answered || p == "" || p == schemas.PowerUnknown || w.HostID == "" {
		return false
	}
	t.s.PowerState, t.s.PowerHost = p, w.HostID
	if p == w.Power {
		t.advance()
	} else {
		t.fail(schemas.CodeTimeout, why+"; the agent answered "+p, true)
	}
	return true
}

// staleBefore marks the reports taken before until stale. A job that
// times out while an agent command it sent is unanswered: the command may
// still be carried out until it expires (until, the deadline its job gave
// it), so a report taken earlier may show the VM as it was before (found
// by the simulation, seed 13848: a RescueVm ran, its answer came late, the
// job timed out, and a PowerOff report taken before it ran stopped the VM
// and released its claim while it ran). A migration that ended as done:
// its source's reports taken before the move may still be on their way
// (seed 13324: one made the VM follow back to its source).
func (t *tx) staleBefore(until int64) {
	t.s.Rare.ReportsAfter = max(t.s.Rare.ReportsAfter, until)
}

func (t *tx) alert(kind, id, host, job, msg string) {
	t.event(&schemas.AlertRaised{AlertID: schemas.BoundID(id), Kind: kind, VmID: t.s.VmID, HostID: host, Account: t.s.Account, JobID: job, Message: msg, At: t.ms})
}

// saturatingInc adds one without wrapping, for counters that may run long.
func saturatingInc(n int32) int32 {
	if n == math.MaxInt32 {
		return n
	}
	return n + 1
}
