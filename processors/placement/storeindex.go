package placement

import (
	"github.com/vmplane/vmplane/schemas"
)

// storeIndex is the part of zoneIndex derived from the zone's pools,
// networks, volume claims and NIC claims. A zone may hold 500,000 claims,
// so every lookup a decision makes (a volume's claim, a VM's volumes, an
// address of a network, a MAC) is a map, and a decision never walks them.
type storeIndex struct {
	pool map[string]int // pool id → position in z.Pools
	// zonePools, clusterPools and hostPools are the pools each scope
	// reaches, so a host's candidates are found without a walk of every
	// pool (a zone of host-local pools has one per host).
	zonePools    []int
	clusterPools map[string][]int
	hostPools    map[string][]int
	// poolVMs counts each pool's volumes per VM: who to tell when it fails.
	poolVMs map[string]map[string]int

	network map[string]int // network id → position in z.Networks
	// defaultNet is the default network's id, "" for none.
	defaultNet string

	volume    map[string]int      // volume id → position in z.Volumes
	vmVolumes map[string][]string // VM → its claimed volume ids

	nic    map[string]int      // NIC id → position in z.Nics
	vmNics map[string][]string // VM → its NIC ids
	// addrs holds each network's claimed addresses, as offsets in its
	// CIDR, with the NIC holding each.
	addrs map[string]map[uint32]string
	macs  map[string]bool
}

// indexStorage builds the storage part of the index from scratch.
func (ix *zoneIndex) indexStorage() {
	z := ix.z
	ix.volume = make(map[string]int, len(z.Volumes))
	ix.vmVolumes = make(map[string][]string, len(z.Volumes))
	ix.nic = make(map[string]int, len(z.Nics))
	ix.vmNics = make(map[string][]string, len(z.Nics))
	ix.macs = make(map[string]bool, len(z.Nics))
	ix.indexPools()
	ix.indexNetworks()
	for p, v := range z.Volumes {
		ix.volume[v.VolumeID] = p
		ix.vmVolumes[v.VmID] = append(ix.vmVolumes[v.VmID], v.VolumeID)
		ix.countPoolVM(v.PoolID, v.VmID, +1)
	}
	for p, n := range z.Nics {
		ix.nic[n.NicID] = p
		ix.vmNics[n.VmID] = append(ix.vmNics[n.VmID], n.NicID)
		ix.macs[n.MAC] = true
		if off, ok := ix.offsetOf(n.NetworkID, n.IP); ok {
			ix.netAddrs(n.NetworkID)[off] = n.NicID
		}
	}
}

// indexPools rebuilds the pool positions and scopes: on a new index, and
// after a pool leaves the ledger and the positions shift (rare).
func (ix *zoneIndex) indexPools() {
	z := ix.z
	ix.pool = make(map[string]int, len(z.Pools))
	ix.zonePools, ix.clusterPools, ix.hostPools = nil, map[string][]int{}, map[string][]int{}
	if ix.poolVMs == nil {
		ix.poolVMs = map[string]map[string]int{}
	}
	for i := range z.Pools {
		ix.addPoolScope(i)
	}
}

func (ix *zoneIndex) addPoolScope(i int) {
	p := &ix.z.Pools[i]
	ix.pool[p.PoolID] = i
	switch p.Scope {
	case schemas.PoolScopeHost:
		ix.hostPools[p.HostID] = append(ix.hostPools[p.HostID], i)
	case schemas.PoolScopeCluster:
		ix.clusterPools[p.ClusterID] = append(ix.clusterPools[p.ClusterID], i)
	default:
		ix.zonePools = append(ix.zonePools, i)
	}
}

// indexNetworks rebuilds the network positions and the default network.
func (ix *zoneIndex) indexNetworks() {
	ix.network = make(map[string]int, len(ix.z.Networks))
	ix.defaultNet = ""
	if ix.addrs == nil {
		ix.addrs = map[string]map[uint32]string{}
	}
	for i, n := range ix.z.Networks {
		ix.network[n.NetworkID] = i
		if n.Default {
			ix.defaultNet = n.NetworkID
		}
	}
}

func (ix *zoneIndex) countPoolVM(poolID, vmID string, sign int) {
	vs := ix.poolVMs[poolID]
	if vs == nil {
		vs = map[string]int{}
		ix.poolVMs[poolID] = vs
	}
	vs[vmID] += sign
	if vs[vmID] == 0 {
		delete(vs, vmID)
	}
	if len(vs) == 0 {
		delete(ix.poolVMs, poolID)
	}
}

func (ix *zoneIndex) netAddrs(networkID string) map[uint32]string {
	a := ix.addrs[networkID]
	if a == nil {
		a = map[uint32]string{}
		ix.addrs[networkID] = a
	}
	return a
}

// offsetOf is an address's offset in its network's CIDR.
func (ix *zoneIndex) offsetOf(networkID, ip string) (uint32, bool) {
	i, ok := ix.network[networkID]
	if !ok {
		return 0, false
	}
	c, err := parseCidr(ix.z.Networks[i].Cidr)
	if err != nil {
		return 0, false
	}
	return c.offset(ip)
}

// claimOf returns a volume's claim, if any.
func (ix *zoneIndex) claimOf(volumeID string) (*schemas.VolumeClaim, bool) {
	p, ok := ix.volume[volumeID]
	if !ok {
		return nil, false
	}
	return &ix.z.Volumes[p], true
}

// setVolume claims size on a pool for a volume, or changes its claim, and
// keeps the pool's used capacity and volume count with it.
func (ix *zoneIndex) setVolume(c schemas.VolumeClaim) {
	z := ix.z
	if p, ok := ix.volume[c.VolumeID]; ok {
		old := z.Volumes[p]
		ix.poolUse(old.PoolID, -old.SizeMB, -1)
		ix.countPoolVM(old.PoolID, old.VmID, -1)
		z.Volumes[p] = c
		ix.vmChanged(old.VmID)
		if old.VmID != c.VmID {
			// Not by the machine's own rules (a claim is its VM's), but a
			// moved claim must leave its old VM's part all the same.
			ix.vmVolumes[old.VmID] = without(ix.vmVolumes[old.VmID], c.VolumeID)
			ix.vmVolumes[c.VmID] = append(ix.vmVolumes[c.VmID], c.VolumeID)
		}
	} else {
		z.Volumes = append(z.Volumes, c)
		ix.volume[c.VolumeID] = len(z.Volumes) - 1
		ix.vmVolumes[c.VmID] = append(ix.vmVolumes[c.VmID], c.VolumeID)
	}
	ix.poolUse(c.PoolID, c.SizeMB, +1)
	ix.countPoolVM(c.PoolID, c.VmID, +1)
	ix.vmChanged(c.VmID)
}

// dropVolume removes a volume's claim by moving the last claim into its
// place, and returns it.
func (ix *zoneIndex) dropVolume(volumeID string) (schemas.VolumeClaim, bool) {
	z := ix.z
	p, ok := ix.volume[volumeID]
	if !ok {
		return schemas.VolumeClaim{}, false
	}
	c := z.Volumes[p]
	ix.poolUse(c.PoolID, -c.SizeMB, -1)
	ix.countPoolVM(c.PoolID, c.VmID, -1)
	ix.vmChanged(c.VmID)
	delete(ix.volume, volumeID)
	ix.vmVolumes[c.VmID] = without(ix.vmVolumes[c.VmID], volumeID)
	if len(ix.vmVolumes[c.VmID]) == 0 {
		delete(ix.vmVolumes, c.VmID)
	}
	last := len(z.Volumes) - 1
	if p != last {
		z.Volumes[p] = z.Volumes[last]
		ix.volume[z.Volumes[p].VolumeID] = p
	}
	z.Volumes = z.Volumes[:last]
	return c, true
}

func (ix *zoneIndex) poolUse(poolID string, mb int64, volumes int32) {
	if i, ok := ix.pool[poolID]; ok {
		ix.z.Pools[i].UsedMB += mb
		ix.z.Pools[i].Volumes += volumes
		ix.poolChanged(poolID)
	}
}

// addNic records a NIC's address and MAC.
func (ix *zoneIndex) addNic(c schemas.NicClaim, off uint32) {
	z := ix.z
	z.Nics = append(z.Nics, c)
	ix.nic[c.NicID] = len(z.Nics) - 1
	ix.vmNics[c.VmID] = append(ix.vmNics[c.VmID], c.NicID)
	ix.macs[c.MAC] = true
	ix.netAddrs(c.NetworkID)[off] = c.NicID
	if i, ok := ix.network[c.NetworkID]; ok {
		z.Networks[i].Allocated++
		ix.networkChanged(c.NetworkID)
	}
	ix.vmChanged(c.VmID)
}

// dropNic releases a NIC's address and MAC.
func (ix *zoneIndex) dropNic(nicID string) (schemas.NicClaim, bool) {
	z := ix.z
	p, ok := ix.nic[nicID]
	if !ok {
		return schemas.NicClaim{}, false
	}
	c := z.Nics[p]
	if off, ok := ix.offsetOf(c.NetworkID, c.IP); ok {
		delete(ix.addrs[c.NetworkID], off)
	}
	if i, ok := ix.network[c.NetworkID]; ok {
		z.Networks[i].Allocated--
		ix.networkChanged(c.NetworkID)
	}
	ix.vmChanged(c.VmID)
	delete(ix.macs, c.MAC)
	delete(ix.nic, nicID)
	ix.vmNics[c.VmID] = without(ix.vmNics[c.VmID], nicID)
	if len(ix.vmNics[c.VmID]) == 0 {
		delete(ix.vmNics, c.VmID)
	}
	last := len(z.Nics) - 1
	if p != last {
		z.Nics[p] = z.Nics[last]
		ix.nic[z.Nics[p].NicID] = p
	}
	z.Nics = z.Nics[:last]
	return c, true
}

func without(ids []string, id string) []string {
	for k, v := range ids {
		if v == id {
			return append(ids[:k:k], ids[k+1:]...)
		}
	}
	return ids
}
