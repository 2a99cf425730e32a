package placement

import (
	"fmt"
	"slices"
	"testing"

	"github.com/vmplane/vmplane/schemas"
)

// checkStorage holds what must be true of the pools and networks: a pool's
// used capacity and volume count are its claims' sums and never above its
// capacity, every claim is on a pool of the zone, a network's allocated
// count is its NICs', every address is a usable one of its network and
// held once, every MAC is held once and locally administered, and a zone
// has at most one default network.
func checkStorage(t *testing.T, z *schemas.ZoneRecord) {
	t.Helper()
	used, count := map[string]int64{}, map[string]int32{}
	vols := map[string]bool{}
	for _, c := range z.Volumes {
		if vols[c.VolumeID] {
			t.Fatalf("volume %s claimed twice", c.VolumeID)
		}
		vols[c.VolumeID] = true
		if !slices.ContainsFunc(z.Pools, func(p schemas.PoolState) bool { return p.PoolID == c.PoolID }) {
			t.Fatalf("claim %+v on a pool not in the zone", c)
		}
		used[c.PoolID] += c.SizeMB
		count[c.PoolID]++
	}
	for _, p := range z.Pools {
		if p.UsedMB != used[p.PoolID] || p.Volumes != count[p.PoolID] {
			t.Fatalf("pool %s: used %d MiB by %d volumes, claims sum %d by %d", p.PoolID, p.UsedMB, p.Volumes, used[p.PoolID], count[p.PoolID])
		}
		if p.UsedMB > p.CapacityMB {
			t.Fatalf("pool %s overfilled: %d of %d MiB", p.PoolID, p.UsedMB, p.CapacityMB)
		}
	}
	defaults := 0
	held := map[string]int32{}
	addrs, macs, nics := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, c := range z.Nics {
		i := slices.IndexFunc(z.Networks, func(n schemas.NetworkState) bool { return n.NetworkID == c.NetworkID })
		if i < 0 {
			t.Fatalf("NIC claim %+v on a network not in the zone", c)
		}
		n := z.Networks[i]
		cd, err := parseCidr(n.Cidr)
		if err != nil {
			t.Fatalf("network %+v: %v", n, err)
		}
		off, ok := cd.offset(c.IP)
		if gw, _ := cd.offset(n.Gateway); !ok || off == 0 || off == cd.size()-1 || off == gw {
			t.Fatalf("NIC %+v holds an address its network %s gives no NIC", c, n.Cidr)
		}
		if a := c.NetworkID + "/" + c.IP; addrs[a] {
			t.Fatalf("address %s held twice", a)
		} else {
			addrs[a] = true
		}
		if macs[c.MAC] || len(c.MAC) != 17 || c.MAC[:3] != "02:" {
			t.Fatalf("MAC %q held twice or not locally administered", c.MAC)
		}
		macs[c.MAC] = true
		if nics[c.NicID] {
			t.Fatalf("NIC %s claimed twice", c.NicID)
		}
		nics[c.NicID] = true
		held[c.NetworkID]++
	}
	for _, n := range z.Networks {
		if n.Allocated != held[n.NetworkID] {
			t.Fatalf("network %s: allocated %d, NICs hold %d", n.NetworkID, n.Allocated, held[n.NetworkID])
		}
		if n.Default {
			defaults++
		}
	}
	if defaults > 1 {
		t.Fatalf("%d default networks", defaults)
	}
}

// normStorage renders the storage index so an incremental one can be
// compared with one built from scratch.
func normStorage(ix *zoneIndex) map[string]string {
	z := ix.z
	out := map[string]string{
		"pool": fmt.Sprint(ix.pool), "zonePools": fmt.Sprint(ix.zonePools),
		"clusterPools": fmt.Sprint(ix.clusterPools), "hostPools": fmt.Sprint(ix.hostPools),
		"poolVMs": fmt.Sprint(ix.poolVMs), "network": fmt.Sprint(ix.network), "default": ix.defaultNet,
		"macs": fmt.Sprint(ix.macs),
	}
	vols := map[string]string{}
	for id, p := range ix.volume {
		vols[id] = fmt.Sprint(z.Volumes[p])
	}
	out["volume"] = fmt.Sprint(vols)
	vmv := map[string][]string{}
	for vm, ids := range ix.vmVolumes {
		vmv[vm] = slices.Sorted(slices.Values(ids))
	}
	out["vmVolumes"] = fmt.Sprint(vmv)
	nics := map[string]string{}
	for id, p := range ix.nic {
		nics[id] = fmt.Sprint(z.Nics[p])
	}
	out["nic"] = fmt.Sprint(nics)
	vmn := map[string][]string{}
	for vm, ids := range ix.vmNics {
		vmn[vm] = slices.Sorted(slices.Values(ids))
	}
	out["vmNics"] = fmt.Sprint(vmn)
	addrs := map[string]map[uint32]string{}
	for n, a := range ix.addrs {
		if len(a) > 0 {
			addrs[n] = a
		}
	}
	out["addrs"] = fmt.Sprint(addrs)
	return out
}
