package placement

import (
	"fmt"

	"github.com/vmplane/vmplane/schemas"
)

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

// releaseVm releases the i-th VM; with storage, its volumes and NICs too.
func releaseVm(zone string, i int, storage bool) *schemas.ReleaseVm {
	return &schemas.ReleaseVm{RequestID: fmt.Sprintf("x%d", i), VmID: fmt.Sprintf("vm%d", i), ZoneID: zone,
		AllVolumes: storage, Nics: storage}
}

// storageSetUp is a zone's storage and network for the storage rows: a
// pool per cluster, a zone-wide pool, and eight /16 networks (half a
// million addresses, more than the 320,000 live VMs of 10,000 hosts; a
// network is at most a /16).
func storageSetUp(zone string, hosts int) []any {
	var out []any
	for c := range (hosts + hostsPerCluster - 1) / hostsPerCluster {
		id := fmt.Sprintf("pool-c%03d", c)
		out = append(out, &schemas.UpdateStoragePool{RequestID: "q-" + id, PoolID: id, ZoneID: zone, Name: id,
			Scope: schemas.PoolScopeCluster, ClusterID: fmt.Sprintf("c%03d", c), Path: "/pools/" + id,
			CapacityMB: 1 << 30, State: schemas.PoolUp})
	}
	out = append(out, &schemas.UpdateStoragePool{RequestID: "q-pool-zone", PoolID: "pool-zone", ZoneID: zone, Name: "zone",
		Scope: schemas.PoolScopeZone, Path: "/pools/zone", CapacityMB: 1 << 32, State: schemas.PoolUp})
	for n := range networks {
		out = append(out, &schemas.UpdateNetwork{RequestID: fmt.Sprintf("q-net%d", n), NetworkID: fmt.Sprintf("net%d", n), ZoneID: zone,
			Name: fmt.Sprintf("guest%d", n), Cidr: fmt.Sprintf("10.%d.0.0/16", n), Gateway: fmt.Sprintf("10.%d.0.1", n)})
	}
	return out
}

const networks = 8

// withVolumeAndNic gives the i-th request a 10 GiB root volume and a NIC.
func withVolumeAndNic(r *schemas.PlaceVm, i int) {
	r.Volumes = []schemas.Volume{{VolumeID: r.VmID + "-root", Kind: schemas.VolumeRoot, SizeMB: 10 << 10, TemplateID: "t1"}}
	r.Nics = []schemas.Nic{{NicID: r.VmID + "-nic-0", NetworkID: fmt.Sprintf("net%d", i%networks)}}
}
