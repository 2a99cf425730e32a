package vm

import (
	"github.com/vmplane/vmplane/schemas"
)

// Stop powers a VM off (force: at once instead of a guest shutdown). It
// succeeds, Stopped, on the agent's ok answer and a PowerOff report from the
// host, in either order, and then releases the VM's capacity. host_id is
// kept as the last host, which a later Start prefers.
func stopFlow() flow { return flow{start: stopStart, advance: stopAdvance} }

// stopVm powers the VM off as the Stop asked.
func stopVm(t *tx, ac *schemas.AgentCommand) any {
	return &schemas.StopVm{AgentCommand: *ac, Force: t.s.Job.Params["force"] == "true"}
}

// forceStopVm powers the VM off at once: a VM about to be destroyed, or
// restarted with another size, has no use for a guest shutdown.
func forceStopVm(_ *tx, ac *schemas.AgentCommand) any {
	return &schemas.StopVm{AgentCommand: *ac, Force: true}
}

func stopStart(t *tx, _ any) {
	s := t.s
	force := s.Job.Params["force"] == "true"
	if s.HostID == "" {
		// Nothing runs anywhere: the VM is off already.
		t.step(TaskStopping, "stop", "the VM has no host; nothing to power off", nil)
		s.VmState = StateStopped
		t.succeed("the VM has no host")
		return
	}
	t.step(TaskStopping, "stop", "stopping the VM on host "+s.HostID,
		map[string]any{"host_id": s.HostID, "command_id": t.nextID(), "epoch": s.Epoch, "force": force})
	t.callAgent(phaseStopping, s.HostID, schemas.PowerOff)
}

func stopAdvance(t *tx) {
	s := t.s
	s.VmState = StateStopped
	t.release(s.HostID)
	t.succeed("the VM is off on host " + s.HostID)
}
