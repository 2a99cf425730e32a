package vm

import (
	"github.com/vmplane/vmplane/schemas"
)

// Start powers on a Stopped VM. Stop released its capacity, so it asks
// placement again (Scheduling), on the host asked for (failing when
// placement refuses it) or else preferring the last host, then starts it there (Starting). It succeeds, Active, on the
// agent's ok answer and a PowerOn report from that host, in either order.
func startFlow() flow { return flow{start: startStart, advance: startAdvance, holds: holdsPlacement} }

// startVm powers the VM on with the size the job runs it at.
func startVm(t *tx, ac *schemas.AgentCommand) any {
	size := t.sizeNow()
	return &schemas.StartVm{AgentCommand: *ac, Name: t.s.Name, CPU: size.CPU, MemoryMB: size.MemoryMB,
		Volumes: attachedVolumes(t.s), Nics: nicsOf(t.s)}
}

func startStart(t *tx, _ any) {
	s := t.s
	host := s.Job.Params["host_id"]
	required := host != ""
	if host == "" {
		host = s.HostID
	}
	text := "asking placement for a host in zone " + s.ZoneID
	switch {
	case required:
		text += " on host " + host + " only"
	case host != "":
		text += ", preferring host " + host
	}
	t.step(TaskScheduling, "schedule", text,
		map[string]any{"zone_id": s.ZoneID, "host_id": host, "request_id": t.nextID(), "epoch": s.Epoch})
	t.requestPlacement(host, required)
}

func startAdvance(t *tx) {
	s := t.s
	switch s.Job.Phase {
	case phasePlacing:
		// Volumes made by a recover got their pools just now.
		t.volumesPlaced()
		t.step(TaskStarting, "start", "starting the VM on host "+s.HostID,
			map[string]any{"host_id": s.HostID, "command_id": t.nextID(), "epoch": s.Epoch})
		t.callAgent(phaseStarting, s.HostID, schemas.PowerOn)
	case phaseStarting:
		s.VmState = StateActive
		t.haEnded()
		t.succeed("the VM runs on host " + s.HostID)
	}
}
