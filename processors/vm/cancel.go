package vm

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/vmplane/vmplane/schemas"
)

// A job cancelled by a CancelJob (docs/design.md §5.3). A queued job leaves
// the queue. A running job stops at its next safe point: before it sends
// an agent command. One that waits for placement stops at once, rolled
// back as a failure there would be (what placement may claim for it is
// released, the VM rests in the state its power matches). One whose agent
// command is out cannot take it back: the command may run, or have run, and
// a job that forgot it would leave a guest or a claim behind. It is marked
// (paramCancelBy) and waits for the answer, or its deadline, as any job
// does; what the command did then stands. When the job would end there, it
// ends as it would have, as cancelled (a migration whose MigrateVm moved
// the VM leaves it on the destination); when it would go on to its next
// command, it stops there instead, rolled back as a failure there would
// be. Terminate cannot be cancelled: it is the way out of every job.

// Job parameters of a cancel that waits for the job's agent command: who
// asked, and the job's step and task state when they did.
const (
	paramCancelBy   = "cancel_by"
	paramCancelStep = "cancel_step"
	paramCancelTask = "cancel_task"
	// paramCancelWhy is the reason the caller gave, when it gave one.
	paramCancelWhy = "cancel_why"
)

// reasonCancelled is the failure a cancel stops a job with; endJob turns
// it into JobCancelled.
const reasonCancelled = schemas.CodeCancelled

// cancelJob applies a CancelJob to the VM's queue or its running job. A
// job it does not find (finished, or never this VM's) and a repeated
// cancel change nothing: the gateway answers those before it writes one.
func (t *tx) cancelJob(c *schemas.CancelJob) {
	s := t.s
	by := c.By
	if by == "" {
		by = "account " + c.Account
	}
	if i := slices.IndexFunc(s.Rare.Queue, func(q schemas.QueuedCommand) bool { return q.CommandID == c.JobID }); i >= 0 {
		q := s.Rare.Queue[i]
		s.Rare.Queue = slices.Delete(s.Rare.Queue, i, i+1)
		if len(s.Rare.Queue) == 0 {
			s.Rare.Queue = nil
		}
		ref := t.queuedRef(q)
		t.event(&schemas.JobCancelled{JobRef: ref, Reason: "Cancelled by " + by, VmState: s.VmState, StartedAt: ref.At, By: by,
			Detail: fmt.Sprintf("removed from the VM's queue at position %d; it never ran", i+1) + saying(c.Reason)})
		t.remember(q.CommandID, outcomeCancelled)
		return
	}
	j := s.Job
	if c.JobID == "" || j.JobID != c.JobID || j.JobType == ActTerminate || j.Params[paramCancelBy] != "" {
		return
	}
	p := t.params()
	p[paramCancelBy] = by
	if c.Reason != "" {
		p[paramCancelWhy] = c.Reason
	}
	if j.Wait.Kind != waitAnswer && j.Phase != phaseSettling {
		t.fail(reasonCancelled, "stopped before it sent an agent command", false)
		return
	}
	p[paramCancelStep] = strconv.Itoa(int(j.Seq))
	p[paramCancelTask] = s.Rare.TaskState
	cmd := j.Wait.RequestID
	if cmd == "" {
		cmd = j.Params[paramCommand] // a migration that settles
	}
	if j.Phase == phaseMigrating && j.Wait.Kind == waitAnswer {
		t.step(s.Rare.TaskState, "cancel", fmt.Sprintf("cancel requested by %s: live migration %s is out, so its agent is asked to abort it, and the job stops after its answer", by, cmd),
			map[string]any{"by": by, "command_id": cmd, "step": j.Seq})
		t.abortMigration(cmd)
		return
	}
	t.step(s.Rare.TaskState, "cancel", fmt.Sprintf("cancel requested by %s: agent command %s is out, so the job waits for its answer and stops after it", by, cmd),
		map[string]any{"by": by, "command_id": cmd, "step": j.Seq})
}

// abortMigration asks the source's agent to abort the live migration of
// the MigrateVm cmd (the cancel step's id is the abort's): aborted, the
// MigrateVm is answered failed and the VM stays on its source, as a
// migration that fails; ended before the abort, it has moved the VM, and
// the job says so when the answer comes.
func (t *tx) abortMigration(cmd string) {
	s, j := t.s, t.s.Job
	src := j.Params[paramSource]
	t.emit(schemas.TopicAgentCommands, src, &schemas.AbortMigrateVm{AgentCommand: schemas.AgentCommand{
		CommandID: t.currentID(), HostID: src, VmID: s.VmID, Epoch: s.Epoch, JobID: j.JobID, IssuedAt: t.ms,
		ExpiresAt: j.Deadline}, MigrateCommandID: cmd})
}

// cancelRequested reports whether the running job waits to stop.
func (t *tx) cancelRequested() bool { return t.s.Job.Params[paramCancelBy] != "" }

// advanceCancelled takes the answer a cancelled job waited for. When the
// flow ends the job on it, the job ends so, as cancelled (endJob); when the
// flow would send its next command, that is the job's next safe point: it
// stops there, rolled back as a failure there would be.
func (t *tx) advanceCancelled() {
	id := t.s.Job.JobID
	saved := *t
	saved.s = clone(t.s)
	saved.out = slices.Clone(t.out)
	flowOf(t.s.Job.JobType).advance(t)
	if t.s.Job.JobID != id {
		return
	}
	*t = saved
	t.fail(reasonCancelled, "stopped after its agent command was answered, before the next one", false)
}

// cancelledEnd is the JobCancelled that ends a cancelled job instead of ev,
// its JobSucceeded or JobFailed; text is what the flow said of the end.
func (t *tx) cancelledEnd(ev any, text string) *schemas.JobCancelled {
	j := t.s.Job
	by := j.Params[paramCancelBy]
	step, task := j.Seq, t.s.Rare.TaskState
	if n, err := strconv.Atoi(j.Params[paramCancelStep]); err == nil {
		step, task = int32(n), j.Params[paramCancelTask]
	}
	var detail string
	switch e := ev.(type) {
	case *schemas.JobSucceeded:
		detail = "its agent command was out when the cancel came and was carried out, which a cancel cannot undo: " + text
	case *schemas.JobFailed:
		detail = e.Detail
		if e.Reason != reasonCancelled {
			detail = "its agent command was out when the cancel came; the job then failed as it would have (" + e.Reason + ": " + e.Detail + ")"
		}
	}
	where := "the VM is " + t.s.VmState
	if t.s.HostID != "" {
		where += " on host " + t.s.HostID
	}
	return &schemas.JobCancelled{JobRef: t.jobRef(), Reason: "Cancelled by " + by, VmState: t.s.VmState, StartedAt: j.StartedAt,
		By: by, Step: step, TaskState: task, Detail: detail + "; " + where + saying(j.Params[paramCancelWhy])}
}

// saying is the reason a caller gave for a cancel, as the end of a detail.
func saying(why string) string {
	if why == "" {
		return ""
	}
	return "; the caller said: " + why
}

// queuedRef is the JobRef of a queued command.
func (t *tx) queuedRef(q schemas.QueuedCommand) schemas.JobRef {
	if v, err := schemas.Unmarshal(q.Payload); err == nil {
		if a, c, ok := commandOf(v); ok {
			return t.refOf(a.name, c)
		}
	}
	return schemas.JobRef{JobID: q.CommandID, VmID: t.key, JobType: q.Type, Origin: schemas.OriginAPI, At: t.ms}
}
