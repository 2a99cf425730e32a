package placement

import (
	"fmt"
	"slices"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// ReasonNetworkUnavailable is the failure of a placement whose NIC's
// network is unknown or full, or whose address is held by another VM; the
// detail names the network.
const ReasonNetworkUnavailable = "NetworkUnavailable"

// grant is one NIC's address in a decision: a claim it keeps, or a new one
// (fresh) to record once the host is chosen.
type grant struct {
	claim schemas.NicClaim
	off   uint32
	fresh bool
	// next says the address came from the search, which moves on past it.
	next bool
}

// planNics gives each of the request's NICs its address, claiming
// nothing: a NIC that holds one keeps it (it must be this VM's), a NIC
// with an ip gets that address if it is free, and any other the next free
// address of its network (the zone's default network when it names none).
// It says why not, naming the network, when one cannot.
func (ix *zoneIndex) planNics(req *schemas.PlaceVm) ([]grant, string) {
	z := ix.z
	var grants []grant
	var macs map[string]bool
	var addrs map[string]map[uint32]bool
	for k := range req.Nics {
		n := &req.Nics[k]
		netID := n.NetworkID
		if netID == "" {
			netID = ix.defaultNet
		}
		if netID == "" {
			return nil, fmt.Sprintf("NIC %s names no network and the zone has no default network", n.NicID)
		}
		ni, ok := ix.network[netID]
		if !ok {
			return nil, fmt.Sprintf("NIC %s: no network %s in the zone", n.NicID, netID)
		}
		net := &z.Networks[ni]
		if p, ok := ix.nic[n.NicID]; ok {
			c := z.Nics[p]
			switch {
			case c.VmID != req.VmID:
				return nil, fmt.Sprintf("NIC %s is held by VM %s", n.NicID, c.VmID)
			case c.NetworkID != netID || (n.IP != "" && n.IP != c.IP):
				return nil, fmt.Sprintf("NIC %s holds %s on network %s, not %s on %s", n.NicID, c.IP, c.NetworkID, n.IP, netID)
			}
			grants = append(grants, grant{claim: c})
			continue
		}
		if addrs == nil {
			addrs, macs = map[string]map[uint32]bool{}, map[string]bool{}
		}
		if addrs[netID] == nil {
			addrs[netID] = map[uint32]bool{}
		}
		g := grant{fresh: true}
		c, _ := parseCidr(net.Cidr)
		if n.IP != "" {
			off, ok := c.offset(n.IP)
			gw, _ := c.offset(net.Gateway)
			if !ok || off == 0 || off == c.size()-1 || off == gw {
				return nil, fmt.Sprintf("NIC %s: %s is not an address of network %s (%s) a NIC can hold", n.NicID, n.IP, netName(net), net.Cidr)
			}
			if holder, held := ix.addrs[netID][off]; held || addrs[netID][off] {
				return nil, fmt.Sprintf("NIC %s: %s of network %s is held by NIC %s", n.NicID, n.IP, netName(net), holder)
			}
			g.off = off
		} else {
			off, ok := ix.nextFree(net, addrs[netID])
			if !ok {
				return nil, fmt.Sprintf("network %s (%s) is full: all %d addresses are held", netName(net), net.Cidr, net.Size)
			}
			g.off, g.next = off, true
		}
		addrs[netID][g.off] = true
		mac := ix.macFor(req.VmID, n.NicID, macs)
		macs[mac] = true
		g.claim = schemas.NicClaim{VmID: req.VmID, NicID: n.NicID, NetworkID: netID, IP: c.addr(g.off), MAC: mac}
		grants = append(grants, g)
	}
	return grants, ""
}

func netName(n *schemas.NetworkState) string {
	if n.Name == "" || n.Name == n.NetworkID {
		return n.NetworkID
	}
	return n.Name + " (" + n.NetworkID + ")"
}

// claimNics records the new addresses of a plan.
func (ix *zoneIndex) claimNics(grants []grant, t *touched) {
	for _, g := range grants {
		if !g.fresh {
			continue
		}
		ix.addNic(g.claim, g.off)
		if g.next {
			ix.z.Networks[ix.network[g.claim.NetworkID]].NextIP = int32(g.off) + 1
			ix.networkChanged(g.claim.NetworkID)
		}
		t.network(g.claim.NetworkID)
	}
}

// releaseNics gives back every address of a VM.
func (ix *zoneIndex) releaseNics(vmID string, t *touched) {
	for _, id := range slices.Clone(ix.vmNics[vmID]) {
		if c, ok := ix.dropNic(id); ok {
			t.network(c.NetworkID)
		}
	}
}

// touched lists, in order of first change, the pools and networks one
// step changed: each gets one StoragePoolChanged or NetworkChanged.
type touched struct{ pools, networks []string }

func (t *touched) pool(id string) {
	if !slices.Contains(t.pools, id) {
		t.pools = append(t.pools, id)
	}
}

func (t *touched) network(id string) {
	if !slices.Contains(t.networks, id) {
		t.networks = append(t.networks, id)
	}
}

// events returns a StoragePoolChanged per touched pool and a
// NetworkChanged per touched network, as they are now.
func (ix *zoneIndex) events(t *touched, now time.Time, hdr map[string]string) []schemas.Record {
	var out []schemas.Record
	for _, id := range t.pools {
		if i, ok := ix.pool[id]; ok {
			p := ix.z.Pools[i]
			p.Tags = slices.Clone(p.Tags)
			out = append(out, event(ix.z.ZoneID, &schemas.StoragePoolChanged{Pool: p, At: now.UnixMilli()}, hdr))
		}
	}
	for _, id := range t.networks {
		if i, ok := ix.network[id]; ok {
			out = append(out, event(ix.z.ZoneID, &schemas.NetworkChanged{Network: ix.z.Networks[i], At: now.UnixMilli()}, hdr))
		}
	}
	return out
}
