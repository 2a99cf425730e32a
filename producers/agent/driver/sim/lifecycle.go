package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/vmplane/vmplane/producers/agent"
	"github.com/vmplane/vmplane/schemas"
)

// ErrWrongPower is returned when an operation does not apply to the VM's
// power state (pausing a stopped VM, resuming a running one that was never
// suspended): a real hypervisor refuses these too.
var ErrWrongPower = errors.New("sim: operation not valid in the vm's power state")

// Reboot resets a running VM; it stays on.
func (d *Driver) Reboot(ctx context.Context, hostID, vmID string, hard bool) error {
	return d.transition(ctx, "reboot", hostID, vmID, d.cfg.Latency.Reboot, d.cfg.FailureRate.Reboot, func(v *vm) error {
		if v.power != powerOn {
			return ErrWrongPower
		}
		return nil
	})
}

// Pause freezes a running VM; pausing a paused VM succeeds.
func (d *Driver) Pause(ctx context.Context, hostID, vmID string) error {
	return d.transition(ctx, "pause", hostID, vmID, d.cfg.Latency.Pause, d.cfg.FailureRate.Pause, func(v *vm) error {
		return v.move(powerOn, powerPaused)
	})
}

// Unpause lets a paused VM run; unpausing a running VM succeeds.
func (d *Driver) Unpause(ctx context.Context, hostID, vmID string) error {
	return d.transition(ctx, "unpause", hostID, vmID, d.cfg.Latency.Unpause, d.cfg.FailureRate.Unpause, func(v *vm) error {
		return v.move(powerPaused, powerOn)
	})
}

// Suspend saves a running VM and stops it; suspending a suspended VM
// succeeds.
func (d *Driver) Suspend(ctx context.Context, hostID, vmID string) error {
	return d.transition(ctx, "suspend", hostID, vmID, d.cfg.Latency.Suspend, d.cfg.FailureRate.Suspend, func(v *vm) error {
		return v.move(powerOn, powerSuspended)
	})
}

// Resume restores a suspended VM; resuming a running VM succeeds.
func (d *Driver) Resume(ctx context.Context, hostID, vmID string) error {
	return d.transition(ctx, "resume", hostID, vmID, d.cfg.Latency.Resume, d.cfg.FailureRate.Resume, func(v *vm) error {
		return v.move(powerSuspended, powerOn)
	})
}

// Rescue boots the VM from a rescue image, whatever its power state; the
// simulator keeps no images, only that the VM is rescued.
func (d *Driver) Rescue(ctx context.Context, hostID, vmID, image string) error {
	return d.transition(ctx, "rescue", hostID, vmID, d.cfg.Latency.Rescue, d.cfg.FailureRate.Rescue, func(v *vm) error {
		v.power, v.rescued = powerOn, true
		return nil
	})
}

// Unrescue boots the VM from its own disk again.
func (d *Driver) Unrescue(ctx context.Context, hostID, vmID string) error {
	return d.transition(ctx, "unrescue", hostID, vmID, d.cfg.Latency.Unrescue, d.cfg.FailureRate.Unrescue, func(v *vm) error {
		v.power, v.rescued = powerOn, false
		return nil
	})
}

// Rebuild replaces the root disk and boots the VM: the root of volumes
// is made again, of its template, with no snapshots.
func (d *Driver) Rebuild(ctx context.Context, hostID, vmID, image string, volumes []schemas.Volume) error {
	return d.transitionOn(ctx, "rebuild", hostID, vmID, d.cfg.Latency.Rebuild, d.cfg.FailureRate.Rebuild, func(h *host, v *vm) error {
		v.power = powerOn
		if ds := h.disks[vmID]; ds != nil {
			for _, nv := range volumes {
				if i := ds.find(nv.VolumeID); i >= 0 && nv.Kind == schemas.VolumeRoot {
					ds.Volumes[i].Template, ds.Volumes[i].Snapshots = nv.TemplateID, nil
				}
			}
		}
		return nil
	})
}

// Snapshot records the snapshot's name and leaves the power state as it
// is; the simulator stores no disk data. Taking a name again overwrites
// it, as savevm does.
func (d *Driver) Snapshot(ctx context.Context, hostID, vmID, name string) error {
	return d.transitionOn(ctx, "snapshot", hostID, vmID, d.cfg.Latency.Snapshot, d.cfg.FailureRate.Snapshot, func(h *host, _ *vm) error {
		if !slices.Contains(h.snapshots[vmID], name) {
			if h.snapshots == nil {
				h.snapshots = map[string][]string{}
			}
			h.snapshots[vmID] = append(slices.Clip(h.snapshots[vmID]), name)
		}
		return nil
	})
}

// RevertSnapshot checks that the VM is off and has the snapshot; with no
// disk data there is nothing else to do. It takes a snapshot's latency and
// failure rate.
func (d *Driver) RevertSnapshot(ctx context.Context, hostID, vmID, name string) error {
	return d.transitionOn(ctx, "revert snapshot", hostID, vmID, d.cfg.Latency.Snapshot, d.cfg.FailureRate.Snapshot, func(h *host, v *vm) error {
		if v.power != powerOff {
			return ErrWrongPower
		}
		if !slices.Contains(h.snapshots[vmID], name) {
			return fmt.Errorf("%q: %w", name, agent.ErrUnknownSnapshot)
		}
		return nil
	})
}

// DeleteSnapshot forgets the snapshot's name; one the VM does not have is
// deleted already. It takes a snapshot's latency and failure rate.
func (d *Driver) DeleteSnapshot(ctx context.Context, hostID, vmID, name string) error {
	return d.transitionOn(ctx, "delete snapshot", hostID, vmID, d.cfg.Latency.Snapshot, d.cfg.FailureRate.Snapshot, func(h *host, _ *vm) error {
		kept := slices.DeleteFunc(slices.Clone(h.snapshots[vmID]), func(n string) bool { return n == name })
		if len(kept) == 0 {
			delete(h.snapshots, vmID)
		} else {
			h.snapshots[vmID] = kept
		}
		return nil
	})
}

// Migrate moves a running or paused VM from one simulated host to another
// with its power state, as a live migration does. Both hosts must be served
// by this driver and reachable.
func (d *Driver) Migrate(ctx context.Context, srcHostID, vmID, dstHostID string, spec agent.VMSpec) (err error) {
	defer d.persist(&err)
	if d.state != nil {
		d.state.moving.RLock()
		defer d.state.moving.RUnlock()
	}
	if srcHostID == dstHostID {
		return fmt.Errorf("migrate vm %s: source and destination are both %s", vmID, srcHostID)
	}
	dst, ok := d.hosts[dstHostID]
	if !ok {
		return fmt.Errorf("migrate vm %s: destination %s: %w", vmID, dstHostID, agent.ErrUnknownHost)
	}
	src, err := d.operate(ctx, srcHostID, d.cfg.Latency.Migrate)
	if err != nil {
		return fmt.Errorf("migrate vm %s: %w", vmID, err)
	}
	i, ok := src.index[vmID]
	if !ok {
		src.mu.Unlock()
		return fmt.Errorf("migrate vm %s from %s: %w", vmID, srcHostID, agent.ErrUnknownVM)
	}
	moved := src.vms[i]
	if moved.power != powerOn && moved.power != powerPaused {
		src.mu.Unlock()
		return fmt.Errorf("migrate vm %s: live migration of a vm that is not running: %w", vmID, ErrWrongPower)
	}
	if d.fail(d.cfg.FailureRate.Migrate) {
		src.mu.Unlock()
		return fmt.Errorf("migrate vm %s from %s to %s: %w", vmID, srcHostID, dstHostID, ErrInjected)
	}
	// One host lock at a time, so two migrations in opposite directions
	// cannot deadlock; the VM is briefly on neither host, as during a real
	// switch-over.
	src.remove(i)
	snaps := src.snapshots[vmID]
	delete(src.snapshots, vmID)
	vols := src.disks[vmID]
	delete(src.disks, vmID)
	src.mu.Unlock()

	dst.mu.Lock()
	if err := dst.reachable(); err != nil {
		dst.mu.Unlock()
		// The destination died during the move: put the VM back where it was.
		src.mu.Lock()
		src.add(moved)
		src.keepSnapshots(vmID, snaps)
		src.keepDisks(vmID, vols)
		src.mu.Unlock()
		return fmt.Errorf("migrate vm %s to %s: %w", vmID, dstHostID, err)
	}
	if spec.CPU > 0 {
		moved.cpu, moved.memoryMB = uint16(spec.CPU), uint32(spec.MemoryMB)
	}
	dst.add(moved)
	dst.keepSnapshots(vmID, snaps)
	// The disks go with the VM, as the destination has them: the spec's
	// volumes and NICs when it names them.
	dst.keepDisks(vmID, vols)
	dst.started(vmID, spec.Volumes, spec.Nics)
	dst.mu.Unlock()
	// No Change: the move was asked for, and the agent reports the VM from
	// the destination with its answer. A change on the source would report
	// the VM PowerOff there.
	return nil
}

// transition runs one single-VM operation: latency, reachability, the VM's
// existence, the injected failure, then change.
func (d *Driver) transition(ctx context.Context, op, hostID, vmID string, latency time.Duration, rate float64, change func(*vm) error) error {
	return d.transitionOn(ctx, op, hostID, vmID, latency, rate, func(_ *host, v *vm) error { return change(v) })
}

// transitionOn is transition for a change that needs the VM's host too
// (locked, as the VM is).
func (d *Driver) transitionOn(ctx context.Context, op, hostID, vmID string, latency time.Duration, rate float64, change func(*host, *vm) error) (err error) {
	defer d.persist(&err)
	h, err := d.operate(ctx, hostID, latency)
	if err != nil {
		return fmt.Errorf("%s vm %s: %w", op, vmID, err)
	}
	defer h.mu.Unlock()
	i, ok := h.index[vmID]
	if !ok {
		return fmt.Errorf("%s vm %s on %s: %w", op, vmID, hostID, agent.ErrUnknownVM)
	}
	if d.fail(rate) {
		return fmt.Errorf("%s vm %s on %s: %w", op, vmID, hostID, ErrInjected)
	}
	if err := change(h, &h.vms[i]); err != nil {
		return fmt.Errorf("%s vm %s on %s (%s): %w", op, vmID, hostID, powerNames[h.vms[i].power], err)
	}
	return nil
}

// keepSnapshots sets a VM's snapshot names (the caller holds the lock).
func (h *host) keepSnapshots(vmID string, names []string) {
	if len(names) == 0 {
		return
	}
	if h.snapshots == nil {
		h.snapshots = map[string][]string{}
	}
	h.snapshots[vmID] = names
}

// move changes from → to; a VM already in to is left alone.
func (v *vm) move(from, to power) error {
	switch v.power {
	case to:
		return nil
	case from:
		v.power = to
		return nil
	}
	return ErrWrongPower
}

// add appends a VM to the host (the caller holds the lock).
func (h *host) add(v vm) {
	if h.index == nil {
		h.index = make(map[string]int32)
	}
	if i, ok := h.index[v.id]; ok {
		h.vms[i] = v
		return
	}
	h.index[v.id] = int32(len(h.vms))
	h.vms = append(h.vms, v)
	h.where.add(v.id, h.info.ID)
}

// remove swap-removes the VM at i, keeping the slice dense (the caller
// holds the lock).
func (h *host) remove(i int32) {
	last := int32(len(h.vms) - 1)
	id := h.vms[i].id
	if i != last {
		h.vms[i] = h.vms[last]
		h.index[h.vms[i].id] = i
	}
	h.vms[last] = vm{}
	h.vms = h.vms[:last]
	delete(h.index, id)
	h.where.remove(id, h.info.ID)
}

// signal tells the agent a VM changed on a host; dropping it when the agent
// lags is safe, the next report round carries the state anyway.
func (d *Driver) signal(hostID, vmID string) {
	select {
	case d.changes <- agent.Change{HostID: hostID, VmID: vmID}:
	default:
	}
}
