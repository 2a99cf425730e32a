package roles

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/vmplane/vmplane/producers/agent"
	"github.com/vmplane/vmplane/producers/agent/driver/qemu"
	"github.com/vmplane/vmplane/producers/agent/driver/sim"
)

// SimLayout is the shape of a simulated zone.
type SimLayout struct {
	Prefix, Zone          string
	Pods, Clusters, Hosts int // Hosts in all, spread over Pods × Clusters
	CPU                   int32
	MemoryMB              int64
	// StateDir keeps the simulated hosts (sim-<agent id>.json) and the
	// agent's answers across restarts; empty: memory only.
	StateDir string
	// Latency is how long each simulated operation takes (zero: at once).
	Latency sim.Durations
}

// SimAgent is an agent serving simulated hosts, with its simulator at hand
// for the controls (crash a host, pause a VM behind vmplane's back).
type SimAgent struct {
	*agent.Agent
	Driver *sim.Driver
}

// NewSimAgent returns an agent serving simulated hosts.
func NewSimAgent(o Options, l SimLayout, s Settings) (*SimAgent, error) {
	clusters := max(l.Pods*l.Clusters, 1)
	perCluster := max((l.Hosts+clusters-1)/clusters, 1)
	if l.CPU == 0 {
		l.CPU = 16
	}
	if l.MemoryMB == 0 {
		l.MemoryMB = 65536
	}
	id := o.InstanceID + "-" + l.Prefix
	var stateFile string
	if l.StateDir != "" {
		stateFile = filepath.Join(l.StateDir, "sim-"+id+".json")
	}
	d, err := sim.New(sim.Config{Layout: sim.Layout{
		Prefix: l.Prefix, Zone: l.Zone, Pods: max(l.Pods, 1), ClustersPerPod: max(l.Clusters, 1),
		HostsPerCluster: perCluster, CPU: l.CPU, MemoryMB: l.MemoryMB,
	}, StateFile: stateFile, Latency: l.Latency})
	if err != nil {
		return nil, err
	}
	a := agent.New(agent.Config{ID: id, Kafka: o.Kafka, PingInterval: s.PingInterval, Logger: o.Logger, DataDir: l.StateDir}, d)
	return &SimAgent{Agent: a, Driver: d}, nil
}

// QemuLayout is the shape of the QEMU-backed hosts of one agent: Hosts
// hosts in one pod and one cluster of Zone, each a share of this machine.
type QemuLayout struct {
	Prefix, Zone, Pod, Cluster string
	Hosts                      int
	// CPU and MemoryMB are what each host offers placement (default 2 and
	// 512 MiB): small on purpose, so the sim offerings never fit and only
	// tiny offerings land on real QEMU guests.
	CPU      int32
	MemoryMB int64
	// Tags every host carries (default qemu): an offering with host tag
	// qemu is placed on QEMU hosts only.
	Tags []string
	// StateDir holds the guests' directories (disks, QMP sockets, pid
	// files), and the agent's answers (answers-<agent id>.log); keep it
	// short, unix socket paths are limited to 107 bytes. Guests outlive the
	// agent, and the next agent on the same StateDir adopts them.
	StateDir string
	// Templates holds the guests' templates, <Templates>/<id>/ (package
	// linux writes them): a root volume is an overlay of its template's
	// disk and boots its kernel. Empty: VMs with a template cannot start.
	Templates string
	// Accel is the QEMU accelerator, kvm or tcg (empty: tcg).
	Accel string
	// StopTimeout is how long a graceful stop waits for the guest after
	// the ACPI power button (0: the driver's default, 30 s).
	StopTimeout time.Duration
	// QuitGuestsOnStop quits every guest when the agent stops cleanly (its
	// context ends): the dev stack's Ctrl-C. Without it a stopped agent
	// leaves its guests running, as a killed one does, so that an upgrade
	// or a restart never stops a VM.
	QuitGuestsOnStop bool
}

// NewQemuAgent returns an agent serving hosts whose VMs are real QEMU
// processes, which belong to their hosts, not to the agent process.
func NewQemuAgent(o Options, l QemuLayout, s Settings) (Runner, error) {
	if l.Hosts <= 0 {
		return nil, fmt.Errorf("qemu agent: %d hosts", l.Hosts)
	}
	if l.Prefix == "" {
		l.Prefix = "qemu"
	}
	if l.Pod == "" {
		l.Pod = l.Zone + "-pod-1"
	}
	if l.Cluster == "" {
		l.Cluster = l.Prefix + "-cluster"
	}
	if l.CPU == 0 {
		l.CPU = 2
	}
	if l.MemoryMB == 0 {
		l.MemoryMB = 512
	}
	if l.Tags == nil {
		l.Tags = []string{"qemu"}
	}
	hosts := make([]agent.HostInfo, l.Hosts)
	for i := range hosts {
		id := fmt.Sprintf("%s-%d", l.Prefix, i+1)
		hosts[i] = agent.HostInfo{ID: id, Name: id, Zone: l.Zone, Pod: l.Pod, Cluster: l.Cluster, Hypervisor: "qemu",
			CPU: l.CPU, MemoryMB: l.MemoryMB, Tags: l.Tags}
	}
	d, err := qemu.New(qemu.Config{Hosts: hosts, Dir: l.StateDir, Templates: l.Templates, Accel: l.Accel,
		StopTimeout: l.StopTimeout, Logger: o.Logger})
	if err != nil {
		return nil, fmt.Errorf("qemu agent: %w", err)
	}
	a := agent.New(agent.Config{ID: o.InstanceID + "-" + l.Prefix, Kafka: o.Kafka, PingInterval: s.PingInterval, Logger: o.Logger, DataDir: l.StateDir}, d)
	return &qemuAgent{Agent: a, drv: d, quit: l.QuitGuestsOnStop}, nil
}

// qemuAgent is an agent of QEMU hosts that may quit its guests when it
// stops cleanly (QemuLayout.QuitGuestsOnStop).
type qemuAgent struct {
	*agent.Agent
	drv  *qemu.Driver
	quit bool
}

// Run serves until ctx ends. A failed run, a kill or (without quit) a clean
// stop leave the guests running: the next agent on the same directory
// adopts them and reports them as they are.
func (q *qemuAgent) Run(ctx context.Context) error {
	err := q.Agent.Run(ctx)
	if q.quit && ctx.Err() != nil {
		q.drv.Close()
	}
	return err
}

// ServeSimControl serves the simulator's controls (sim.Driver.Handler) on
// addr, which must be a loopback address: they act behind vmplane's back
// and have no authentication. stop closes the listener.
func ServeSimControl(addr string, d *sim.Driver, log *slog.Logger) (stop func(), err error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("sim control %s: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("sim control %s: serve it on a loopback address only", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("sim control: %w", err)
	}
	srv := &http.Server{Handler: d.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("sim control stopped", "addr", addr, "err", err)
		}
	}()
	log.Info("sim control listening", "addr", ln.Addr().String())
	return func() { srv.Close() }, nil
}
