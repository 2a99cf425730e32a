package qemu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vmplane/vmplane/producers/agent"
	"github.com/vmplane/vmplane/schemas"
)

// Config configures the driver.
type Config struct {
	// Hosts are the hosts served; QEMU runs every guest on this machine,
	// so a host is a named share of it.
	Hosts []agent.HostInfo
	// Dir holds one directory per VM (disk, record, pid files, sockets,
	// suspend image); it plays the storage the hosts share, so a VM
	// migrates without copying its disk, and it is what outlives the
	// agent: a driver started on it adopts the guests it finds there. Keep
	// it short: unix socket paths are limited to 107 bytes.
	Dir string
	// Binary is the QEMU system emulator (default qemu-system-x86_64).
	Binary string
	// Accel is kvm or tcg (the default).
	Accel string
	// GuestMemoryMB caps the memory a guest without an OS really gets
	// (default 32), whatever its offering says: tests run many.
	GuestMemoryMB int64
	// LinuxMemoryMB is the least memory a guest that boots its template's
	// kernel gets (default 128): it gets its offering's memory, and the
	// Debian kernel does not boot in much less.
	LinuxMemoryMB int64
	// Templates holds one directory per template, <Templates>/<id>/
	// (disk.qcow2, and vmlinuz and initrd.img for a direct kernel boot:
	// package guest writes them); a root volume is an overlay of its
	// template's disk.
	Templates string
	// DiskMB is the size of each VM's qcow2 disk (default 16).
	DiskMB int
	// StopTimeout is how long a graceful stop waits for the guest to power
	// off after the ACPI power button before QEMU is told to quit (default
	// 30 s).
	StopTimeout time.Duration
	Logger      *slog.Logger
}

// Driver runs QEMU guests; it implements agent.Driver.
type Driver struct {
	cfg     Config
	hosts   map[string]agent.HostInfo
	changes chan agent.Change

	mu  sync.Mutex
	vms map[string]*guest // by VM id: a VM is on one host at a time

	// ledgerMu serialises the reads and writes of ledger files.
	ledgerMu sync.Mutex

	// done ends every watch (Close).
	done      chan struct{}
	closeOnce sync.Once
}

var _ agent.Driver = (*Driver)(nil)

// New returns a driver that has adopted the guests of its hosts found under
// Config.Dir (adopt.go); it starts nothing until a VM is started.
func New(cfg Config) (*Driver, error) {
	if len(cfg.Hosts) == 0 || cfg.Dir == "" {
		return nil, errors.New("qemu: Hosts and Dir are required")
	}
	if strings.ContainsAny(cfg.Dir, ",") {
		// QEMU would read the comma in -drive file=… and -qmp unix:… as
		// the start of another option.
		return nil, fmt.Errorf("qemu: Dir %q: a comma cannot be in QEMU's option values", cfg.Dir)
	}
	if cfg.Binary == "" {
		cfg.Binary = "qemu-system-x86_64"
	}
	if _, err := exec.LookPath(cfg.Binary); err != nil {
		return nil, fmt.Errorf("qemu: %w", err)
	}
	if cfg.Accel == "" {
		// Not kvm whenever /dev/kvm opens: a nested KVM (this project's
		// machines) starts guests but cannot boot the Debian kernel (its
		// early boot finds no valid physical address), and TCG boots the
		// tiny-linux guest in seconds.
		cfg.Accel = "tcg"
	}
	if cfg.GuestMemoryMB <= 0 {
		cfg.GuestMemoryMB = 32
	}
	if cfg.LinuxMemoryMB <= 0 {
		cfg.LinuxMemoryMB = 128
	}
	if cfg.DiskMB <= 0 {
		cfg.DiskMB = 16
	}
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = 30 * time.Second
	}
	if strings.ContainsAny(cfg.Templates, ",") {
		return nil, fmt.Errorf("qemu: Templates %q: a comma cannot be in QEMU's option values", cfg.Templates)
	}
	if cfg.Templates != "" {
		t, err := filepath.Abs(cfg.Templates)
		if err != nil {
			return nil, fmt.Errorf("qemu: %w", err)
		}
		cfg.Templates = t
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	// Absolute: a guest's command line names its pid file, and adoption
	// knows it by that name (pidfile.go); QEMU's daemon also leaves the
	// working directory.
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("qemu: %w", err)
	}
	cfg.Dir = dir
	// The guests' disks and saved memory are nobody else's to read.
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("qemu: %w", err)
	}
	d := &Driver{cfg: cfg, hosts: map[string]agent.HostInfo{}, changes: make(chan agent.Change, 256), vms: map[string]*guest{},
		done: make(chan struct{})}
	for _, h := range cfg.Hosts {
		if h.Hypervisor == "" {
			h.Hypervisor = "qemu"
		}
		d.hosts[h.ID] = h
	}
	d.adopt()
	return d, nil
}

// Hosts lists the configured hosts.
func (d *Driver) Hosts() []agent.HostInfo {
	out := make([]agent.HostInfo, 0, len(d.hosts))
	for _, h := range d.cfg.Hosts {
		out = append(out, d.hosts[h.ID])
	}
	return out
}

// Changes signals power changes QEMU announced and process exits.
func (d *Driver) Changes() <-chan agent.Change { return d.changes }

// Accel says which accelerator guests run under.
func (d *Driver) Accel() string { return d.cfg.Accel }

func (d *Driver) signal(hostID, vmID string) {
	select {
	case d.changes <- agent.Change{HostID: hostID, VmID: vmID}:
	default: // the next report round carries it
	}
}

// guest is one VM: its definition and, while it runs, its process. host,
// suspended, rescued and proc are written under Driver.mu, which
// PowerStates reads them under; the rest is fixed.
type guest struct {
	id, host string
	spec     agent.VMSpec
	dir      string
	rescued  bool
	// suspended is set while the VM's memory sits in state.bin.
	suspended bool
	proc      *process
}

// setSuspended is written under d.mu: PowerStates and PowerState read it
// concurrently.
func (d *Driver) setSuspended(g *guest, v bool) {
	d.mu.Lock()
	g.suspended = v
	d.mu.Unlock()
}

// lookup returns the VM on host, or ErrUnknownVM.
func (d *Driver) lookup(hostID, vmID string) (*guest, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lookupLocked(hostID, vmID)
}

// lookupLocked is lookup with d.mu held.
func (d *Driver) lookupLocked(hostID, vmID string) (*guest, error) {
	if _, ok := d.hosts[hostID]; !ok {
		return nil, fmt.Errorf("host %s: %w", hostID, agent.ErrUnknownHost)
	}
	g, ok := d.vms[vmID]
	if !ok || g.host != hostID {
		return nil, fmt.Errorf("vm %s on %s: %w", vmID, hostID, agent.ErrUnknownVM)
	}
	return g, nil
}

// find is lookup for a command: a VM not in memory but recorded under
// Config.Dir for host (adoption found its lock held) is adopted first.
func (d *Driver) find(hostID, vmID string) (*guest, error) {
	g, err := d.lookup(hostID, vmID)
	if !errors.Is(err, agent.ErrUnknownVM) || !validID(vmID) {
		return g, err
	}
	dir := filepath.Join(d.cfg.Dir, vmID)
	if r, rerr := readRecord(dir); rerr == nil && r.Host == hostID {
		d.adoptOne(dir, r)
		return d.lookup(hostID, vmID)
	}
	return g, err
}

// maxIDLen bounds a VM id: it names a directory whose socket paths must
// fit the 107 bytes of a unix socket name.
const maxIDLen = 64

// validID keeps a VM id a single, plain directory name under Config.Dir:
// letters, digits and . _ : - only, not starting with . or -. The id comes
// from a Kafka record and ends up in paths that QEMU parses as options
// (a comma would split them) and in the suspend image's exec: migration,
// which a shell runs: nothing else may pass.
func validID(id string) bool {
	if id == "" || len(id) > maxIDLen || id[0] == '.' || id[0] == '-' {
		return false
	}
	for _, c := range []byte(id) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

// hold takes the VM's lock for a command that may start a process and
// returns the VM reconciled with what really runs (adopt.go): never trust
// memory alone before starting anything. With spec (Start) a new VM's
// directory and disk are made and the VM may be on any host; without, it
// must be on host. unlock releases the lock.
func (d *Driver) hold(ctx context.Context, hostID, vmID string, spec *agent.VMSpec) (g *guest, unlock func(), err error) {
	if _, ok := d.hosts[hostID]; !ok {
		return nil, nil, fmt.Errorf("host %s: %w", hostID, agent.ErrUnknownHost)
	}
	if !validID(vmID) {
		return nil, nil, fmt.Errorf("vm id %q: not a directory name", vmID)
	}
	dir := filepath.Join(d.cfg.Dir, vmID)
	if spec != nil {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, nil, fmt.Errorf("vm %s: %w", vmID, err)
		}
	} else if _, err := d.find(hostID, vmID); err != nil {
		return nil, nil, err
	}
	unlock, err = lockVM(ctx, dir)
	if err != nil {
		return nil, nil, err
	}
	g, err = d.held(ctx, hostID, vmID, dir, spec)
	if err != nil {
		unlock()
		return nil, nil, err
	}
	return g, unlock, nil
}

// held is hold's work once the lock is taken.
func (d *Driver) held(ctx context.Context, hostID, vmID, dir string, spec *agent.VMSpec) (*guest, error) {
	d.mu.Lock()
	g, known := d.vms[vmID]
	d.mu.Unlock()
	if !known {
		if r, err := readRecord(dir); err == nil {
			if _, ours := d.hosts[r.Host]; !ours {
				return nil, fmt.Errorf("vm %s belongs to host %s, not served here", vmID, r.Host)
			}
			g = guestOf(dir, r)
		} else if spec != nil {
			g = &guest{id: vmID, host: hostID, spec: *spec, dir: dir}
		} else {
			return nil, fmt.Errorf("vm %s on %s: %w", vmID, hostID, agent.ErrUnknownVM)
		}
	}
	if err := d.reconcile(ctx, g); err != nil {
		return nil, fmt.Errorf("vm %s: %w", vmID, err)
	}
	d.mu.Lock()
	elsewhere := g.host != hostID
	d.mu.Unlock()
	if spec == nil && elsewhere {
		return nil, fmt.Errorf("vm %s on %s: %w", vmID, hostID, agent.ErrUnknownVM)
	}
	d.mu.Lock()
	volumes := len(g.spec.Volumes) > 0 || (spec != nil && len(spec.Volumes) > 0)
	d.mu.Unlock()
	if _, err := os.Stat(filepath.Join(dir, "disk.qcow2")); !volumes && errors.Is(err, fs.ErrNotExist) {
		// A VM without volumes has a tiny disk of its own.
		if err := d.newDisk(ctx, g); err != nil {
			return nil, err
		}
	}
	if !known {
		d.mu.Lock()
		d.vms[vmID] = g
		d.mu.Unlock()
	}
	return g, nil
}

// newDisk makes a fresh qcow2 disk, replacing any old one only once the
// new one is complete.
func (d *Driver) newDisk(ctx context.Context, g *guest) error {
	disk := filepath.Join(g.dir, "disk.qcow2")
	out, err := exec.CommandContext(ctx, "qemu-img", "create", "-q", "-f", "qcow2", disk+".new", strconv.Itoa(d.cfg.DiskMB)+"M").CombinedOutput()
	if err == nil {
		err = os.Rename(disk+".new", disk)
	}
	if err != nil {
		return fmt.Errorf("disk of vm %s: %v: %s", g.id, err, out)
	}
	return nil
}

// Start powers the VM on: a VM that already runs on host (started by this
// driver, adopted, or started meanwhile by another agent on Config.Dir) is
// left alone, a suspended one is resumed from its saved memory. A VM that
// runs on another host is an error: never two copies of one VM.
func (d *Driver) Start(ctx context.Context, hostID string, spec agent.VMSpec) error {
	if err := checkSpec(spec); err != nil {
		return fmt.Errorf("start vm %s: %w", spec.ID, err)
	}
	g, unlock, err := d.hold(ctx, hostID, spec.ID, &spec)
	if err != nil {
		return fmt.Errorf("start vm %s: %w", spec.ID, err)
	}
	defer unlock()
	if p := d.procOf(g); p != nil && p.alive() {
		switch {
		case p.host != hostID:
			return fmt.Errorf("start vm %s on %s: it runs on host %s", spec.ID, hostID, p.host)
		case p.holdsGuest():
			return nil
		}
		// A guest that powered off, or what a migration left: it holds
		// nothing to keep.
		if err := d.quit(ctx, p); err != nil {
			return fmt.Errorf("start vm %s: %w", spec.ID, err)
		}
	}
	d.mu.Lock()
	g.host, g.spec = hostID, spec
	suspended := g.suspended
	d.mu.Unlock()
	// Written before QEMU starts: a guest is never found without the host
	// it belongs to.
	if err := d.save(g); err != nil {
		return fmt.Errorf("start vm %s: %w", spec.ID, err)
	}
	if suspended {
		if err := d.resume(ctx, g); err != nil {
			return fmt.Errorf("start vm %s: %w", spec.ID, err)
		}
		return nil
	}
	for _, v := range spec.Volumes {
		if err := d.ensureVolume(ctx, v); err != nil {
			return fmt.Errorf("start vm %s: %w", spec.ID, err)
		}
	}
	if err := d.launch(ctx, g, hostID, "", 0); err != nil {
		return fmt.Errorf("start vm %s: %w", spec.ID, err)
	}
	return nil
}

// PowerStates returns the power state of every VM on the host.
func (d *Driver) PowerStates(hostID string) (map[string]string, error) {
	if _, ok := d.hosts[hostID]; !ok {
		return nil, fmt.Errorf("power states: host %s: %w", hostID, agent.ErrUnknownHost)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]string{}
	for id, g := range d.vms {
		if g.host == hostID {
			out[id] = g.power()
		}
	}
	return out, nil
}

// PowerState returns one VM's power state.
func (d *Driver) PowerState(hostID, vmID string) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	g, err := d.lookupLocked(hostID, vmID)
	if err != nil {
		return "", fmt.Errorf("power state: %w", err)
	}
	return g.power(), nil
}

// power maps QEMU's run state to a power state.
func (g *guest) power() string {
	switch {
	case g.suspended:
		return schemas.PowerSusp
	case g.proc == nil || !g.proc.alive():
		return schemas.PowerOff
	}
	switch g.proc.getStatus() {
	case "running", "debug":
		return schemas.PowerOn
	case "paused", "suspended", "io-error", "watchdog", "save-vm", "restore-vm", "finish-migrate", "prelaunch":
		return schemas.PowerPaused
	case "shutdown", "guest-panicked", "postmigrate", "inmigrate":
		return schemas.PowerOff
	}
	return schemas.PowerUnknown
}

// procOf is g's process, nil when it has none.
func (d *Driver) procOf(g *guest) *process {
	d.mu.Lock()
	defer d.mu.Unlock()
	return g.proc
}

func (d *Driver) isSuspended(g *guest) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return g.suspended
}

// running returns the VM's process, or an error when it is not running.
func (d *Driver) running(hostID, vmID string) (*guest, *process, error) {
	g, err := d.find(hostID, vmID)
	if err != nil {
		return nil, nil, err
	}
	p := d.procOf(g)
	if p == nil || !p.alive() {
		return g, nil, fmt.Errorf("vm %s is not running", vmID)
	}
	return g, p, nil
}

// noOSStopWait is how long a graceful stop of a VM without volumes waits
// after the power button: the time it waited before guests booted Linux.
const noOSStopWait = 10 * time.Second

// Stop powers the VM off: ACPI power button and StopTimeout for the guest,
// then quit; at once with force.
func (d *Driver) Stop(ctx context.Context, hostID, vmID string, force bool) error {
	g, err := d.find(hostID, vmID)
	if err != nil {
		return fmt.Errorf("stop: %w", err)
	}
	if d.isSuspended(g) {
		// Powering a suspended VM off discards its saved memory.
		d.setSuspended(g, false)
		if err := d.save(g); err != nil {
			return fmt.Errorf("stop: %w", err)
		}
		_ = os.Remove(filepath.Join(g.dir, "state.bin")) // spent; a next Suspend writes it anew
		return nil
	}
	p := d.procOf(g)
	if p == nil || !p.alive() {
		return nil
	}
	d.mu.Lock()
	// A VM without volumes has no OS that could answer the button: the
	// firmware finds nothing to boot.
	wait := d.cfg.StopTimeout
	if len(g.spec.Volumes) == 0 {
		wait = min(wait, noOSStopWait)
	}
	d.mu.Unlock()
	if !force {
		if _, err := p.execute(ctx, "system_powerdown", nil); err == nil {
			select {
			case <-p.exited:
				return nil
			case <-time.After(wait):
			case <-ctx.Done():
				return fmt.Errorf("stop vm %s: %w", vmID, ctx.Err())
			}
		}
	}
	if err := d.quit(ctx, p); err != nil {
		return fmt.Errorf("stop vm %s: %w", vmID, err)
	}
	return nil
}

// Destroy powers the VM off and removes the given volumes' files, then its
// directory: a crash in between leaves the record, and the next Destroy
// finishes. A VM this driver has no directory of is unknown, its volumes'
// files removed all the same; one that another host holds is left alone.
func (d *Driver) Destroy(ctx context.Context, hostID, vmID string, volumes []schemas.Volume) error {
	if err := checkVolumes(volumes); err != nil {
		return fmt.Errorf("destroy vm %s: %w", vmID, err)
	}
	g, unlock, err := d.hold(ctx, hostID, vmID, nil)
	if errors.Is(err, agent.ErrUnknownVM) && validID(vmID) {
		if _, serr := os.Stat(filepath.Join(d.cfg.Dir, vmID)); errors.Is(serr, fs.ErrNotExist) {
			if rerr := removeVolumes(volumes); rerr != nil {
				return fmt.Errorf("destroy vm %s: %w", vmID, rerr)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("destroy: %w", err)
	}
	defer unlock()
	if p := d.procOf(g); p != nil && p.alive() {
		if err := d.quit(ctx, p); err != nil {
			return fmt.Errorf("destroy vm %s: %w", vmID, err)
		}
	}
	if err := removeVolumes(volumes); err != nil {
		return fmt.Errorf("destroy vm %s: %w", vmID, err)
	}
	d.mu.Lock()
	delete(d.vms, vmID)
	d.mu.Unlock()
	if err := os.RemoveAll(g.dir); err != nil {
		return fmt.Errorf("destroy vm %s: %w", vmID, err)
	}
	return nil
}

// removeVolumes removes volume files; one gone already is removed.
func removeVolumes(volumes []schemas.Volume) error {
	for _, v := range volumes {
		if err := os.Remove(volumePath(v)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("volume %s: %w", v.VolumeID, err)
		}
	}
	return nil
}

// Reboot resets the guest (system_reset); without an OS a guest reboot and
// a reset are the same thing.
func (d *Driver) Reboot(ctx context.Context, hostID, vmID string, hard bool) error {
	_, p, err := d.running(hostID, vmID)
	if err != nil {
		return fmt.Errorf("reboot: %w", err)
	}
	if _, err := p.execute(ctx, "system_reset", nil); err != nil {
		return fmt.Errorf("reboot vm %s: %w", vmID, err)
	}
	return nil
}

// Pause stops the vCPUs (QMP stop).
func (d *Driver) Pause(ctx context.Context, hostID, vmID string) error {
	_, p, err := d.running(hostID, vmID)
	if err != nil {
		return fmt.Errorf("pause: %w", err)
	}
	if _, err := p.execute(ctx, "stop", nil); err != nil {
		return fmt.Errorf("pause vm %s: %w", vmID, err)
	}
	p.refresh(ctx, "")
	return nil
}

// Unpause lets the vCPUs run again (QMP cont).
func (d *Driver) Unpause(ctx context.Context, hostID, vmID string) error {
	_, p, err := d.running(hostID, vmID)
	if err != nil {
		return fmt.Errorf("unpause: %w", err)
	}
	if _, err := p.execute(ctx, "cont", nil); err != nil {
		return fmt.Errorf("unpause vm %s: %w", vmID, err)
	}
	p.refresh(ctx, "")
	return nil
}

// Suspend saves the VM's memory to state.bin in its directory by migrating
// to a file (stop, migrate "exec:cat > state.bin", quit) — what libvirt's
// managed save does. The disk is untouched; Resume loads the image back.
// The record says suspended before QEMU quits, so that a crash in between
// leaves a guest whose memory is known to be saved (reconcile).
func (d *Driver) Suspend(ctx context.Context, hostID, vmID string) error {
	g, err := d.find(hostID, vmID)
	if err != nil {
		return fmt.Errorf("suspend: %w", err)
	}
	if d.isSuspended(g) {
		return nil
	}
	_, p, err := d.running(hostID, vmID)
	if err != nil {
		return fmt.Errorf("suspend: %w", err)
	}
	state := filepath.Join(g.dir, "state.bin")
	if _, err := p.execute(ctx, "stop", nil); err != nil {
		return fmt.Errorf("suspend vm %s: %w", vmID, err)
	}
	// Best effort, the cont after a failure: a guest left paused shows in
	// the next report.
	if err := migrateTo(ctx, p, "exec:cat > "+state); err != nil {
		_, _ = p.execute(ctx, "cont", nil)
		return fmt.Errorf("suspend vm %s: %w", vmID, err)
	}
	d.setSuspended(g, true)
	if err := d.save(g); err != nil {
		d.setSuspended(g, false)
		_, _ = p.execute(ctx, "cont", nil)
		return fmt.Errorf("suspend vm %s: %w", vmID, err)
	}
	d.quitLeftover(ctx, p) // the memory is saved: p holds nothing now
	return nil
}

// Resume starts QEMU from the saved memory and lets it run.
func (d *Driver) Resume(ctx context.Context, hostID, vmID string) error {
	g, unlock, err := d.hold(ctx, hostID, vmID, nil)
	if err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	defer unlock()
	if !d.isSuspended(g) {
		if p := d.procOf(g); p != nil && p.alive() {
			return nil
		}
		return fmt.Errorf("resume vm %s: not suspended", vmID)
	}
	if err := d.resume(ctx, g); err != nil {
		return fmt.Errorf("resume vm %s: %w", vmID, err)
	}
	return nil
}

// resume loads the saved memory into a new QEMU on g's host, with the VM's
// lock held. The record says suspended until the guest runs: a crash
// before leaves the memory in state.bin for the next try.
func (d *Driver) resume(ctx context.Context, g *guest) error {
	state := filepath.Join(g.dir, "state.bin")
	if err := d.launch(ctx, g, g.host, "exec:cat "+state, 0); err != nil {
		return err
	}
	p := d.procOf(g)
	err := waitIncoming(ctx, p)
	if err == nil {
		// The image was taken of a stopped guest: it comes back paused.
		_, err = p.execute(ctx, "cont", nil)
	}
	if err != nil {
		d.quitLeftover(ctx, p)
		return err
	}
	p.refresh(ctx, "")
	d.setSuspended(g, false)
	if err := d.save(g); err != nil {
		return err
	}
	_ = os.Remove(state) // spent; a next Suspend writes it anew
	return nil
}

// Rescue restarts the VM booting from the network (nothing answers, as a
// rescue image would), its own disk still attached.
func (d *Driver) Rescue(ctx context.Context, hostID, vmID, image string) error {
	return d.restart(ctx, hostID, vmID, func(g *guest) error { d.setRescued(g, true); return nil })
}

// Unrescue restarts the VM from its own disk.
func (d *Driver) Unrescue(ctx context.Context, hostID, vmID string) error {
	return d.restart(ctx, hostID, vmID, func(g *guest) error { d.setRescued(g, false); return nil })
}

func (d *Driver) setRescued(g *guest, v bool) {
	d.mu.Lock()
	g.rescued = v
	d.mu.Unlock()
}

// Rebuild makes the root volume's file again of its template (a fresh
// tiny disk for a VM without volumes) and boots it; image is the control
// plane's name for it, the template the root volume names is what the
// file is made of. volumes, when given, are the VM's disks from now on.
func (d *Driver) Rebuild(ctx context.Context, hostID, vmID, image string, volumes []schemas.Volume) error {
	if err := checkVolumes(volumes); err != nil {
		return fmt.Errorf("rebuild vm %s: %w", vmID, err)
	}
	return d.restart(ctx, hostID, vmID, func(g *guest) error {
		d.mu.Lock()
		if len(volumes) > 0 {
			g.spec.Volumes = slices.Clone(volumes)
		}
		vs := slices.Clone(g.spec.Volumes)
		d.mu.Unlock()
		root, ok := rootOf(vs)
		if !ok {
			return d.newDisk(ctx, g)
		}
		if err := d.makeVolume(ctx, root); err != nil {
			return fmt.Errorf("rebuild vm %s: %w", vmID, err)
		}
		for _, v := range vs {
			if err := d.ensureVolume(ctx, v); err != nil {
				return fmt.Errorf("rebuild vm %s: %w", vmID, err)
			}
		}
		return nil
	})
}

// restart powers the VM off, changes it and powers it on.
func (d *Driver) restart(ctx context.Context, hostID, vmID string, change func(*guest) error) error {
	g, unlock, err := d.hold(ctx, hostID, vmID, nil)
	if err != nil {
		return err
	}
	defer unlock()
	if p := d.procOf(g); p != nil && p.alive() {
		if err := d.quit(ctx, p); err != nil {
			return fmt.Errorf("restart vm %s: %w", vmID, err)
		}
	}
	if d.isSuspended(g) {
		d.setSuspended(g, false)
		_ = os.Remove(filepath.Join(g.dir, "state.bin")) // spent; a next Suspend writes it anew
	}
	if err := change(g); err != nil {
		return err
	}
	if err := d.save(g); err != nil {
		return fmt.Errorf("restart vm %s: %w", vmID, err)
	}
	if err := d.launch(ctx, g, hostID, "", 0); err != nil {
		return fmt.Errorf("restart vm %s: %w", vmID, err)
	}
	return nil
}

// Snapshot saves an internal snapshot (disk and memory) in the qcow2 disk
// with savevm; the guest keeps running. A name taken again is overwritten.
func (d *Driver) Snapshot(ctx context.Context, hostID, vmID, name string) error {
	_, p, err := d.running(hostID, vmID)
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	return humanMonitor(ctx, p, "snapshot vm "+vmID, "savevm "+strconv.Quote(name))
}

// RevertSnapshot applies a snapshot to the disk of an off VM with
// qemu-img snapshot -a, under the VM's lock so that no start races it:
// the disk is as it was when the snapshot was taken, and the next start
// boots from it (the memory the savevm kept is not restored: a revert is
// of the disk, as vmplane's revert of a Stopped VM is).
func (d *Driver) RevertSnapshot(ctx context.Context, hostID, vmID, name string) error {
	g, unlock, err := d.hold(ctx, hostID, vmID, nil)
	if err != nil {
		return fmt.Errorf("revert snapshot: %w", err)
	}
	defer unlock()
	if p := d.procOf(g); p != nil && p.alive() {
		return fmt.Errorf("revert snapshot of vm %s: the vm runs; stop it first", vmID)
	}
	names, err := d.Snapshots(ctx, hostID, vmID)
	if err != nil {
		return fmt.Errorf("revert snapshot: %w", err)
	}
	if !slices.Contains(names, name) {
		return fmt.Errorf("revert vm %s to %q: %w", vmID, name, agent.ErrUnknownSnapshot)
	}
	return qemuImgSnapshot(ctx, g, "-a", name)
}

// DeleteSnapshot removes a snapshot: with delvm while the guest runs, with
// qemu-img snapshot -d while it is off. One the disk does not have is
// deleted already.
func (d *Driver) DeleteSnapshot(ctx context.Context, hostID, vmID, name string) error {
	g, unlock, err := d.hold(ctx, hostID, vmID, nil)
	if err != nil {
		return fmt.Errorf("delete snapshot: %w", err)
	}
	defer unlock()
	names, err := d.Snapshots(ctx, hostID, vmID)
	if err != nil {
		return fmt.Errorf("delete snapshot: %w", err)
	}
	if !slices.Contains(names, name) {
		return nil
	}
	if p := d.procOf(g); p != nil && p.alive() {
		return humanMonitor(ctx, p, "delete snapshot of vm "+vmID, "delvm "+strconv.Quote(name))
	}
	return qemuImgSnapshot(ctx, g, "-d", name)
}

// humanMonitor runs one HMP command line; QEMU answers its failures as
// text, which becomes the error.
func humanMonitor(ctx context.Context, p *process, what, line string) error {
	ret, err := p.execute(ctx, "human-monitor-command", map[string]any{"command-line": line})
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	var msg string
	if err := json.Unmarshal(ret, &msg); err != nil {
		return fmt.Errorf("%s: monitor answer: %w", what, err)
	}
	if msg != "" {
		return fmt.Errorf("%s: %s", what, msg)
	}
	return nil
}

// qemuImgSnapshot runs qemu-img snapshot with flag (-a apply, -d delete)
// on each disk of an off guest that has the snapshot: a VM snapshot is one
// in each of its disks, and a disk attached after it has none.
func qemuImgSnapshot(ctx context.Context, g *guest, flag, name string) error {
	for _, disk := range g.disks() {
		names, err := fileSnapshots(ctx, disk)
		if err != nil {
			return err
		}
		if !slices.Contains(names, name) {
			continue
		}
		if err := qemuImg(ctx, "snapshot", flag, name, disk); err != nil {
			return fmt.Errorf("snapshot %q: %w", name, err)
		}
	}
	return nil
}

// disks are the files of g's disks, in device order; the first holds the
// VM snapshots' memory (savevm).
func (g *guest) disks() []string {
	if len(g.spec.Volumes) == 0 {
		return []string{filepath.Join(g.dir, "disk.qcow2")}
	}
	var out []string
	for _, v := range byDevice(g.spec.Volumes) {
		out = append(out, volumePath(v))
	}
	return out
}

// Snapshots lists the names of the VM's snapshots: those of its first
// disk, which savevm writes them all to.
func (d *Driver) Snapshots(ctx context.Context, hostID, vmID string) ([]string, error) {
	g, err := d.find(hostID, vmID)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	first := g.disks()[0]
	d.mu.Unlock()
	names, err := fileSnapshots(ctx, first)
	if err != nil {
		return nil, fmt.Errorf("vm %s: %w", vmID, err)
	}
	return names, nil
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := range len(s) {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// Close quits every guest of the driver and stops watching them: the
// clean shutdown of the dev stack, whose guests should not outlive it. An
// agent that ends without Close — killed, crashed, or exiting to be
// upgraded — leaves its guests running, and the next driver on Config.Dir
// adopts them. The agent calls nothing afterwards.
func (d *Driver) Close() {
	d.mu.Lock()
	var procs []*process
	for _, g := range d.vms {
		if g.proc != nil && g.proc.alive() {
			procs = append(procs, g.proc)
		}
	}
	d.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Go(func() { d.quitLeftover(ctx, p) })
	}
	wg.Wait()
	d.closeOnce.Do(func() { close(d.done) })
}
