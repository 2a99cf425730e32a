package qemu

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"

	"github.com/vmplane/vmplane/producers/agent"
	"github.com/vmplane/vmplane/schemas"
)

// The volume commands. Each runs under the VM's lock and reads the real
// state first — the file, the devices QEMU has — so that a command retried
// after the agent died half-way finishes what was done and redoes nothing.
// The record lists the attached volumes (the disks of the next start) and
// changes before QEMU does on attach, after it on detach.

// AttachVolume makes the volume's file if it has none, records it among
// the VM's disks and, when the guest runs, hot-plugs it.
func (d *Driver) AttachVolume(ctx context.Context, hostID, vmID string, v schemas.Volume) error {
	if err := checkVolume(v); err != nil {
		return fmt.Errorf("attach volume: %w", err)
	}
	g, unlock, err := d.hold(ctx, hostID, vmID, nil)
	if err != nil {
		return fmt.Errorf("attach volume %s: %w", v.VolumeID, err)
	}
	defer unlock()
	if err := d.attachHeld(ctx, g, v); err != nil {
		return fmt.Errorf("attach volume %s to vm %s: %w", v.VolumeID, vmID, err)
	}
	return nil
}

func (d *Driver) attachHeld(ctx context.Context, g *guest, v schemas.Volume) error {
	if d.isSuspended(g) {
		// Its saved memory knows the disks it had: resume or stop it first.
		return errors.New("the vm is suspended")
	}
	d.mu.Lock()
	vs := slices.DeleteFunc(slices.Clone(g.spec.Volumes), func(o schemas.Volume) bool { return o.VolumeID == v.VolumeID })
	taken := slices.ContainsFunc(vs, func(o schemas.Volume) bool { return o.DeviceID == v.DeviceID })
	d.mu.Unlock()
	if taken {
		return fmt.Errorf("device %d is another volume's", v.DeviceID)
	}
	if err := d.ensureVolume(ctx, v); err != nil {
		return err
	}
	d.setVolumes(g, append(vs, v))
	if err := d.save(g); err != nil {
		return err
	}
	if p := d.procOf(g); p != nil && p.alive() && p.holdsGuest() {
		return plug(ctx, p, v)
	}
	return nil
}

// DetachVolume unplugs the volume from a running guest and takes it out of
// the VM's disks; the file stays. The root volume is not detachable.
func (d *Driver) DetachVolume(ctx context.Context, hostID, vmID string, v schemas.Volume) error {
	if err := checkVolume(v); err != nil {
		return fmt.Errorf("detach volume: %w", err)
	}
	if v.Kind == schemas.VolumeRoot {
		return fmt.Errorf("detach volume %s: the root volume stays with its vm", v.VolumeID)
	}
	g, unlock, err := d.hold(ctx, hostID, vmID, nil)
	if err != nil {
		return fmt.Errorf("detach volume %s: %w", v.VolumeID, err)
	}
	defer unlock()
	if d.isSuspended(g) {
		return fmt.Errorf("detach volume %s from vm %s: the vm is suspended", v.VolumeID, vmID)
	}
	if p := d.procOf(g); p != nil && p.alive() && p.holdsGuest() {
		if err := unplug(ctx, p, v); err != nil {
			return fmt.Errorf("detach volume %s from vm %s: %w", v.VolumeID, vmID, err)
		}
	}
	d.mu.Lock()
	vs := slices.DeleteFunc(slices.Clone(g.spec.Volumes), func(o schemas.Volume) bool { return o.VolumeID == v.VolumeID })
	d.mu.Unlock()
	d.setVolumes(g, vs)
	if err := d.save(g); err != nil {
		return fmt.Errorf("detach volume %s: %w", v.VolumeID, err)
	}
	return nil
}

// ResizeVolume grows the volume to v.SizeMB: through QEMU (block_resize)
// when a running guest has it, so the guest sees the new size at once,
// else in its file. Shrinking is refused: it would cut the guest's data.
func (d *Driver) ResizeVolume(ctx context.Context, hostID, vmID string, v schemas.Volume) error {
	if err := checkVolume(v); err != nil {
		return fmt.Errorf("resize volume: %w", err)
	}
	if v.SizeMB <= 0 {
		return fmt.Errorf("resize volume %s: size %d MiB", v.VolumeID, v.SizeMB)
	}
	g, unlock, err := d.hold(ctx, hostID, vmID, nil)
	if err != nil {
		return fmt.Errorf("resize volume %s: %w", v.VolumeID, err)
	}
	defer unlock()
	if err := d.resizeHeld(ctx, g, v); err != nil {
		return fmt.Errorf("resize volume %s of vm %s: %w", v.VolumeID, vmID, err)
	}
	return nil
}

func (d *Driver) resizeHeld(ctx context.Context, g *guest, v schemas.Volume) error {
	size, err := virtualSize(ctx, volumePath(v))
	if err != nil {
		return err
	}
	want := v.SizeMB << 20
	switch {
	case want < size:
		return fmt.Errorf("shrinking from %d to %d MiB is refused", size>>20, v.SizeMB)
	case want > size:
		p := d.procOf(g)
		if on, herr := d.pluggedIn(ctx, g, v); herr != nil {
			return herr
		} else if on {
			_, err = p.execute(ctx, "block_resize", map[string]any{"node-name": nodeName(v), "size": want})
		} else {
			err = qemuImg(ctx, "resize", "-q", volumePath(v), sizeArg(v.SizeMB))
		}
		if err != nil {
			return err
		}
	}
	d.mu.Lock()
	for i := range g.spec.Volumes {
		if g.spec.Volumes[i].VolumeID == v.VolumeID {
			g.spec.Volumes[i].SizeMB = v.SizeMB
		}
	}
	d.mu.Unlock()
	return d.save(g)
}

// SnapshotVolume takes an internal snapshot named name in the volume's
// file: through QEMU when a running guest has the volume, else with
// qemu-img. A name the file has already is taken.
func (d *Driver) SnapshotVolume(ctx context.Context, hostID, vmID string, v schemas.Volume, name string) error {
	if err := checkVolume(v); err != nil {
		return fmt.Errorf("snapshot volume: %w", err)
	}
	if name == "" {
		return fmt.Errorf("snapshot volume %s: no snapshot name", v.VolumeID)
	}
	g, unlock, err := d.hold(ctx, hostID, vmID, nil)
	if err != nil {
		return fmt.Errorf("snapshot volume %s: %w", v.VolumeID, err)
	}
	defer unlock()
	// Inside the file a volume snapshot's name has a prefix of its own:
	// the VM's snapshots are taken in every disk's file under the names
	// users give them.
	name = schemas.VolumeSnapshotPrefix + name
	names, err := fileSnapshots(ctx, volumePath(v))
	if err != nil || slices.Contains(names, name) {
		return err
	}
	on, err := d.pluggedIn(ctx, g, v)
	switch {
	case err != nil:
	case on:
		_, err = d.procOf(g).execute(ctx, "blockdev-snapshot-internal-sync", map[string]any{"device": nodeName(v), "name": name})
	default:
		err = qemuImg(ctx, "snapshot", "-c", name, volumePath(v))
	}
	if err != nil {
		return fmt.Errorf("snapshot volume %s of vm %s: %w", v.VolumeID, vmID, err)
	}
	return nil
}

// DeleteVolume removes a volume's file. One a running guest still has is
// refused; one gone already is deleted. The VM may be gone.
func (d *Driver) DeleteVolume(ctx context.Context, hostID, vmID string, v schemas.Volume) error {
	if err := checkVolume(v); err != nil {
		return fmt.Errorf("delete volume: %w", err)
	}
	g, unlock, err := d.hold(ctx, hostID, vmID, nil)
	switch {
	case errors.Is(err, agent.ErrUnknownVM):
		// Gone, or on another of the driver's hosts, whose disk it may be.
		d.mu.Lock()
		other := d.vms[vmID]
		attached := other != nil && slices.ContainsFunc(other.spec.Volumes, func(o schemas.Volume) bool { return o.VolumeID == v.VolumeID })
		var on string
		if attached {
			on = other.host
		}
		d.mu.Unlock()
		if attached {
			return fmt.Errorf("delete volume %s: attached to vm %s on host %s; detach it first", v.VolumeID, vmID, on)
		}
	case err != nil:
		return fmt.Errorf("delete volume %s: %w", v.VolumeID, err)
	default:
		defer unlock()
		on, err := d.pluggedIn(ctx, g, v)
		if err != nil {
			return fmt.Errorf("delete volume %s: %w", v.VolumeID, err)
		}
		d.mu.Lock()
		attached := slices.ContainsFunc(g.spec.Volumes, func(o schemas.Volume) bool { return o.VolumeID == v.VolumeID })
		d.mu.Unlock()
		if on || attached {
			return fmt.Errorf("delete volume %s: attached to vm %s; detach it first", v.VolumeID, vmID)
		}
	}
	if err := os.Remove(volumePath(v)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete volume %s: %w", v.VolumeID, err)
	}
	return nil
}

// pluggedIn says whether g's running QEMU has v's block node.
func (d *Driver) pluggedIn(ctx context.Context, g *guest, v schemas.Volume) (bool, error) {
	p := d.procOf(g)
	if p == nil || !p.alive() || !p.holdsGuest() {
		return false, nil
	}
	return hasNode(ctx, p, nodeName(v))
}

// setVolumes replaces g's disks, written under d.mu.
func (d *Driver) setVolumes(g *guest, vs []schemas.Volume) {
	d.mu.Lock()
	g.spec.Volumes = vs
	d.mu.Unlock()
}
