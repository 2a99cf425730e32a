package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/vmplane/vmplane/producers/agent"
	"github.com/vmplane/vmplane/schemas"
)

// ErrInjected is the failure the simulator injects at Config.FailureRate.
var ErrInjected = errors.New("sim: injected failure")

// power is a VM power state in one byte; the schemas strings are made only
// when reporting.
type power uint8

const (
	powerOff power = iota
	powerOn
	powerPaused
	powerSuspended
)

var powerNames = [...]string{powerOff: schemas.PowerOff, powerOn: schemas.PowerOn, powerPaused: schemas.PowerPaused, powerSuspended: schemas.PowerSusp}

func parsePower(s string) (power, bool) {
	for p, n := range powerNames {
		if n == s {
			return power(p), true
		}
	}
	return 0, false
}

// vm is one simulated VM; the name is not kept since nothing reads it back.
type vm struct {
	id       string
	memoryMB uint32
	cpu      uint16
	power    power
	rescued  bool
}

type host struct {
	info agent.HostInfo

	mu          sync.Mutex
	crashed     bool
	partitioned bool
	vms         []vm
	index       map[string]int32 // vm id -> position in vms
	where       *where           // the driver's, kept by add and remove
	// ledgers are the VMs' command ledgers (agent.Ledger); they outlive
	// the VMs, as a hypervisor's disk does.
	ledgers map[string]agent.Ledger
	// snapshots are the names of each VM's snapshots, oldest first; a
	// VM without any has no entry. They are the VM's disk's, so they go
	// where it migrates and with its destroy.
	snapshots map[string][]string
	// disks are the volumes and NICs of each VM that has any (volumes.go);
	// nil while no VM of the host has.
	disks map[string]*disks
	// upSince is when the host last recovered from a crash, Unix ms.
	upSince int64
}

// Driver is the simulated hypervisor; it implements agent.Driver.
type Driver struct {
	cfg     Config
	hosts   map[string]*host
	order   []string // host ids in configuration order
	changes chan agent.Change
	state   *stateFile // nil without Config.StateFile
	where   *where

	rmu sync.Mutex
	rnd *rand.Rand
}

var _ agent.Driver = (*Driver)(nil)

// New builds a simulated hypervisor with the configured hosts, all up and
// empty, or as the state file left them.
func New(cfg Config) (*Driver, error) {
	infos, err := cfg.hosts()
	if err != nil {
		return nil, err
	}
	if cfg.Jitter < 0 || cfg.Jitter > 1 {
		return nil, fmt.Errorf("sim: jitter %v outside 0..1", cfg.Jitter)
	}
	for _, r := range cfg.FailureRate.all() {
		if r < 0 || r > 1 {
			return nil, fmt.Errorf("sim: failure rate %v outside 0..1", r)
		}
	}
	if cfg.ChangeBuffer <= 0 {
		cfg.ChangeBuffer = 1024
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	d := &Driver{
		cfg:     cfg,
		hosts:   make(map[string]*host, len(infos)),
		order:   make([]string, len(infos)),
		changes: make(chan agent.Change, cfg.ChangeBuffer),
		where:   &where{},
		rnd:     rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
	}
	for i, info := range infos {
		d.hosts[info.ID] = &host{info: info, where: d.where}
		d.order[i] = info.ID
	}
	if cfg.StateFile != "" {
		if err := os.MkdirAll(filepath.Dir(cfg.StateFile), 0o755); err != nil {
			return nil, fmt.Errorf("sim: state dir: %w", err)
		}
		d.state = &stateFile{path: cfg.StateFile}
		if err := d.load(); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// Hosts lists the simulated hosts in configuration order.
func (d *Driver) Hosts() []agent.HostInfo {
	out := make([]agent.HostInfo, len(d.order))
	for i, id := range d.order {
		out[i] = d.hosts[id].info
	}
	return out
}

// Changes signals out-of-band power changes (see OutOfBand).
func (d *Driver) Changes() <-chan agent.Change { return d.changes }

// Start defines the VM if needed and powers it on.
func (d *Driver) Start(ctx context.Context, hostID string, spec agent.VMSpec) (err error) {
	defer d.persist(&err)
	h, err := d.operate(ctx, hostID, d.cfg.Latency.Start)
	if err != nil {
		return fmt.Errorf("start vm %s: %w", spec.ID, err)
	}
	defer h.mu.Unlock()
	if d.fail(d.cfg.FailureRate.Start) {
		return fmt.Errorf("start vm %s on %s: %w", spec.ID, hostID, ErrInjected)
	}
	i, ok := h.index[spec.ID]
	if !ok {
		h.add(vm{id: spec.ID})
		i = h.index[spec.ID]
	}
	v := &h.vms[i]
	v.cpu, v.memoryMB, v.power = uint16(spec.CPU), uint32(spec.MemoryMB), powerOn
	h.started(spec.ID, spec.Volumes, spec.Nics)
	return nil
}

// Stop powers a VM off; the simulator does not tell a guest shutdown from a
// forced one.
func (d *Driver) Stop(ctx context.Context, hostID, vmID string, force bool) (err error) {
	defer d.persist(&err)
	h, err := d.operate(ctx, hostID, d.cfg.Latency.Stop)
	if err != nil {
		return fmt.Errorf("stop vm %s: %w", vmID, err)
	}
	defer h.mu.Unlock()
	i, ok := h.index[vmID]
	if !ok {
		return fmt.Errorf("stop vm %s on %s: %w", vmID, hostID, agent.ErrUnknownVM)
	}
	if d.fail(d.cfg.FailureRate.Stop) {
		return fmt.Errorf("stop vm %s on %s: %w", vmID, hostID, ErrInjected)
	}
	h.vms[i].power = powerOff
	return nil
}

// Destroy removes a VM.
func (d *Driver) Destroy(ctx context.Context, hostID, vmID string, volumes []schemas.Volume) (err error) {
	defer d.persist(&err)
	h, err := d.operate(ctx, hostID, d.cfg.Latency.Destroy)
	if err != nil {
		return fmt.Errorf("destroy vm %s: %w", vmID, err)
	}
	defer h.mu.Unlock()
	i, ok := h.index[vmID]
	if !ok {
		return fmt.Errorf("destroy vm %s on %s: %w", vmID, hostID, agent.ErrUnknownVM)
	}
	if d.fail(d.cfg.FailureRate.Destroy) {
		return fmt.Errorf("destroy vm %s on %s: %w", vmID, hostID, ErrInjected)
	}
	h.remove(i)
	delete(h.snapshots, vmID)
	delete(h.disks, vmID)
	return nil
}

// PowerStates returns every VM's power state on a reachable host.
func (d *Driver) PowerStates(hostID string) (map[string]string, error) {
	h, err := d.observed(hostID)
	if err != nil {
		return nil, fmt.Errorf("power states: %w", err)
	}
	defer h.mu.Unlock()
	out := make(map[string]string, len(h.vms))
	for _, v := range h.vms {
		out[v.id] = powerNames[v.power]
	}
	return out, nil
}

// PowerState returns one VM's power state on a reachable host.
func (d *Driver) PowerState(hostID, vmID string) (string, error) {
	h, err := d.observed(hostID)
	if err != nil {
		return "", fmt.Errorf("power state: %w", err)
	}
	defer h.mu.Unlock()
	i, ok := h.index[vmID]
	if !ok {
		return "", fmt.Errorf("power state of vm %s on %s: %w", vmID, hostID, agent.ErrUnknownVM)
	}
	return powerNames[h.vms[i].power], nil
}

// Ledger returns the VM's command ledger on a reachable host.
func (d *Driver) Ledger(hostID, vmID string) (agent.Ledger, error) {
	h, err := d.observed(hostID)
	if err != nil {
		return agent.Ledger{}, fmt.Errorf("ledger: %w", err)
	}
	defer h.mu.Unlock()
	l := h.ledgers[vmID]
	l.Done = slices.Clone(l.Done)
	return l, nil
}

// UpSince is when a reachable host last recovered from a crash.
func (d *Driver) UpSince(hostID string) (int64, error) {
	h, err := d.observed(hostID)
	if err != nil {
		return 0, fmt.Errorf("up since: %w", err)
	}
	defer h.mu.Unlock()
	return h.upSince, nil
}

// SetLedger replaces the VM's command ledger on a reachable host.
func (d *Driver) SetLedger(hostID, vmID string, l agent.Ledger) (err error) {
	defer d.persist(&err)
	h, err := d.observed(hostID)
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	defer h.mu.Unlock()
	if h.ledgers == nil {
		h.ledgers = map[string]agent.Ledger{}
	}
	l.Done = slices.Clone(l.Done)
	h.ledgers[vmID] = l
	return nil
}

// observed returns the host locked and reachable, for reading its VMs'
// states; the caller unlocks it.
func (d *Driver) observed(hostID string) (*host, error) {
	h, ok := d.hosts[hostID]
	if !ok {
		return nil, fmt.Errorf("host %s: %w", hostID, agent.ErrUnknownHost)
	}
	h.mu.Lock()
	if err := h.reachable(); err != nil {
		h.mu.Unlock()
		return nil, err
	}
	return h, nil
}

// operate waits the operation's latency, then returns the host locked and
// reachable. The wait happens before the lock so that slow operations on one
// host run side by side, as on a real hypervisor.
func (d *Driver) operate(ctx context.Context, hostID string, latency time.Duration) (*host, error) {
	h, ok := d.hosts[hostID]
	if !ok {
		return nil, fmt.Errorf("host %s: %w", hostID, agent.ErrUnknownHost)
	}
	if wait := d.jittered(latency); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
	h.mu.Lock()
	if err := h.reachable(); err != nil {
		h.mu.Unlock()
		return nil, err
	}
	return h, nil
}

func (h *host) reachable() error {
	switch {
	case h.crashed:
		return fmt.Errorf("host %s crashed: %w", h.info.ID, agent.ErrHostUnreachable)
	case h.partitioned:
		return fmt.Errorf("host %s partitioned: %w", h.info.ID, agent.ErrHostUnreachable)
	}
	return nil
}

func (d *Driver) jittered(base time.Duration) time.Duration {
	if base <= 0 || d.cfg.Jitter == 0 {
		return base
	}
	d.rmu.Lock()
	f := d.rnd.Float64()
	d.rmu.Unlock()
	return base + time.Duration((2*f-1)*d.cfg.Jitter*float64(base))
}

func (d *Driver) fail(rate float64) bool {
	if rate <= 0 {
		return false
	}
	d.rmu.Lock()
	defer d.rmu.Unlock()
	return d.rnd.Float64() < rate
}
