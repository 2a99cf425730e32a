package placement

import (
	"fmt"
	"slices"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// updateNetwork applies an UpdateNetwork: the network's desired state. A
// change that would strand a NIC's address (a new CIDR or gateway, a
// delete while addresses are held) is refused with the network as it was;
// every answer is a NetworkChanged, so the operator always hears back.
func (m *Machine) updateNetwork(z *schemas.ZoneRecord, req *schemas.UpdateNetwork, now time.Time, hdr map[string]string) []schemas.Record {
	ix := m.index(z)
	if !m.firstTime(ix, req.RequestID) {
		return nil
	}
	i, known := ix.network[req.NetworkID]
	cur := schemas.NetworkState{NetworkID: req.NetworkID, ZoneID: z.ZoneID, Name: req.Name}
	if known {
		cur = z.Networks[i]
	}
	changed := func(n schemas.NetworkState, deleted bool, why string) schemas.Record {
		return event(z.ZoneID, &schemas.NetworkChanged{Network: n, Deleted: deleted, Refused: why, At: now.UnixMilli()}, hdr)
	}
	if why := refuseNetwork(req, known, cur); why != "" {
		return []schemas.Record{changed(cur, false, why)}
	}
	if req.Deleted {
		z.Networks = slices.Delete(z.Networks, i, i+1)
		delete(ix.addrs, req.NetworkID)
		ix.indexNetworks()
		ix.networkChanged(req.NetworkID)
		return []schemas.Record{changed(cur, true, "")}
	}
	c, _ := parseCidr(req.Cidr)
	next := cur
	next.Name, next.Cidr, next.Gateway, next.Default = req.Name, req.Cidr, req.Gateway, req.Default
	next.Size = c.usable()
	if !known || cur.Cidr != req.Cidr {
		next.NextIP = 1
	}
	var out []schemas.Record
	if old := ix.defaultNet; req.Default && old != "" && old != req.NetworkID {
		// One default per zone: the new one takes the flag.
		o := &z.Networks[ix.network[old]]
		o.Default = false
		ix.networkChanged(old)
		out = append(out, changed(*o, false, ""))
	}
	if known {
		z.Networks[i] = next
	} else {
		z.Networks = append(z.Networks, next)
	}
	ix.indexNetworks()
	ix.networkChanged(req.NetworkID)
	return append(out, changed(next, false, ""))
}

// refuseNetwork says why an UpdateNetwork cannot be applied; "" when it can.
func refuseNetwork(req *schemas.UpdateNetwork, known bool, cur schemas.NetworkState) string {
	switch {
	case req.NetworkID == "":
		return "no network id"
	case req.Deleted && !known:
		return "no network " + req.NetworkID + " in the zone"
	case req.Deleted && cur.Allocated > 0:
		return fmt.Sprintf("%d addresses of the network are held by NICs; release them first", cur.Allocated)
	case req.Deleted:
		return ""
	}
	c, err := parseCidr(req.Cidr)
	if err != nil {
		return err.Error()
	}
	off, ok := c.offset(req.Gateway)
	if !ok {
		return fmt.Sprintf("gateway %q is not an IPv4 address inside %s", req.Gateway, req.Cidr)
	}
	if off == 0 || off == c.size()-1 {
		return fmt.Sprintf("gateway %s is the network or broadcast address of %s", req.Gateway, req.Cidr)
	}
	if known && cur.Allocated > 0 && (cur.Cidr != req.Cidr || cur.Gateway != req.Gateway) {
		return fmt.Sprintf("the cidr and gateway cannot change while %d addresses are held by NICs", cur.Allocated)
	}
	return ""
}
