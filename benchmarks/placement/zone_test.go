package placement

import (
	"fmt"

	"github.com/vmplane/vmplane/schemas"
)

// target is the decisions per second FirstFit must reach at 10,000 hosts.
const target = 5000

// hostsPerCluster and clustersPerPod shape the zone: 10,000 hosts are 100
// clusters in 10 pods.
const (
	hostsPerCluster = 100
	clustersPerPod  = 10
)

// hostStatuses returns the HostStatus records of a zone of n hosts with 32
// CPUs and 256 GiB each, all Up and Enabled.
func hostStatuses(zone string, n int) []*schemas.HostStatus {
	out := make([]*schemas.HostStatus, n)
	for i := range n {
		c := i / hostsPerCluster
		out[i] = &schemas.HostStatus{
			HostID: fmt.Sprintf("h%05d", i), ZoneID: zone,
			PodID: fmt.Sprintf("p%02d", c/clustersPerPod), ClusterID: fmt.Sprintf("c%03d", c),
			Status: "Up", ResourceState: "Enabled", Reservable: true, CPU: 32, MemoryMB: 256 << 10,
		}
	}
	return out
}

// placeVm is the i-th request of the scenario: 2 CPUs and 4 GiB, of one of
// ten accounts, every fifth VM in an anti-affinity group.
func placeVm(zone, planner string, i int) *schemas.PlaceVm {
	r := &schemas.PlaceVm{
		RequestID: fmt.Sprintf("r%d", i), VmID: fmt.Sprintf("vm%d", i), ZoneID: zone,
		Account: fmt.Sprintf("acct%d", i%10), Epoch: 1,
		Offering: schemas.Offering{ID: "o1", Name: "medium", CPU: 2, MemoryMB: 4096, DeploymentPlanner: planner},
	}
	if i%5 == 0 {
		r.AffinityGroup = fmt.Sprintf("g%d", i%50)
	}
	return r
}
