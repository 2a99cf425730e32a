package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/vmplane/vmplane/schemas"
)

// Errors an answer carries as text.
const (
	// errUnsupported answers the agent commands this agent cannot carry out.
	errUnsupported = "unsupported by agent"
	// errForeignDestination answers a MigrateVm whose destination host is
	// served by another agent: live migration between agents is not built.
	errForeignDestination = "destination not served by this agent"
	// errRunsElsewhere answers a StartVm of a VM that runs on another host
	// of the same agent.
	errRunsElsewhere = "not started twice"
)

// VMFinder is a driver that tells at once which of its hosts hold a VM
// (the sim driver, serving thousands of hosts in one process); another is
// asked host by host.
type VMFinder interface {
	HostsOf(vmID string) []string
}

// runsElsewhere returns a host among peers, other than host, where the VM
// runs or is paused; "" when none (a peer that cannot be read, or has no
// such VM, is passed). One lookup per peer, not a listing of its VMs; a
// VMFinder narrows the peers to the hosts that hold the VM.
func runsElsewhere(d Driver, vm, host string, peers []string) string {
	if f, ok := d.(VMFinder); ok {
		peers = f.HostsOf(vm)
	}
	for _, p := range peers {
		if p == host {
			continue
		}
		if st, err := d.PowerState(p, vm); err == nil && (st == schemas.PowerOn || st == schemas.PowerPaused) {
			return p
		}
	}
	return ""
}

// ErrExpired answers a command read after it expired (AgentCommand.
// ExpiresAt): the job that sent it has timed out, and carrying it out now
// would act behind its back — start a VM the job gave up on, after the next
// job started it elsewhere.
var ErrExpired = errors.New("expired: the job that sent it has timed out")

// refused says why a command is answered without running, if it is: it
// expired; or it is an AbortMigrateVm, which an agent carries out on its
// poll loop (abort.go) and which, run here after the commands before it
// ended, finds no migration in flight.
func refused(v any, cmd *schemas.AgentCommand, now int64) error {
	if cmd.Expired(now) {
		return ErrExpired
	}
	if _, ok := v.(*schemas.AbortMigrateVm); ok {
		return errors.New(errMigrationEnded)
	}
	return nil
}

// Execute carries out one agent command on a driver, as every agent does
// with a command id it has not answered before; now is the agent's clock
// (Unix milliseconds). where is the host the VM is on afterwards: the
// destination of a migration, else the command's host. report says
// whether a power report follows a success. peers are the hosts the agent
// serves: a migration can only reach those, and a VM running on one of
// them is never started on another. An expired command does nothing and
// fails with ErrExpired, one a newer job superseded with ErrSuperseded;
// one the host carried out before is not carried out again (ledger.go).
func Execute(ctx context.Context, d Driver, v any, now int64, peers []string) (where string, report bool, err error) {
	c, ok := v.(schemas.AgentCommandRecord)
	if !ok {
		return "", false, errors.New(errUnsupported)
	}
	cmd := c.Command()
	if err := refused(v, cmd, now); err != nil {
		return cmd.HostID, false, err
	}
	hosts := ledgerHosts(v, cmd, peers)
	repeat, err := admit(d, hosts, cmd)
	switch {
	case err != nil:
		return cmd.HostID, false, err
	case repeat:
		// Carried out before, its answer lost with the agent's memory:
		// the host says so, and the answer reads the power as it is.
		return whereAfter(v, cmd), false, nil
	}
	defer func() {
		if err == nil {
			carriedOut(d, hosts, cmd)
		}
	}()
	where, report = cmd.HostID, true
	switch c := v.(type) {
	case *schemas.StartVm:
		if other := runsElsewhere(d, c.VmID, cmd.HostID, peers); other != "" {
			// A StartVm read again by an agent restarted without its
			// answers, after the VM moved on: starting it would make a
			// second copy (found by the simulation, seed 48999).
			return other, false, fmt.Errorf("%s: %s runs on host %s", errRunsElsewhere, c.VmID, other)
		}
		err = d.Start(ctx, cmd.HostID, VMSpec{ID: c.VmID, Name: c.Name, CPU: c.CPU, MemoryMB: c.MemoryMB, Volumes: c.Volumes, Nics: c.Nics})
	case *schemas.StopVm:
		err = d.Stop(ctx, cmd.HostID, c.VmID, c.Force)
	case *schemas.DestroyVm:
		report = false
		err = d.Destroy(ctx, cmd.HostID, c.VmID, c.Volumes)
		if errors.Is(err, ErrUnknownVM) {
			err = nil // already gone: destroying is idempotent
		}
	case *schemas.RebootVm:
		err = d.Reboot(ctx, cmd.HostID, c.VmID, c.Hard)
	case *schemas.PauseVm:
		err = d.Pause(ctx, cmd.HostID, c.VmID)
	case *schemas.UnpauseVm:
		err = d.Unpause(ctx, cmd.HostID, c.VmID)
	case *schemas.SuspendVm:
		err = d.Suspend(ctx, cmd.HostID, c.VmID)
	case *schemas.ResumeVm:
		err = d.Resume(ctx, cmd.HostID, c.VmID)
	case *schemas.RescueVm:
		err = d.Rescue(ctx, cmd.HostID, c.VmID, c.Image)
	case *schemas.UnrescueVm:
		err = d.Unrescue(ctx, cmd.HostID, c.VmID)
	case *schemas.RebuildVm:
		err = d.Rebuild(ctx, cmd.HostID, c.VmID, c.Image, c.Volumes)
	case *schemas.SnapshotVm:
		report = false // the power state does not change
		err = d.Snapshot(ctx, cmd.HostID, c.VmID, c.SnapshotName)
	case *schemas.RevertSnapshotVm, *schemas.DeleteSnapshotVm, *schemas.AttachVolumeVm, *schemas.DetachVolumeVm,
		*schemas.ResizeVolumeVm, *schemas.SnapshotVolumeVm, *schemas.DeleteVolumeVm:
		report = false // the power state does not change
		err = changeDisks(ctx, d, c)
	case *schemas.CheckVm:
		// Nothing changes: the answer carries the VM's power there,
		// PowerOff when the host has no such VM.
		report = false
		if _, err = d.PowerState(cmd.HostID, c.VmID); errors.Is(err, ErrUnknownVM) {
			err = nil
		}
	case *schemas.MigrateVm:
		// The destination must be one of ours: the agent reports it, and
		// a driver cannot reach a hypervisor another agent serves.
		if !slices.Contains(peers, c.DestHostID) {
			return where, report, errors.New(errForeignDestination)
		}
		err = d.Migrate(ctx, cmd.HostID, c.VmID, c.DestHostID, VMSpec{ID: c.VmID, CPU: c.CPU, MemoryMB: c.MemoryMB, Volumes: c.Volumes, Nics: c.Nics})
		where = c.DestHostID
	default:
		err = errors.New(errUnsupported)
	}
	return where, report, err
}

// changeDisks carries out a command that changes a VM's disks but not its
// power: a snapshot reverted or deleted, a volume attached, detached,
// grown, snapshotted or deleted.
func changeDisks(ctx context.Context, d Driver, v any) error {
	switch c := v.(type) {
	case *schemas.RevertSnapshotVm:
		return d.RevertSnapshot(ctx, c.HostID, c.VmID, c.SnapshotName)
	case *schemas.DeleteSnapshotVm:
		return d.DeleteSnapshot(ctx, c.HostID, c.VmID, c.SnapshotName)
	case *schemas.AttachVolumeVm:
		return d.AttachVolume(ctx, c.HostID, c.VmID, c.Volume)
	case *schemas.DetachVolumeVm:
		return d.DetachVolume(ctx, c.HostID, c.VmID, c.Volume)
	case *schemas.ResizeVolumeVm:
		return d.ResizeVolume(ctx, c.HostID, c.VmID, c.Volume)
	case *schemas.SnapshotVolumeVm:
		return d.SnapshotVolume(ctx, c.HostID, c.VmID, c.Volume, c.SnapshotName)
	case *schemas.DeleteVolumeVm:
		return d.DeleteVolume(ctx, c.HostID, c.VmID, c.Volume)
	}
	return errors.New(errUnsupported)
}

// SortedIDs returns the VM ids of a host's power states, sorted, as pings
// and announcements list them.
func SortedIDs(states map[string]string) []string {
	ids := make([]string, 0, len(states))
	for id := range states {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Connected is the AgentConnected that announces a host with the VMs it
// runs. Avro has no null for its lists and maps: nil becomes empty.
func Connected(agentID string, i HostInfo, vmIDs []string, at int64) *schemas.AgentConnected {
	tags, props := i.Tags, i.Properties
	if tags == nil {
		tags = []string{}
	}
	if props == nil {
		props = map[string]string{}
	}
	return &schemas.AgentConnected{HostID: i.ID, Name: i.Name, AgentID: agentID, ZoneID: i.Zone, PodID: i.Pod,
		ClusterID: i.Cluster, Hypervisor: i.Hypervisor, CPU: i.CPU, MemoryMB: i.MemoryMB, Tags: tags,
		Properties: props, VmIDs: vmIDs, At: at}
}
