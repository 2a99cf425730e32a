package qemu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
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
	// Dir holds one directory per VM (disk, sockets, suspend image); it
	// plays the storage the hosts share, so a VM migrates without copying
	// its disk. Keep it short: unix socket paths are limited to 107 bytes.
	Dir string
	// Binary is the QEMU system emulator (default qemu-system-x86_64).
	Binary string
	// Accel is kvm or tcg; empty picks kvm when /dev/kvm can be opened.
	Accel string
	// GuestMemoryMB caps the memory each guest really gets (default 32),
	// whatever its offering says: guests run no OS, and tests run many.
	GuestMemoryMB int64
	// DiskMB is the size of each VM's qcow2 disk (default 16).
	DiskMB int
	// StopTimeout is how long a graceful stop waits for the guest to power
	// off before QEMU is told to quit (default 10 s).
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
}

var _ agent.Driver = (*Driver)(nil)

// New returns a driver; it starts nothing until a VM is started.
func New(cfg Config) (*Driver, error) {
	if len(cfg.Hosts) == 0 || cfg.Dir == "" {
		return nil, errors.New("qemu: Hosts and Dir are required")
	}
	if cfg.Binary == "" {
		cfg.Binary = "qemu-system-x86_64"
	}
	if _, err := exec.LookPath(cfg.Binary); err != nil {
		return nil, fmt.Errorf("qemu: %w", err)
	}
	if cfg.Accel == "" {
		cfg.Accel = "tcg"
		if f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0); err == nil {
			f.Close()
			cfg.Accel = "kvm"
		}
	}
	if cfg.GuestMemoryMB <= 0 {
		cfg.GuestMemoryMB = 32
	}
	if cfg.DiskMB <= 0 {
		cfg.DiskMB = 16
	}
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("qemu: %w", err)
	}
	d := &Driver{cfg: cfg, hosts: map[string]agent.HostInfo{}, changes: make(chan agent.Change, 256), vms: map[string]*guest{}}
	for _, h := range cfg.Hosts {
		if h.Hypervisor == "" {
			h.Hypervisor = "qemu"
		}
		d.hosts[h.ID] = h
	}
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

// guest is one VM: its definition and, while it runs, its process.
type guest struct {
	id, host string
	spec     agent.VMSpec
	dir      string
	rescued  bool
	// suspended is set while the VM's memory sits in state.bin.
	suspended bool
	proc      *process
}

// process is one running QEMU.
type process struct {
	cmd    *exec.Cmd
	qmp    *Client
	exited chan struct{}
	// status is the last run state QEMU reported (running, paused, …).
	mu     sync.Mutex
	status string
	// refreshing serializes refresh: the driver's calls (after stop,
	// cont, …) and the watcher's (after a STOP or RESUME event, which may
	// arrive after a later command's answer) each ask and set in turn, so
	// an earlier answer never overwrites a later one.
	refreshing sync.Mutex
}

func (p *process) setStatus(s string) {
	p.mu.Lock()
	p.status = s
	p.mu.Unlock()
}

func (p *process) getStatus() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status
}

func (p *process) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
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

// define returns the VM, creating its directory and disk the first time.
func (d *Driver) define(ctx context.Context, hostID string, spec agent.VMSpec) (*guest, error) {
	if _, ok := d.hosts[hostID]; !ok {
		return nil, fmt.Errorf("host %s: %w", hostID, agent.ErrUnknownHost)
	}
	d.mu.Lock()
	g, ok := d.vms[spec.ID]
	d.mu.Unlock()
	if ok {
		if g.host != hostID {
			return nil, fmt.Errorf("vm %s is on host %s, not %s", spec.ID, g.host, hostID)
		}
		return g, nil
	}
	g = &guest{id: spec.ID, host: hostID, spec: spec, dir: filepath.Join(d.cfg.Dir, spec.ID)}
	if err := os.MkdirAll(g.dir, 0o755); err != nil {
		return nil, fmt.Errorf("define vm %s: %w", spec.ID, err)
	}
	if err := d.newDisk(ctx, g); err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.vms[spec.ID] = g
	d.mu.Unlock()
	return g, nil
}

// newDisk makes a fresh qcow2 disk, replacing any old one.
func (d *Driver) newDisk(ctx context.Context, g *guest) error {
	out, err := exec.CommandContext(ctx, "qemu-img", "create", "-q", "-f", "qcow2", filepath.Join(g.dir, "disk.qcow2"), strconv.Itoa(d.cfg.DiskMB)+"M").CombinedOutput()
	if err != nil {
		return fmt.Errorf("disk of vm %s: %v: %s", g.id, err, out)
	}
	return nil
}

// Start powers the VM on; a running VM is left alone, a suspended one is
// resumed from its saved memory.
func (d *Driver) Start(ctx context.Context, hostID string, spec agent.VMSpec) error {
	g, err := d.define(ctx, hostID, spec)
	if err != nil {
		return fmt.Errorf("start vm %s: %w", spec.ID, err)
	}
	if g.proc != nil && g.proc.alive() {
		return nil
	}
	if g.suspended {
		return d.Resume(ctx, hostID, spec.ID)
	}
	if err := d.launch(ctx, g, hostID, ""); err != nil {
		return fmt.Errorf("start vm %s: %w", spec.ID, err)
	}
	return nil
}

// launch starts QEMU for g on host; incoming, when set, makes it wait for
// a migration stream from that URI instead of booting.
func (d *Driver) launch(ctx context.Context, g *guest, host, incoming string) error {
	ctl := filepath.Join(g.dir, host+".qmp")
	ext := filepath.Join(g.dir, "ext.qmp")
	if incoming != "" {
		ext = filepath.Join(g.dir, host+"-ext.qmp")
	}
	os.Remove(ctl)
	os.Remove(ext)
	args := []string{
		"-nodefaults", "-nographic", "-no-user-config",
		"-name", g.id,
		"-machine", "pc,accel=" + d.cfg.Accel,
		"-m", strconv.FormatInt(d.cfg.GuestMemoryMB, 10), "-smp", "1",
		"-serial", "none", "-parallel", "none", "-monitor", "none",
		// Our monitor, and a second one for operators: an out-of-band
		// quit or stop there is seen through our monitor's events.
		"-qmp", "unix:" + ctl + ",server=on,wait=off",
		"-qmp", "unix:" + ext + ",server=on,wait=off",
		"-drive", "file=" + filepath.Join(g.dir, "disk.qcow2") + ",format=qcow2,if=ide,index=0",
	}
	if g.rescued {
		args = append(args, "-boot", "order=n")
	}
	if incoming != "" {
		args = append(args, "-incoming", incoming)
	}
	cmd := exec.Command(d.cfg.Binary, args...)
	logf, _ := os.Create(filepath.Join(g.dir, host+".log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("run %s: %w", d.cfg.Binary, err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		if logf != nil {
			logf.Close()
		}
		close(p.exited)
	}()
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	qmp, err := dialWhileAlive(dctx, ctl, p)
	if err != nil {
		cmd.Process.Kill()
		return err
	}
	p.qmp = qmp
	p.refresh(ctx, "")
	d.mu.Lock()
	g.proc = p
	d.mu.Unlock()
	go d.watch(g, host, p)
	return nil
}

func dialWhileAlive(ctx context.Context, path string, p *process) (*Client, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-p.exited:
			cancel()
		case <-ctx.Done():
		}
	}()
	c, err := Dial(ctx, path)
	if err != nil && !p.alive() {
		return nil, fmt.Errorf("qemu exited at start (see %s): %w", filepath.Dir(path), err)
	}
	return c, err
}

// watch turns QMP events and the process's exit into Changes.
func (d *Driver) watch(g *guest, host string, p *process) {
	for {
		select {
		case ev, ok := <-p.qmp.Events():
			if !ok {
				<-p.exited
				d.signal(host, g.id)
				return
			}
			switch ev.Name {
			case "STOP":
				p.refreshAfterEvent("paused")
			case "RESUME":
				p.refreshAfterEvent("running")
			case "SHUTDOWN", "POWERDOWN", "RESET":
			default:
				continue
			}
			d.signal(host, g.id)
		case <-p.exited:
			p.qmp.Close()
			d.signal(host, g.id)
			return
		}
	}
}

// refreshAfterEvent re-reads the run state after a STOP or RESUME event
// rather than taking the event's word: the event may be older than the
// answer of a command sent since (a pause's STOP handled after the unpause).
func (p *process) refreshAfterEvent(implied string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p.refresh(ctx, implied)
}

// refresh asks QEMU for its run state and records it; when QEMU does not
// answer (it is exiting), it records fallback.
func (p *process) refresh(ctx context.Context, fallback string) {
	p.refreshing.Lock()
	defer p.refreshing.Unlock()
	status, err := p.queryStatus(ctx)
	if err != nil {
		status = fallback
	}
	p.setStatus(status)
}

// queryStatus asks QEMU for its run state (running, paused, inmigrate, …).
func (p *process) queryStatus(ctx context.Context) (string, error) {
	ret, err := p.qmp.Execute(ctx, "query-status", nil)
	if err != nil {
		return "", err
	}
	var st struct {
		Status string `json:"status"`
	}
	json.Unmarshal(ret, &st)
	return st.Status, nil
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

// running returns the VM's process, or an error when it is not running.
func (d *Driver) running(hostID, vmID string) (*guest, *process, error) {
	g, err := d.lookup(hostID, vmID)
	if err != nil {
		return nil, nil, err
	}
	if g.proc == nil || !g.proc.alive() {
		return g, nil, fmt.Errorf("vm %s is not running", vmID)
	}
	return g, g.proc, nil
}

// Stop powers the VM off: ACPI power button and StopTimeout for the guest,
// then quit; at once with force.
func (d *Driver) Stop(ctx context.Context, hostID, vmID string, force bool) error {
	g, err := d.lookup(hostID, vmID)
	if err != nil {
		return fmt.Errorf("stop: %w", err)
	}
	if g.suspended {
		// Powering a suspended VM off discards its saved memory.
		os.Remove(filepath.Join(g.dir, "state.bin"))
		d.setSuspended(g, false)
		return nil
	}
	p := g.proc
	if p == nil || !p.alive() {
		return nil
	}
	if !force {
		if _, err := p.qmp.Execute(ctx, "system_powerdown", nil); err == nil {
			select {
			case <-p.exited:
				return nil
			case <-time.After(d.cfg.StopTimeout):
			case <-ctx.Done():
				return fmt.Errorf("stop vm %s: %w", vmID, ctx.Err())
			}
		}
	}
	return d.quit(ctx, p)
}

// quit ends a process: QMP quit, then a kill if it lingers.
func (d *Driver) quit(ctx context.Context, p *process) error {
	p.qmp.Execute(ctx, "quit", nil) // the answer may race the exit
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
	}
	return nil
}

// Destroy powers the VM off and removes its directory.
func (d *Driver) Destroy(ctx context.Context, hostID, vmID string) error {
	g, err := d.lookup(hostID, vmID)
	if err != nil {
		return fmt.Errorf("destroy: %w", err)
	}
	if g.proc != nil && g.proc.alive() {
		d.quit(ctx, g.proc)
	}
	d.mu.Lock()
	delete(d.vms, vmID)
	d.mu.Unlock()
	if err := os.RemoveAll(g.dir); err != nil {
		return fmt.Errorf("destroy vm %s: %w", vmID, err)
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
	if _, err := p.qmp.Execute(ctx, "system_reset", nil); err != nil {
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
	if _, err := p.qmp.Execute(ctx, "stop", nil); err != nil {
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
	if _, err := p.qmp.Execute(ctx, "cont", nil); err != nil {
		return fmt.Errorf("unpause vm %s: %w", vmID, err)
	}
	p.refresh(ctx, "")
	return nil
}

// Suspend saves the VM's memory to state.bin in its directory by migrating
// to a file (stop, migrate "exec:cat > state.bin", quit) — what libvirt's
// managed save does. The disk is untouched; Resume loads the image back.
func (d *Driver) Suspend(ctx context.Context, hostID, vmID string) error {
	g, err := d.lookup(hostID, vmID)
	if err != nil {
		return fmt.Errorf("suspend: %w", err)
	}
	if g.suspended {
		return nil
	}
	_, p, err := d.running(hostID, vmID)
	if err != nil {
		return fmt.Errorf("suspend: %w", err)
	}
	state := filepath.Join(g.dir, "state.bin")
	if _, err := p.qmp.Execute(ctx, "stop", nil); err != nil {
		return fmt.Errorf("suspend vm %s: %w", vmID, err)
	}
	if err := migrateTo(ctx, p, "exec:cat > "+state); err != nil {
		p.qmp.Execute(ctx, "cont", nil)
		return fmt.Errorf("suspend vm %s: %w", vmID, err)
	}
	d.setSuspended(g, true)
	d.quit(ctx, p)
	return nil
}

// Resume starts QEMU from the saved memory and lets it run.
func (d *Driver) Resume(ctx context.Context, hostID, vmID string) error {
	g, err := d.lookup(hostID, vmID)
	if err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	if !g.suspended {
		if g.proc != nil && g.proc.alive() {
			return nil
		}
		return fmt.Errorf("resume vm %s: not suspended", vmID)
	}
	state := filepath.Join(g.dir, "state.bin")
	if err := d.launch(ctx, g, hostID, "exec:cat "+state); err != nil {
		return fmt.Errorf("resume vm %s: %w", vmID, err)
	}
	if err := waitIncoming(ctx, g.proc); err != nil {
		return fmt.Errorf("resume vm %s: %w", vmID, err)
	}
	// The image was taken of a stopped guest: it comes back paused.
	if _, err := g.proc.qmp.Execute(ctx, "cont", nil); err != nil {
		return fmt.Errorf("resume vm %s: %w", vmID, err)
	}
	g.proc.refresh(ctx, "")
	d.setSuspended(g, false)
	os.Remove(state)
	return nil
}

// Rescue restarts the VM booting from the network (nothing answers, as a
// rescue image would), its own disk still attached.
func (d *Driver) Rescue(ctx context.Context, hostID, vmID, image string) error {
	return d.restart(ctx, hostID, vmID, func(g *guest) error { g.rescued = true; return nil })
}

// Unrescue restarts the VM from its own disk.
func (d *Driver) Unrescue(ctx context.Context, hostID, vmID string) error {
	return d.restart(ctx, hostID, vmID, func(g *guest) error { g.rescued = false; return nil })
}

// Rebuild replaces the disk with a fresh one and boots it; the image name
// is not used, guests have no OS.
func (d *Driver) Rebuild(ctx context.Context, hostID, vmID, image string) error {
	return d.restart(ctx, hostID, vmID, func(g *guest) error {
		os.Remove(filepath.Join(g.dir, "disk.qcow2"))
		return d.newDisk(ctx, g)
	})
}

// restart powers the VM off, changes it and powers it on.
func (d *Driver) restart(ctx context.Context, hostID, vmID string, change func(*guest) error) error {
	g, err := d.lookup(hostID, vmID)
	if err != nil {
		return err
	}
	if g.proc != nil && g.proc.alive() {
		d.quit(ctx, g.proc)
	}
	d.setSuspended(g, false)
	if err := change(g); err != nil {
		return err
	}
	if err := d.launch(ctx, g, hostID, ""); err != nil {
		return fmt.Errorf("restart vm %s: %w", vmID, err)
	}
	return nil
}

// Snapshot saves an internal snapshot (disk and memory) in the qcow2 disk
// with savevm; the guest keeps running.
func (d *Driver) Snapshot(ctx context.Context, hostID, vmID, name string) error {
	_, p, err := d.running(hostID, vmID)
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	ret, err := p.qmp.Execute(ctx, "human-monitor-command", map[string]any{"command-line": "savevm " + strconv.Quote(name)})
	if err != nil {
		return fmt.Errorf("snapshot vm %s: %w", vmID, err)
	}
	var msg string
	json.Unmarshal(ret, &msg)
	if msg != "" {
		return fmt.Errorf("snapshot vm %s: %s", vmID, msg)
	}
	return nil
}

// Snapshots lists the names of the VM's snapshots.
func (d *Driver) Snapshots(ctx context.Context, hostID, vmID string) ([]string, error) {
	g, err := d.lookup(hostID, vmID)
	if err != nil {
		return nil, err
	}
	out, err := exec.CommandContext(ctx, "qemu-img", "snapshot", "-U", "-l", filepath.Join(g.dir, "disk.qcow2")).Output()
	if err != nil {
		return nil, fmt.Errorf("snapshots of vm %s: %w", vmID, err)
	}
	var names []string
	lines := splitLines(string(out))
	for _, l := range lines[min(2, len(lines)):] {
		var id, tag string
		if n, _ := fmt.Sscan(l, &id, &tag); n == 2 {
			names = append(names, tag)
		}
	}
	sort.Strings(names)
	return names, nil
}

// Migrate moves a running VM live between two hosts of this driver: QEMU
// on the destination waits on a local TCP port (-incoming), the source
// streams its memory there, and the source quits once the destination
// runs. The disk stays where it is (shared storage).
func (d *Driver) Migrate(ctx context.Context, srcHostID, vmID, dstHostID string, spec agent.VMSpec) error {
	if _, ok := d.hosts[dstHostID]; !ok {
		return fmt.Errorf("migrate vm %s: host %s: %w", vmID, dstHostID, agent.ErrUnknownHost)
	}
	g, src, err := d.running(srcHostID, vmID)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	port, err := freePort()
	if err != nil {
		return fmt.Errorf("migrate vm %s: %w", vmID, err)
	}
	uri := "tcp:127.0.0.1:" + strconv.Itoa(port)
	dst := &guest{id: g.id, host: dstHostID, spec: g.spec, dir: g.dir, rescued: g.rescued}
	if err := d.launch(ctx, dst, dstHostID, uri); err != nil {
		return fmt.Errorf("migrate vm %s: destination: %w", vmID, err)
	}
	if err := migrateTo(ctx, src, uri); err != nil {
		d.quit(ctx, dst.proc)
		return fmt.Errorf("migrate vm %s to %s: %w", vmID, dstHostID, err)
	}
	if err := waitIncoming(ctx, dst.proc); err != nil {
		d.quit(ctx, dst.proc)
		src.qmp.Execute(ctx, "cont", nil)
		return fmt.Errorf("migrate vm %s to %s: %w", vmID, dstHostID, err)
	}
	dst.proc.refresh(ctx, "")
	d.mu.Lock()
	d.vms[vmID] = dst
	d.mu.Unlock()
	d.quit(ctx, src)
	d.signal(srcHostID, vmID)
	return nil
}

// migrateTo streams the VM to uri and waits for the end.
func migrateTo(ctx context.Context, p *process, uri string) error {
	if _, err := p.qmp.Execute(ctx, "migrate", map[string]any{"uri": uri}); err != nil {
		return err
	}
	for {
		ret, err := p.qmp.Execute(ctx, "query-migrate", nil)
		if err != nil {
			return err
		}
		var st struct {
			Status    string `json:"status"`
			ErrorDesc string `json:"error-desc"`
		}
		json.Unmarshal(ret, &st)
		switch st.Status {
		case "completed":
			return nil
		case "failed", "cancelled":
			return fmt.Errorf("migration %s: %s", st.Status, st.ErrorDesc)
		}
		select {
		case <-ctx.Done():
			p.qmp.Execute(context.Background(), "migrate_cancel", nil)
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitIncoming waits until a QEMU started with -incoming has loaded the
// stream: its status leaves inmigrate.
func waitIncoming(ctx context.Context, p *process) error {
	for {
		status, err := p.queryStatus(ctx)
		if err != nil {
			return err
		}
		if status != "inmigrate" {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.exited:
			return errors.New("destination exited")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
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

// Close quits every guest; the agent calls nothing afterwards.
func (d *Driver) Close() {
	d.mu.Lock()
	gs := make([]*guest, 0, len(d.vms))
	for _, g := range d.vms {
		gs = append(gs, g)
	}
	d.mu.Unlock()
	for _, g := range gs {
		if g.proc != nil && g.proc.alive() {
			d.quit(context.Background(), g.proc)
		}
	}
}
