package vm

import (
	"fmt"

	"github.com/vmplane/vmplane/schemas"
)

// A simple action is one agent command on the VM's host and the power
// state it leads to: Reboot, Pause, Unpause, Suspend, Resume, Rescue,
// Unrescue, Rebuild, Snapshot, RevertSnapshot, DeleteSnapshot. Its row in
// the action table says all that differs between them: a simpleAction for
// the flow and the agent command of phaseActing.
type simpleAction struct {
	task, step string
	// power is the state the host must report afterwards; "" keeps the
	// VM's (Reboot, Snapshot), and then the ok answer alone ends the job,
	// since a report of the unchanged state proves nothing.
	power string
	// end is the stationary state on success; "" keeps the VM's.
	end  string
	text string
	// done, when set, records what the success changed besides the
	// states (a snapshot taken or deleted), before the job ends.
	done func(t *tx)
}

// simple is the flow of a simple action.
func simple(a simpleAction) flow {
	return flow{
		start:   func(t *tx, _ any) { simpleStart(t, a) },
		advance: func(t *tx) { simpleAdvance(t, a) },
	}
}

// acting is the sends of a simple action.
func acting(c agentCommand) sends { return sends{phaseActing: c} }

func simpleStart(t *tx, a simpleAction) {
	s := t.s
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

func simpleAdvance(t *tx, a simpleAction) {
	s := t.s
	if a.end != "" {
		s.VmState = a.end
	}
	if a.done != nil {
		a.done(t)
	}
	t.succeed(fmt.Sprintf("%s done on host %s", a.step, s.HostID))
}

// The agent commands of the simple actions.

func rebootVm(t *tx, ac *schemas.AgentCommand) any {
	return &schemas.RebootVm{AgentCommand: *ac, Hard: t.s.Job.Params["hard"] == "true"}
}

func pauseVm(_ *tx, ac *schemas.AgentCommand) any   { return &schemas.PauseVm{AgentCommand: *ac} }
func unpauseVm(_ *tx, ac *schemas.AgentCommand) any { return &schemas.UnpauseVm{AgentCommand: *ac} }
func suspendVm(_ *tx, ac *schemas.AgentCommand) any { return &schemas.SuspendVm{AgentCommand: *ac} }
func resumeVm(_ *tx, ac *schemas.AgentCommand) any  { return &schemas.ResumeVm{AgentCommand: *ac} }

func rescueVm(t *tx, ac *schemas.AgentCommand) any {
	return &schemas.RescueVm{AgentCommand: *ac, Image: t.s.Job.Params["image"]}
}

func unrescueVm(_ *tx, ac *schemas.AgentCommand) any { return &schemas.UnrescueVm{AgentCommand: *ac} }

// rebuildVm remakes the root volume of its template, or of the image
// asked for, a template id that becomes the root's template.
func rebuildVm(t *tx, ac *schemas.AgentCommand) any {
	image := t.s.Job.Params["image"]
	return &schemas.RebuildVm{AgentCommand: *ac, Image: image, Volumes: rebuiltVolumes(t.s, image)}
}

// rebuiltVolumes is the VM's attached volumes with the root made of image
// (its own template for "").
func rebuiltVolumes(s *schemas.VmRecord, image string) []schemas.Volume {
	vols := attachedVolumes(s)
	for i := range vols {
		if vols[i].Kind == schemas.VolumeRoot && image != "" {
			vols[i].TemplateID = image
		}
	}
	return vols
}

// rebuilt records the template a rebuild with an image made the root of.
func rebuilt(t *tx) {
	s := t.s
	image := s.Job.Params["image"]
	if image == "" || s.Storage == nil {
		return
	}
	for i := range s.Storage.Volumes {
		if v := &s.Storage.Volumes[i]; v.Kind == schemas.VolumeRoot && v.TemplateID != image {
			v.TemplateID = image
			s.Storage.TemplateID = image
			t.volumeChanged(*v, false)
		}
	}
}
