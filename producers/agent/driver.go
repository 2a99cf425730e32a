package agent

import (
	"context"
	"errors"

	"github.com/vmplane/vmplane/schemas"
)

// Errors a Driver returns, wrapped with the host or VM concerned. The agent
// tells them apart: an unknown VM on DestroyVm is already gone (success), an
// unreachable host is neither pinged nor reported.
var (
	ErrUnknownHost = errors.New("unknown host")
	ErrUnknownVM   = errors.New("unknown vm")
	// ErrHostUnreachable means the agent cannot reach the host right now
	// (crashed, partitioned): nothing about it can be observed or done.
	ErrHostUnreachable = errors.New("host unreachable")
	// ErrUnknownSnapshot means the VM has no snapshot of that name there.
	ErrUnknownSnapshot = errors.New("unknown snapshot")
)

// HostInfo is what a host offers, as announced in AgentConnected.
type HostInfo struct {
	ID         string
	Name       string
	Zone       string
	Pod        string
	Cluster    string
	Hypervisor string
	CPU        int32
	MemoryMB   int64
	Tags       []string
	Properties map[string]string
}

// VMSpec is what a hypervisor needs to define and start a VM.
type VMSpec struct {
	ID       string
	Name     string
	CPU      int32
	MemoryMB int64
	// Volumes are the VM's disks, the root first: each is the file
	// <PoolPath>/<VolumeID>.qcow2, made on first start (the root as an
	// overlay of its template) and kept until DeleteVolume or Destroy.
	Volumes []schemas.Volume
	// Nics are its network interfaces, by device id.
	Nics []schemas.Nic
}

// Change says that a VM's power state changed in a way the driver saw on
// its own (an out-of-band pause or kill, a guest shutdown, a QMP event). The
// agent reads the state again and reports it at once.
type Change struct {
	HostID string
	VmID   string
}

// Driver is the hypervisor an agent serves its hosts through. Methods are
// called concurrently, for different VMs at once but never for the same VM
// at once. A driver never blocks on Changes: when nobody reads fast enough it
// may drop a change, since the next report round carries the state anyway.
type Driver interface {
	// Hosts lists the hosts the driver serves; fixed for the driver's life.
	Hosts() []HostInfo
	// Start defines the VM if needed and powers it on; starting a running
	// VM succeeds.
	Start(ctx context.Context, hostID string, vm VMSpec) error
	// Stop powers a VM off, at once when force is set; stopping a stopped
	// VM succeeds.
	Stop(ctx context.Context, hostID, vmID string, force bool) error
	// Destroy removes a VM and its disks, powering it off first; volumes
	// are the disks' files to remove besides what the host knows of.
	Destroy(ctx context.Context, hostID, vmID string, volumes []schemas.Volume) error
	// PowerStates returns the power state (schemas.PowerOn, PowerOff, …) of
	// every VM on the host. The error is ErrUnknownHost or
	// ErrHostUnreachable (wrapped) when the host cannot be observed.
	PowerStates(hostID string) (map[string]string, error)
	// PowerState returns one VM's power state, with the errors of
	// PowerStates, or ErrUnknownVM (wrapped) when the host has no such VM.
	PowerState(hostID, vmID string) (string, error)
	// Changes signals power changes the driver saw on its own.
	Changes() <-chan Change

	// Reboot restarts a running VM's guest (a reset when hard is set); it
	// stays PowerOn.
	Reboot(ctx context.Context, hostID, vmID string, hard bool) error
	// Pause freezes a running VM's vCPUs in memory (Paused); pausing a
	// paused VM succeeds.
	Pause(ctx context.Context, hostID, vmID string) error
	// Unpause lets a paused VM run again (PowerOn).
	Unpause(ctx context.Context, hostID, vmID string) error
	// Suspend saves a running VM's memory to disk and stops it
	// (Suspended); suspending a suspended VM succeeds.
	Suspend(ctx context.Context, hostID, vmID string) error
	// Resume restores a suspended VM (PowerOn).
	Resume(ctx context.Context, hostID, vmID string) error
	// Rescue boots the VM from a rescue image with its own disk attached
	// (PowerOn afterwards).
	Rescue(ctx context.Context, hostID, vmID, image string) error
	// Unrescue boots the VM from its own disk again (PowerOn afterwards).
	Unrescue(ctx context.Context, hostID, vmID string) error
	// Rebuild replaces the VM's root disk with a fresh copy of image and
	// boots it (PowerOn afterwards).
	// volumes are the VM's disks; the root's file is made again of its
	// template.
	Rebuild(ctx context.Context, hostID, vmID, image string, volumes []schemas.Volume) error
	// Snapshot takes a named snapshot of the VM's disks; the power state is
	// unchanged.
	Snapshot(ctx context.Context, hostID, vmID, name string) error
	// RevertSnapshot returns the disks of an off VM to the named snapshot
	// (ErrUnknownSnapshot when it has none of that name); its next start
	// boots from them.
	RevertSnapshot(ctx context.Context, hostID, vmID, name string) error
	// DeleteSnapshot removes the named snapshot; one the VM does not have
	// is deleted already, and succeeds.
	DeleteSnapshot(ctx context.Context, hostID, vmID, name string) error
	// Migrate moves a running VM live from srcHostID to dstHostID; vm
	// describes it for the destination. On success the VM is gone from the
	// source and reported by the destination.
	Migrate(ctx context.Context, srcHostID, vmID, dstHostID string, vm VMSpec) error

	// AttachVolume makes a data volume's file if it has none and attaches
	// it: to a running guest at once (hot-plug), else at its next start.
	// Attaching an attached volume succeeds.
	AttachVolume(ctx context.Context, hostID, vmID string, v schemas.Volume) error
	// DetachVolume detaches a data volume, keeping its file; detaching a
	// detached one succeeds.
	DetachVolume(ctx context.Context, hostID, vmID string, v schemas.Volume) error
	// ResizeVolume grows a volume's file to v.SizeMB (the guest sees it
	// at once when running).
	ResizeVolume(ctx context.Context, hostID, vmID string, v schemas.Volume) error
	// SnapshotVolume takes a named snapshot inside one volume's file.
	SnapshotVolume(ctx context.Context, hostID, vmID string, v schemas.Volume, name string) error
	// DeleteVolume removes a detached volume's file; one already gone
	// succeeds.
	DeleteVolume(ctx context.Context, hostID, vmID string, v schemas.Volume) error

	// Ledger returns what the host keeps of the commands carried out for
	// the VM (ledger.go); the zero Ledger when it keeps nothing. It
	// belongs to the host, as the guests do: it outlives the agent
	// process and the VM's destruction. The errors are PowerStates'.
	Ledger(hostID, vmID string) (Ledger, error)
	// SetLedger replaces it.
	SetLedger(hostID, vmID string, l Ledger) error
	// UpSince is when the host last came back from being down (a crash or
	// a fencing), Unix milliseconds; 0 when it never was. Its guests died
	// with it, so a command issued before is void there (ledger.go). The
	// errors are PowerStates'.
	UpSince(hostID string) (int64, error)
}
