package sim

import (
	"fmt"
	"time"

	"github.com/vmplane/vmplane/producers/agent"
)

// Durations holds one duration per driver operation.
type Durations struct {
	Start, Stop, Destroy                    time.Duration
	Reboot, Pause, Unpause, Suspend, Resume time.Duration
	Rescue, Unrescue, Rebuild, Snapshot     time.Duration
	Migrate                                 time.Duration
	// Volume is each of the five volume operations.
	Volume time.Duration
}

// Every is d for each operation: hosts as slow at everything, so that an
// operator can watch (and cancel) a job while its agent works.
func Every(d time.Duration) Durations {
	return Durations{Start: d, Stop: d, Destroy: d, Reboot: d, Pause: d, Unpause: d, Suspend: d, Resume: d,
		Rescue: d, Unrescue: d, Rebuild: d, Snapshot: d, Migrate: d, Volume: d}
}

// Rates holds one probability (0..1) per driver operation.
type Rates struct {
	Start, Stop, Destroy                    float64
	Reboot, Pause, Unpause, Suspend, Resume float64
	Rescue, Unrescue, Rebuild, Snapshot     float64
	Migrate                                 float64
	// Volume is each of the five volume operations.
	Volume float64
}

// all lists every rate, for validation.
func (r Rates) all() []float64 {
	return []float64{r.Start, r.Stop, r.Destroy, r.Reboot, r.Pause, r.Unpause, r.Suspend, r.Resume,
		r.Rescue, r.Unrescue, r.Rebuild, r.Snapshot, r.Migrate, r.Volume}
}

// Layout generates a zone of identical hosts: Pods × ClustersPerPod ×
// HostsPerCluster hosts named <Prefix>-p<i>-c<j>-h<k>.
type Layout struct {
	// Prefix starts every generated id; empty means Zone. Two agents of one
	// zone need different prefixes.
	Prefix                                string
	Zone                                  string
	Pods, ClustersPerPod, HostsPerCluster int
	CPU                                   int32
	MemoryMB                              int64
	// Tags and Properties are shared by every generated host.
	Tags       []string
	Properties map[string]string
}

// Config configures a simulated hypervisor.
type Config struct {
	// Hosts lists the hosts explicitly; when empty, Layout generates them.
	Hosts  []agent.HostInfo
	Layout Layout
	// Latency is how long each operation takes; Jitter (0..1) spreads it
	// uniformly over ±Jitter × Latency.
	Latency Durations
	Jitter  float64
	// FailureRate is the probability that an operation fails with
	// ErrInjected (and changes nothing).
	FailureRate Rates
	// Seed makes jitter and failures reproducible.
	Seed uint64
	// ChangeBuffer is the capacity of the Changes channel (default 1024).
	ChangeBuffer int
	// Clock is the hypervisor's clock, for when a crashed host came back
	// (UpSince); time.Now when nil.
	Clock func() time.Time
	// StateFile keeps the hosts' VMs, power states and crashed or
	// partitioned flags across restarts of the process (state.go): loaded
	// by New, saved before every change returns success. An operation whose
	// save fails returns the error, its change made in memory only until
	// the next save. Empty: memory only, at no cost.
	StateFile string
}

// hosts returns the configured or generated hosts.
func (c Config) hosts() ([]agent.HostInfo, error) {
	if len(c.Hosts) > 0 {
		seen := make(map[string]bool, len(c.Hosts))
		for _, h := range c.Hosts {
			if h.ID == "" {
				return nil, fmt.Errorf("sim: host with an empty id")
			}
			if seen[h.ID] {
				return nil, fmt.Errorf("sim: host %s listed twice", h.ID)
			}
			seen[h.ID] = true
		}
		return append([]agent.HostInfo(nil), c.Hosts...), nil
	}
	l := c.Layout
	if l.Zone == "" || l.Pods <= 0 || l.ClustersPerPod <= 0 || l.HostsPerCluster <= 0 {
		return nil, fmt.Errorf("sim: no hosts: give Hosts or a Layout with a zone and positive counts")
	}
	prefix := l.Prefix
	if prefix == "" {
		prefix = l.Zone
	}
	out := make([]agent.HostInfo, 0, l.Pods*l.ClustersPerPod*l.HostsPerCluster)
	for p := 1; p <= l.Pods; p++ {
		pod := fmt.Sprintf("%s-p%d", prefix, p)
		for c := 1; c <= l.ClustersPerPod; c++ {
			cluster := fmt.Sprintf("%s-c%d", pod, c)
			for h := 1; h <= l.HostsPerCluster; h++ {
				id := fmt.Sprintf("%s-h%d", cluster, h)
				out = append(out, agent.HostInfo{
					ID: id, Name: id, Zone: l.Zone, Pod: pod, Cluster: cluster, Hypervisor: "sim",
					CPU: l.CPU, MemoryMB: l.MemoryMB, Tags: l.Tags, Properties: l.Properties,
				})
			}
		}
	}
	return out, nil
}
