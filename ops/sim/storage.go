package sim

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"

	"github.com/vmplane/vmplane/schemas"
)

// The zone's storage and networks, as an admin set them up: a shared pool
// every host reaches, a pool of cluster c1, a host-local pool on h4, and
// two networks, the default one small enough to fill. The pools are small
// too, so that deploys and grown volumes meet a full pool.
var (
	simPools = []schemas.UpdateStoragePool{
		{PoolID: "pool-zone", ZoneID: "z1", Name: "zone", Scope: schemas.PoolScopeZone, Path: "/pools/zone", CapacityMB: 64 << 10},
		{PoolID: "pool-c1", ZoneID: "z1", Name: "c1", Scope: schemas.PoolScopeCluster, ClusterID: "c1", Path: "/pools/c1", CapacityMB: 32 << 10, Tags: []string{"ssd"}},
		{PoolID: "pool-h4", ZoneID: "z1", Name: "h4-local", Scope: schemas.PoolScopeHost, HostID: "h4", Path: "/pools/h4", CapacityMB: 16 << 10},
	}
	simNetworks = []schemas.UpdateNetwork{
		{NetworkID: "net-a", ZoneID: "z1", Name: "a", Cidr: "10.9.0.0/28", Gateway: "10.9.0.1", Default: true},
		{NetworkID: "net-b", ZoneID: "z1", Name: "b", Cidr: "10.8.0.0/24", Gateway: "10.8.0.1"},
	}
	simTemplate = schemas.Template{ID: "tpl-linux", Name: "linux", Format: "qcow2", SizeMB: 2048, OsType: "Linux"}
)

// setUpStorage sends the pools and networks, as an admin does before the
// first deploy.
func (c *clients) setUpStorage(w *world) {
	for _, p := range simPools {
		p.RequestID, p.State, p.At = c.id("pool"), schemas.PoolUp, w.ms()
		c.send(w, schemas.Record{Topic: schemas.TopicPlacementRequests, Key: p.ZoneID, Value: &p})
	}
	for _, n := range simNetworks {
		n.RequestID, n.At = c.id("net"), w.ms()
		c.send(w, schemas.Record{Topic: schemas.TopicPlacementRequests, Key: n.ZoneID, Value: &n})
	}
}

// withStorage gives half the deploys a root volume, some a data volume
// and one or two NICs, as the gateway fills them in from a request.
func (c *clients) withStorage(w *world, d *schemas.Deploy) {
	if w.rng.IntN(2) == 0 {
		return
	}
	d.Template = simTemplate
	d.RootSizeMB = []int64{0, 4096}[w.rng.IntN(2)]
	if w.rng.IntN(3) == 0 {
		d.DataDiskMB = 8192
	}
	d.NetworkIDs = [][]string{{"net-a"}, {"net-a", "net-b"}, {"net-b"}}[w.rng.IntN(3)]
	if w.rng.IntN(5) == 0 {
		d.StorageTags = []string{"ssd"}
	}
}

// volumeArg picks a volume id for a volume action: mostly one of the VM's
// own, sometimes one that does not exist.
func (c *clients) volumeArg(w *world, vmID string) string {
	if v, ok := w.views.vms[vmID]; ok && v.Storage != nil && len(v.Storage.Volumes) > 0 && w.rng.IntN(8) != 0 {
		return v.Storage.Volumes[w.rng.IntN(len(v.Storage.Volumes))].VolumeID
	}
	return "vol-unknown"
}

// poolAdmin changes a pool as an admin does: its state (into maintenance,
// failed, back up) or its capacity (a shrink below what is used is
// refused by placement).
func (c *clients) poolAdmin(w *world) {
	p := simPools[w.rng.IntN(len(simPools))]
	p.RequestID, p.At, p.State = c.id("pool"), w.ms(), schemas.PoolUp
	switch w.rng.IntN(6) {
	case 0:
		p.State = schemas.PoolMaintenance
	case 1:
		p.State = schemas.PoolFailed
	case 2:
		p.CapacityMB /= 4
	}
	c.send(w, schemas.Record{Topic: schemas.TopicPlacementRequests, Key: p.ZoneID, Value: &p})
}

// storageLedger: every pool's use is the sum of its volume claims and
// within its capacity; no address or MAC is held twice, and every
// address is of its network and never its gateway.
func (w *world) storageLedger() {
	for _, zid := range w.views.changedZones {
		z, ok := w.views.zones[zid]
		if !ok {
			continue
		}
		used, count := map[string]int64{}, map[string]int32{}
		for _, v := range z.Volumes {
			used[v.PoolID] += v.SizeMB
			count[v.PoolID]++
		}
		for _, p := range z.Pools {
			w.checks["pool use equals its claims"]++
			if p.UsedMB != used[p.PoolID] || p.Volumes != count[p.PoolID] {
				w.fail("pool %s: ledger says %d MiB in %d volumes, its claims sum to %d MiB in %d", p.PoolID, p.UsedMB, p.Volumes, used[p.PoolID], count[p.PoolID])
				return
			}
			w.checks["pool within capacity"]++
			if p.UsedMB > p.CapacityMB {
				w.fail("pool %s holds %d MiB, beyond its %d MiB", p.PoolID, p.UsedMB, p.CapacityMB)
				return
			}
		}
		w.addressesOnce(z)
	}
}

func (w *world) addressesOnce(z *schemas.ZoneRecord) {
	nets := map[string]schemas.NetworkState{}
	for _, n := range z.Networks {
		nets[n.NetworkID] = n
	}
	ips, macs := map[string]string{}, map[string]string{}
	held := map[string]int32{}
	for _, n := range z.Nics {
		w.checks["an address is held once"]++
		key := n.NetworkID + "/" + n.IP
		if other, ok := ips[key]; ok {
			w.fail("address %s of network %s is held by %s and %s", n.IP, n.NetworkID, other, n.VmID+"/"+n.NicID)
			return
		}
		ips[key] = n.VmID + "/" + n.NicID
		w.checks["a MAC is held once"]++
		if other, ok := macs[n.MAC]; ok {
			w.fail("MAC %s is held by %s and %s", n.MAC, other, n.VmID+"/"+n.NicID)
			return
		}
		macs[n.MAC] = n.VmID + "/" + n.NicID
		held[n.NetworkID]++
		w.checks["an address is of its network"]++
		net, ok := nets[n.NetworkID]
		if !ok {
			w.fail("NIC %s/%s holds %s of network %s, which the zone does not have", n.VmID, n.NicID, n.IP, n.NetworkID)
			return
		}
		prefix, err1 := netip.ParsePrefix(net.Cidr)
		ip, err2 := netip.ParseAddr(n.IP)
		if err1 != nil || err2 != nil || !prefix.Contains(ip) || n.IP == net.Gateway {
			w.fail("NIC %s/%s holds %s, not an address network %s (%s, gateway %s) gives", n.VmID, n.NicID, n.IP, n.NetworkID, net.Cidr, net.Gateway)
			return
		}
	}
	for _, n := range z.Networks {
		w.checks["network count equals its addresses"]++
		if n.Allocated != held[n.NetworkID] {
			w.fail("network %s says %d addresses allocated, its NICs hold %d", n.NetworkID, n.Allocated, held[n.NetworkID])
			return
		}
	}
}

// storageMatchesVMs, once settled: every volume claim is a volume its VM
// lists on that pool, every address one its VM's NIC holds, and every
// placed volume of a live VM has its claim.
func (w *world) storageMatchesVMs() {
	for _, zid := range slices.Sorted(maps.Keys(w.views.zones)) {
		z := w.views.zones[zid]
		claims := map[string]schemas.VolumeClaim{}
		for _, c := range z.Volumes {
			claims[c.VolumeID] = c
			w.checks["every volume claim has its volume"]++
			v, ok := w.views.vms[c.VmID]
			if !ok || v.Storage == nil || !slices.ContainsFunc(v.Storage.Volumes, func(x schemas.Volume) bool {
				return x.VolumeID == c.VolumeID && x.PoolID == c.PoolID
			}) {
				w.fail("settled, but pool %s keeps a claim for volume %s of VM %s, which %s", c.PoolID, c.VolumeID, c.VmID, volumeWhere(v, ok, c.VolumeID))
				return
			}
		}
		for _, n := range z.Nics {
			w.checks["every address has its NIC"]++
			v, ok := w.views.vms[n.VmID]
			if !ok || v.Storage == nil || !slices.ContainsFunc(v.Storage.Nics, func(x schemas.Nic) bool {
				return x.NicID == n.NicID && x.IP == n.IP
			}) {
				w.fail("settled, but network %s keeps %s for NIC %s of VM %s, which does not hold it", n.NetworkID, n.IP, n.NicID, n.VmID)
				return
			}
		}
		for _, id := range slices.Sorted(maps.Keys(w.views.vms)) {
			v := w.views.vms[id]
			if v.ZoneID != zid || v.Storage == nil || v.VmState == "Deleted" {
				continue
			}
			for _, vol := range v.Storage.Volumes {
				if vol.PoolID == "" {
					continue
				}
				w.checks["every placed volume has its claim"]++
				if c, ok := claims[vol.VolumeID]; !ok || c.PoolID != vol.PoolID || c.SizeMB < vol.SizeMB {
					w.fail("settled, but volume %s of VM %s (%s) is on pool %s at %d MiB, and the claim there is %+v",
						vol.VolumeID, id, v.VmState, vol.PoolID, vol.SizeMB, c)
					return
				}
			}
		}
	}
}

func volumeWhere(v *schemas.VmRecord, ok bool, vol string) string {
	switch {
	case !ok:
		return "does not exist"
	case v.Storage == nil:
		return fmt.Sprintf("is %s with no volumes", v.VmState)
	}
	for _, x := range v.Storage.Volumes {
		if x.VolumeID == vol {
			return fmt.Sprintf("is %s with the volume on pool %q", v.VmState, x.PoolID)
		}
	}
	return fmt.Sprintf("is %s without that volume", v.VmState)
}
