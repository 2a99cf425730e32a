package vm

import (
	"fmt"

	"github.com/vmplane/vmplane/schemas"
)

// A simple action is one agent command on the VM's host and the power
// state it leads to: Reboot, Pause, Unpause, Suspend, Resume, Rescue,
// Unrescue, Rebuild, Snapshot. The table below is all that differs between
// them.
type simpleAction struct {
	task, step, command string
	// power is the state the host must report afterwards; "" keeps the
	// VM's (Reboot, Snapshot), and then the ok answer alone ends the job,
	// since a report of the unchanged state proves nothing.
	power string
	// end is the stationary state on success; "" keeps the VM's.
	end  string
	text string
}

var simpleActions = map[string]simpleAction{
	ActReboot:   {TaskRebooting, "reboot", "RebootVm", "", "", "rebooting the VM"},
	ActPause:    {TaskPausing, "pause", "PauseVm", schemas.PowerPaused, StatePaused, "pausing the VM"},
	ActUnpause:  {TaskUnpausing, "unpause", "UnpauseVm", schemas.PowerOn, StateActive, "unpausing the VM"},
	ActSuspend:  {TaskSuspending, "suspend", "SuspendVm", schemas.PowerSusp, StateSuspended, "suspending the VM"},
	ActResume:   {TaskResuming, "resume", "ResumeVm", schemas.PowerOn, StateActive, "resuming the VM"},
	ActRescue:   {TaskRescuing, "rescue", "RescueVm", schemas.PowerOn, StateRescued, "booting the VM from a rescue image"},
	ActUnrescue: {TaskUnrescuing, "unrescue", "UnrescueVm", schemas.PowerOn, StateActive, "booting the VM from its own disk again"},
	ActRebuild:  {TaskRebuilding, "rebuild", "RebuildVm", schemas.PowerOn, StateActive, "rebuilding the VM's root disk"},
	ActSnapshot: {TaskSnapshotting, "snapshot", "SnapshotVm", "", "", "taking a snapshot of the VM"},
}

func simpleFlow() flow { return flow{start: simpleStart, advance: simpleAdvance} }

func simpleStart(t *tx, _ any) {
	s := t.s
	a := simpleActions[s.Job.JobType]
	obj := map[string]any{"host_id": s.HostID, "command_id": t.nextID(), "epoch": s.Epoch}
	for k, v := range s.Job.Params {
		obj[k] = v
	}
	power := a.power
	if power == s.PowerState {
		// Already there (rescuing a running VM): a report of it proves
		// nothing about the command, the answer does.
		power = ""
	}
	t.step(a.task, a.step, a.text+" on host "+s.HostID, obj)
	t.callAgent(phaseActing, s.HostID, power)
}

func simpleAdvance(t *tx) {
	s := t.s
	a := simpleActions[s.Job.JobType]
	if a.end != "" {
		s.VmState = a.end
	}
	if s.Job.JobType == ActRebuild && s.VmState == StateRescued {
		s.VmState = StateActive
	}
	t.succeed(fmt.Sprintf("%s done on host %s", a.step, s.HostID))
}
