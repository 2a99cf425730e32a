package vm

import (
	"github.com/vmplane/vmplane/schemas"
)

// Deploy creates the VM in Building, asks placement for a host (Scheduling),
// prepares network and disks (Networking, BlockDeviceMapping) and starts it
// there (Spawning). It succeeds, Active, when the agent answered ok and the
// host reported PowerOn, in either order.
func deployFlow() flow {
	return flow{start: deployStart, placed: deployPlaced, advance: deployAdvance, holds: holdsPlacement}
}

// holdsPlacement: once PlaceVm is sent, placement may have claimed capacity
// for the job, so a failing job releases it.
func holdsPlacement(j schemas.JobState) bool { return j.Phase != "" }

// create makes the state of a VM that a Deploy brings into being.
func (t *tx) create(d *schemas.Deploy) {
	t.s = &schemas.VmRecord{
		VmID:       t.key,
		Name:       d.Name,
		Account:    d.Account,
		ZoneID:     d.ZoneID,
		Offering:   d.Offering,
		HA:         d.HA || d.Offering.HA,
		VmState:    StateBuilding,
		PowerState: schemas.PowerUnknown,
		Job:        &schemas.JobState{},
		CreatedAt:  t.ms,
		UpdatedAt:  t.ms,
		Storage:    deployStorage(t.key, d.Name, d, t.ms),
		Rare:       &schemas.VmRare{AffinityGroup: d.AffinityGroup},
	}
	t.changed(d.CommandID, "created by deploy job "+d.CommandID)
}

func deployStart(t *tx, _ any) {
	text := "asking placement for a host in zone " + t.s.ZoneID
	obj := map[string]any{"zone_id": t.s.ZoneID, "request_id": t.nextID(), "epoch": t.s.Epoch}
	if p := t.s.Offering.DeploymentPlanner; p != "" {
		// The offering as the deploy copied it from the catalog: the
		// journal shows which planner a VM was placed with.
		text += " with " + p
		obj["planner"] = p
	}
	t.step(TaskScheduling, "schedule", text, obj)
	t.requestPlacement("", false)
}

func deployAdvance(t *tx) {
	s := t.s
	switch s.Job.Phase {
	case phasePlacing:
		deploySpawn(t, "")
	case phaseSpawning:
		s.VmState = StateActive
		t.haEnded()
		t.succeed("the VM runs on host " + s.HostID)
	}
}

// deployPlaced takes placement's answer: the VM's host, and the planner
// that chose it, which the spawn step names so that an operator sees which
// planner (the offering's, or the vm.deployment.planner setting's) placed
// the VM.
func deployPlaced(t *tx, d *schemas.PlacementDecided) {
	t.s.HostID, t.s.PodID, t.s.ClusterID = d.HostID, d.PodID, d.ClusterID
	deploySpawn(t, d.Planner)
}

// deploySpawn maps the VM's NICs and disks on its host and starts it there.
func deploySpawn(t *tx, planner string) {
	s := t.s
	deployNetwork(t)
	deployBlockDevices(t)
	text := "starting the VM on host " + s.HostID
	obj := map[string]any{"host_id": s.HostID, "command_id": t.nextID(), "epoch": s.Epoch}
	if planner != "" {
		text += ", chosen by " + planner
		obj["planner"] = planner
	}
	t.step(TaskSpawning, "spawn", text, obj)
	t.callAgent(phaseSpawning, s.HostID, schemas.PowerOn)
}

// deployNetwork is the Networking step: the NICs take the addresses
// placement gave them, each with a NicChanged.
func deployNetwork(t *tx) {
	s := t.s
	obj := map[string]any{"host_id": s.HostID}
	if len(nicsOf(s)) == 0 {
		t.step(TaskNetworking, "network", "allocating the network of the VM on host "+s.HostID, obj)
		return
	}
	text, ips := nicsText(s)
	obj["ips"] = ips
	t.step(TaskNetworking, "network", "the VM's NICs on host "+s.HostID+": "+text, obj)
	t.nicsTaken()
}

// deployBlockDevices is the BlockDeviceMapping step: the volumes are on
// the pools placement chose, each with a VolumeChanged; Spawning's StartVm
// makes their files, and its ok answer makes them Ready.
func deployBlockDevices(t *tx) {
	s := t.s
	obj := map[string]any{"host_id": s.HostID}
	if len(attachedVolumes(s)) == 0 {
		t.step(TaskBlockDeviceMapping, "block_devices", "mapping the block devices of the VM on host "+s.HostID, obj)
		return
	}
	text, pools := volumesText(s)
	obj["pools"] = pools
	t.step(TaskBlockDeviceMapping, "block_devices", "the VM's volumes for host "+s.HostID+": "+text, obj)
	t.volumesPlaced()
}
