package placement

import (
	"fmt"
	"slices"
	"strings"

	"github.com/vmplane/vmplane/schemas"
)

// A zone goes to its changelog in parts (schemas/placement.go), so that a
// transaction writes what its decisions changed: the header (the decided
// request ids), and the hosts, VMs, pools and networks a step changed.
// Every change of a zone goes through the index, which marks what it
// changes (changes); AppendParts hands the marked parts to the runtime and
// forgets them. A part missed here would be a claim lost at the next
// restore, a host double-booked: scenario tests restore from the parts
// and compare.

// Prefixes of the parts' names; the rest of a name is the id.
const (
	partHost    = "host:"
	partVM      = "vm:"
	partPool    = "pool:"
	partNetwork = "net:"
)

// changes lists the parts of a zone changed since they were last handed
// out, by id; a part whose thing is gone is written as a tombstone.
type changes struct {
	header                      bool
	hosts, vms, pools, networks map[string]bool
}

func newChanges() *changes {
	return &changes{hosts: map[string]bool{}, vms: map[string]bool{}, pools: map[string]bool{}, networks: map[string]bool{}}
}

func (ix *zoneIndex) hostChanged(id string) {
	if ix.changed != nil {
		ix.changed.hosts[id] = true
	}
}

func (ix *zoneIndex) vmChanged(id string) {
	if ix.changed != nil {
		ix.changed.vms[id] = true
	}
}

func (ix *zoneIndex) poolChanged(id string) {
	if ix.changed != nil {
		ix.changed.pools[id] = true
	}
}

func (ix *zoneIndex) networkChanged(id string) {
	if ix.changed != nil {
		ix.changed.networks[id] = true
	}
}

// AppendParts appends the parts of zone key that changed since the last
// call, or all of them (engine.Parted). A zone never goes: Step and Tick
// return no zone only for none, so a zone that had state is never asked
// for its parts as gone.
func (m *Machine) AppendParts(dst []schemas.Part, key string, z *schemas.ZoneRecord, all bool) []schemas.Part {
	if z == nil {
		return dst
	}
	ix, ok := m.indexes[z.ZoneID]
	if !ok || ix.z != z {
		if !all {
			// Not indexed since it was restored: nothing changed it.
			return dst
		}
		ix = m.index(z)
	}
	c := ix.changed
	ix.changed = newChanges()
	if all {
		return ix.appendAll(dst)
	}
	if c.header {
		dst = append(dst, schemas.Part{Value: ix.header()})
	}
	for _, id := range sortedKeys(c.hosts) {
		dst = append(dst, ix.hostPart(id))
	}
	for _, id := range sortedKeys(c.vms) {
		dst = append(dst, ix.vmPart(id))
	}
	for _, id := range sortedKeys(c.pools) {
		dst = append(dst, ix.poolPart(id))
	}
	for _, id := range sortedKeys(c.networks) {
		dst = append(dst, ix.networkPart(id))
	}
	return dst
}

// appendAll appends every part of the zone.
func (ix *zoneIndex) appendAll(dst []schemas.Part) []schemas.Part {
	z := ix.z
	dst = append(dst, schemas.Part{Value: ix.header()})
	for i := range z.Hosts {
		dst = append(dst, ix.hostPart(z.Hosts[i].HostID))
	}
	vms := map[string]bool{}
	for _, a := range z.Allocations {
		vms[a.VmID] = true
	}
	for _, v := range z.Volumes {
		vms[v.VmID] = true
	}
	for _, n := range z.Nics {
		vms[n.VmID] = true
	}
	for _, id := range sortedKeys(vms) {
		dst = append(dst, ix.vmPart(id))
	}
	for _, p := range z.Pools {
		dst = append(dst, ix.poolPart(p.PoolID))
	}
	for _, n := range z.Networks {
		dst = append(dst, ix.networkPart(n.NetworkID))
	}
	return dst
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (ix *zoneIndex) header() *schemas.ZoneHeader {
	return &schemas.ZoneHeader{ZoneID: ix.z.ZoneID, Decided: slices.Clone(ix.z.Decided)}
}

// hostPart is a host's part, a tombstone when it left the ledger. The
// parts are copies: the runtime encodes them after the batch's steps, and
// the zone changes on.
func (ix *zoneIndex) hostPart(id string) schemas.Part {
	p := schemas.Part{Name: partHost + id}
	if i, ok := ix.host[id]; ok {
		h := ix.z.Hosts[i]
		h.Tags = slices.Clone(h.Tags)
		p.Value = &schemas.ZoneHost{Host: h}
	}
	return p
}

// vmPart is a VM's claims, a tombstone when it holds none.
func (ix *zoneIndex) vmPart(id string) schemas.Part {
	p := schemas.Part{Name: partVM + id}
	v := &schemas.ZoneVm{VmID: id}
	for _, q := range ix.allocs[id] {
		v.Allocations = append(v.Allocations, ix.z.Allocations[q])
	}
	for _, vol := range ix.vmVolumes[id] {
		v.Volumes = append(v.Volumes, ix.z.Volumes[ix.volume[vol]])
	}
	for _, nic := range ix.vmNics[id] {
		v.Nics = append(v.Nics, ix.z.Nics[ix.nic[nic]])
	}
	if len(v.Allocations)+len(v.Volumes)+len(v.Nics) > 0 {
		p.Value = v
	}
	return p
}

// poolPart is a pool's part, a tombstone when it was deleted.
func (ix *zoneIndex) poolPart(id string) schemas.Part {
	p := schemas.Part{Name: partPool + id}
	if i, ok := ix.pool[id]; ok {
		pool := ix.z.Pools[i]
		pool.Tags = slices.Clone(pool.Tags)
		p.Value = &schemas.ZonePool{Pool: pool}
	}
	return p
}

// networkPart is a network's part, a tombstone when it was deleted.
func (ix *zoneIndex) networkPart(id string) schemas.Part {
	p := schemas.Part{Name: partNetwork + id}
	if i, ok := ix.network[id]; ok {
		p.Value = &schemas.ZoneNetwork{Network: ix.z.Networks[i]}
	}
	return p
}

// Assemble builds a zone from its parts, in any order (engine.Parted).
// Hosts, pools and networks come in id order, VMs' claims in the order of
// the parts: every choice the machine makes is of ids or by ids, never of
// positions, so the order the zone had in memory is not state.
func (m *Machine) Assemble(key string, parts []schemas.Part) (*schemas.ZoneRecord, error) {
	z := &schemas.ZoneRecord{ZoneID: key}
	var hosts, allocs, volumes, nics int
	for _, p := range parts {
		switch v := p.Value.(type) {
		case *schemas.ZoneHost:
			hosts++
		case *schemas.ZoneVm:
			allocs, volumes, nics = allocs+len(v.Allocations), volumes+len(v.Volumes), nics+len(v.Nics)
		}
	}
	z.Hosts = make([]schemas.HostCapacity, 0, hosts)
	z.Allocations = make([]schemas.Allocation, 0, allocs)
	z.Volumes, z.Nics = make([]schemas.VolumeClaim, 0, volumes), make([]schemas.NicClaim, 0, nics)
	for _, p := range parts {
		kind, id, _ := strings.Cut(p.Name, ":")
		ok := false
		switch v := p.Value.(type) {
		case *schemas.ZoneHeader:
			z.ZoneID, z.Decided, ok = v.ZoneID, v.Decided, p.Name == ""
		case *schemas.ZoneHost:
			z.Hosts, ok = append(z.Hosts, v.Host), kind+":" == partHost && v.Host.HostID == id
		case *schemas.ZoneVm:
			z.Allocations = append(z.Allocations, v.Allocations...)
			z.Volumes = append(z.Volumes, v.Volumes...)
			z.Nics = append(z.Nics, v.Nics...)
			ok = kind+":" == partVM && v.VmID == id
		case *schemas.ZonePool:
			z.Pools, ok = append(z.Pools, v.Pool), kind+":" == partPool && v.Pool.PoolID == id
		case *schemas.ZoneNetwork:
			z.Networks, ok = append(z.Networks, v.Network), kind+":" == partNetwork && v.Network.NetworkID == id
		}
		if !ok {
			return nil, fmt.Errorf("part %q of zone %s is a %s", p.Name, key, schemas.TypeName(p.Value))
		}
	}
	if z.ZoneID != key {
		return nil, fmt.Errorf("zone %s: its header names zone %q", key, z.ZoneID)
	}
	slices.SortFunc(z.Hosts, func(a, b schemas.HostCapacity) int { return strings.Compare(a.HostID, b.HostID) })
	slices.SortFunc(z.Pools, func(a, b schemas.PoolState) int { return strings.Compare(a.PoolID, b.PoolID) })
	slices.SortFunc(z.Networks, func(a, b schemas.NetworkState) int { return strings.Compare(a.NetworkID, b.NetworkID) })
	return z, nil
}
