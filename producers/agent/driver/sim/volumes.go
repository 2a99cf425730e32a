package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/vmplane/vmplane/producers/agent"
	"github.com/vmplane/vmplane/schemas"
)

// Volumes and NICs. A host keeps, per VM that has any, the volumes it knows
// of (attached or detached, with their sizes, templates and snapshot
// names) and the NICs the VM was last started with, as Start, the five
// volume operations and Rebuild left them; Destroy forgets them, Migrate
// moves them with the VM. They live in a map beside the VMs, as snapshots
// do, with no entry for a VM with none: the 500,000 VMs of a benchmark that
// has no storage cost nothing more, and a VM's operations look nothing up
// but that map, which is nil.
//
// The simulator keeps no data, so a volume is its id and metadata; what it
// checks is what a hypervisor would refuse: a volume operation on a VM the
// host does not have, on a volume it does not know, detaching the root,
// shrinking a volume, deleting one that is attached.

// ErrUnknownVolume is returned for a volume the VM does not have on the
// host.
var ErrUnknownVolume = errors.New("sim: unknown volume")

// ErrVolumeAttached is returned when deleting a volume that is attached.
var ErrVolumeAttached = errors.New("sim: volume is attached")

// ErrInvalidVolume is returned for a volume command that makes no sense:
// no id, a root detached, a size that shrinks.
var ErrInvalidVolume = errors.New("sim: invalid volume request")

// disk is one volume of a VM as the host has it.
type disk struct {
	ID        string   `json:"id"`
	Kind      string   `json:"kind,omitempty"`
	SizeMB    int64    `json:"size_mb"`
	Template  string   `json:"template,omitempty"`
	Pool      string   `json:"pool,omitempty"`
	Attached  bool     `json:"attached,omitempty"`
	Snapshots []string `json:"snapshots,omitempty"`
}

// disks is what a host keeps of one VM's volumes and NICs.
type disks struct {
	Volumes []disk        `json:"volumes,omitempty"`
	Nics    []schemas.Nic `json:"nics,omitempty"`
}

func (ds *disks) clone() *disks {
	c := &disks{Volumes: slices.Clone(ds.Volumes), Nics: slices.Clone(ds.Nics)}
	for i := range c.Volumes {
		c.Volumes[i].Snapshots = slices.Clone(c.Volumes[i].Snapshots)
	}
	return c
}

func (ds *disks) find(id string) int {
	return slices.IndexFunc(ds.Volumes, func(x disk) bool { return x.ID == id })
}

func diskOf(v schemas.Volume) disk {
	return disk{ID: v.VolumeID, Kind: v.Kind, SizeMB: v.SizeMB, Template: v.TemplateID, Pool: v.PoolID}
}

// started records what a VM was started (or migrated) with: the volumes
// given are attached, every other the host knows of is detached, and the
// NICs are the ones given. A spec with neither changes nothing (a caller
// that names no storage, as a migration may not): the common VM with no
// storage costs two length checks (the caller holds the lock).
func (h *host) started(vmID string, vols []schemas.Volume, nics []schemas.Nic) {
	if len(vols) == 0 && len(nics) == 0 {
		return
	}
	ds := h.disks[vmID]
	if ds == nil {
		ds = &disks{}
	}
	for i := range ds.Volumes {
		ds.Volumes[i].Attached = false
	}
	for _, v := range vols {
		d := diskOf(v)
		d.Attached = true
		if i := ds.find(v.VolumeID); i >= 0 {
			d.Snapshots = ds.Volumes[i].Snapshots
			ds.Volumes[i] = d
		} else {
			ds.Volumes = append(ds.Volumes, d)
		}
	}
	ds.Nics = slices.Clone(nics)
	h.keepDisks(vmID, ds)
}

// keepDisks sets a VM's disks, dropping the entry when it holds nothing
// (the caller holds the lock).
func (h *host) keepDisks(vmID string, ds *disks) {
	if ds == nil || len(ds.Volumes) == 0 && len(ds.Nics) == 0 {
		delete(h.disks, vmID)
		return
	}
	if h.disks == nil {
		h.disks = map[string]*disks{}
	}
	h.disks[vmID] = ds
}

// Disks returns the volumes and NICs a reachable host has for a VM: the
// attached volumes (in the order they were attached), the detached ones,
// and the NICs; all empty for a VM with none.
func (d *Driver) Disks(hostID, vmID string) (attached, detached []schemas.Volume, nics []schemas.Nic, err error) {
	h, err := d.observed(hostID)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("disks: %w", err)
	}
	defer h.mu.Unlock()
	ds := h.disks[vmID]
	if ds == nil {
		return nil, nil, nil, nil
	}
	for _, x := range ds.Volumes {
		v := schemas.Volume{VolumeID: x.ID, Kind: x.Kind, SizeMB: x.SizeMB, TemplateID: x.Template, PoolID: x.Pool}
		if x.Attached {
			v.State = schemas.VolumeReady
			attached = append(attached, v)
		} else {
			v.State = schemas.VolumeDetached
			detached = append(detached, v)
		}
	}
	return attached, detached, slices.Clone(ds.Nics), nil
}

// VolumeSnapshots returns the names of a volume's snapshots on a
// reachable host, oldest first.
func (d *Driver) VolumeSnapshots(hostID, vmID, volumeID string) ([]string, error) {
	h, err := d.observed(hostID)
	if err != nil {
		return nil, fmt.Errorf("volume snapshots: %w", err)
	}
	defer h.mu.Unlock()
	if ds := h.disks[vmID]; ds != nil {
		if i := ds.find(volumeID); i >= 0 {
			return slices.Clone(ds.Volumes[i].Snapshots), nil
		}
	}
	return nil, fmt.Errorf("volume %s of vm %s on %s: %w", volumeID, vmID, hostID, ErrUnknownVolume)
}

// volumeOp runs one volume operation on a VM the host has: latency,
// reachability, the VM, the volume id, the injected failure, then change
// on a copy of the VM's disks, kept when change succeeds.
func (d *Driver) volumeOp(ctx context.Context, op, hostID, vmID string, v schemas.Volume, change func(ds *disks) error) error {
	if v.VolumeID == "" {
		return fmt.Errorf("%s of vm %s on %s: no volume id: %w", op, vmID, hostID, ErrInvalidVolume)
	}
	return d.transitionOn(ctx, op+" "+v.VolumeID, hostID, vmID, d.cfg.Latency.Volume, d.cfg.FailureRate.Volume, func(h *host, _ *vm) error {
		ds := &disks{}
		if cur := h.disks[vmID]; cur != nil {
			ds = cur.clone()
		}
		if err := change(ds); err != nil {
			return err
		}
		h.keepDisks(vmID, ds)
		return nil
	})
}

// AttachVolume makes the volume known to the VM if it is not and attaches
// it; attaching an attached volume succeeds.
func (d *Driver) AttachVolume(ctx context.Context, hostID, vmID string, v schemas.Volume) error {
	return d.volumeOp(ctx, "attach volume", hostID, vmID, v, func(ds *disks) error {
		i := ds.find(v.VolumeID)
		if i < 0 {
			ds.Volumes = append(ds.Volumes, diskOf(v))
			i = len(ds.Volumes) - 1
		}
		ds.Volumes[i].Attached = true
		return nil
	})
}

// DetachVolume detaches a data volume, keeping it; detaching a detached
// one succeeds, one the VM does not have fails, and a root cannot be
// detached.
func (d *Driver) DetachVolume(ctx context.Context, hostID, vmID string, v schemas.Volume) error {
	return d.volumeOp(ctx, "detach volume", hostID, vmID, v, func(ds *disks) error {
		i := ds.find(v.VolumeID)
		switch {
		case i < 0:
			return ErrUnknownVolume
		case ds.Volumes[i].Kind == schemas.VolumeRoot:
			return fmt.Errorf("the root volume: %w", ErrInvalidVolume)
		}
		ds.Volumes[i].Attached = false
		return nil
	})
}

// ResizeVolume grows a volume to v.SizeMB; a smaller size fails, the same
// size succeeds.
func (d *Driver) ResizeVolume(ctx context.Context, hostID, vmID string, v schemas.Volume) error {
	return d.volumeOp(ctx, "resize volume", hostID, vmID, v, func(ds *disks) error {
		i := ds.find(v.VolumeID)
		switch {
		case i < 0:
			return ErrUnknownVolume
		case v.SizeMB < ds.Volumes[i].SizeMB:
			return fmt.Errorf("%d MiB is smaller than its %d: %w", v.SizeMB, ds.Volumes[i].SizeMB, ErrInvalidVolume)
		}
		ds.Volumes[i].SizeMB = v.SizeMB
		return nil
	})
}

// SnapshotVolume records a named snapshot of a volume the VM has; taking a
// name again overwrites it, as qemu-img snapshot does.
func (d *Driver) SnapshotVolume(ctx context.Context, hostID, vmID string, v schemas.Volume, name string) error {
	return d.volumeOp(ctx, "snapshot volume", hostID, vmID, v, func(ds *disks) error {
		i := ds.find(v.VolumeID)
		switch {
		case i < 0:
			return ErrUnknownVolume
		case name == "":
			return fmt.Errorf("no snapshot name: %w", ErrInvalidVolume)
		}
		if !slices.Contains(ds.Volumes[i].Snapshots, name) {
			ds.Volumes[i].Snapshots = append(ds.Volumes[i].Snapshots, name)
		}
		return nil
	})
}

// DeleteVolume removes a detached volume; one the host does not have (or
// whose VM it does not have) is gone already, and one attached fails.
func (d *Driver) DeleteVolume(ctx context.Context, hostID, vmID string, v schemas.Volume) (err error) {
	if v.VolumeID == "" {
		return fmt.Errorf("delete volume of vm %s on %s: no volume id: %w", vmID, hostID, ErrInvalidVolume)
	}
	err = d.volumeOp(ctx, "delete volume", hostID, vmID, v, func(ds *disks) error {
		i := ds.find(v.VolumeID)
		switch {
		case i < 0:
			return nil
		case ds.Volumes[i].Attached:
			return ErrVolumeAttached
		}
		ds.Volumes = slices.Delete(ds.Volumes, i, i+1)
		return nil
	})
	if errors.Is(err, agent.ErrUnknownVM) {
		// The file is the pool's, not the VM's: with the VM gone from
		// the host, so is what it had there.
		return nil
	}
	return err
}

// cloneDisks deep-copies a host's disks for the state file.
func cloneDisks(m map[string]*disks) map[string]*disks {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]*disks, len(m))
	for id, ds := range m {
		out[id] = ds.clone()
	}
	return out
}
