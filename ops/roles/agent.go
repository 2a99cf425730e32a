package roles

import (
	"github.com/vmplane/vmplane/producers/agent"
	"github.com/vmplane/vmplane/producers/agent/driver/sim"
)

// SimLayout is the shape of a simulated zone.
type SimLayout struct {
	Prefix, Zone          string
	Pods, Clusters, Hosts int // Hosts in all, spread over Pods × Clusters
	CPU                   int32
	MemoryMB              int64
}

// NewSimAgent returns an agent serving simulated hosts.
func NewSimAgent(o Options, l SimLayout, s Settings) (Runner, error) {
	clusters := max(l.Pods*l.Clusters, 1)
	perCluster := max((l.Hosts+clusters-1)/clusters, 1)
	if l.CPU == 0 {
		l.CPU = 16
	}
	if l.MemoryMB == 0 {
		l.MemoryMB = 65536
	}
	d, err := sim.New(sim.Config{Layout: sim.Layout{
		Prefix: l.Prefix, Zone: l.Zone, Pods: max(l.Pods, 1), ClustersPerPod: max(l.Clusters, 1),
		HostsPerCluster: perCluster, CPU: l.CPU, MemoryMB: l.MemoryMB,
	}})
	if err != nil {
		return nil, err
	}
	return agent.New(agent.Config{ID: o.InstanceID + "-" + l.Prefix, Kafka: o.Kafka, PingInterval: s.PingInterval, Logger: o.Logger}, d), nil
}
