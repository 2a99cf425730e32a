package lease

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/vmplane/vmplane/schemas"
)

// A zone goes to its changelog in parts (schemas/lease.go), so that a
// transaction writes what its records changed: the header (the leases,
// the command ids handled, the next poll), and the hosts and VMs a step
// changed. A placement event, most of what the processor reads, changes
// one VM's claims; written whole, a zone of 100,000 VMs was 2.5 MB per
// transaction (BenchmarkAllocationInLargeZone). Every change of a host or
// a VM goes through the zone's index, which marks it; a step that may
// change the header marks it. A part missed here would be lost at the
// next restore: the scenario tests restore from the parts and compare.

// Prefixes of the parts' names; the rest of a name is the id.
const (
	partHost = "host:"
	partVM   = "vm:"
)

// zoneIndex finds a zone's hosts and VM claims by id, and keeps what
// changed since the parts were last handed out. It belongs to one zone
// value: a zone restored is a new value, indexed anew.
type zoneIndex struct {
	z      *schemas.LeaseZoneRecord
	hosts  map[string]int   // host id → position in z.Hosts
	vms    map[string][]int // VM id → positions of its claims in z.Vms
	claims int              // positions in vms, len(z.Vms) unless changed behind the index
	// changed: the header, and the hosts and VMs by id, changed since
	// AppendParts last ran for the zone.
	header      bool
	changedHost map[string]bool
	changedVM   map[string]bool
}

// index returns z's index, building it when z is not the value indexed
// (first seen, or restored) or its lists changed length behind it; in the
// latter case every part is marked, since what changed is not known.
func (m *Machine) index(z *schemas.LeaseZoneRecord) *zoneIndex {
	old, ok := m.indexes[z.ZoneID]
	if ok && old.z == z && old.consistent() {
		return old
	}
	ix := &zoneIndex{z: z, hosts: make(map[string]int, len(z.Hosts)), vms: make(map[string][]int, len(z.Vms)),
		changedHost: map[string]bool{}, changedVM: map[string]bool{}}
	for i := range z.Hosts {
		ix.hosts[z.Hosts[i].HostID] = i
	}
	for i := range z.Vms {
		ix.vms[z.Vms[i].VmID] = append(ix.vms[z.Vms[i].VmID], i)
	}
	ix.claims = len(z.Vms)
	if ok && old.z == z {
		ix.header = true
		for id := range ix.hosts {
			ix.changedHost[id] = true
		}
		for id := range ix.vms {
			ix.changedVM[id] = true
		}
		for id := range old.changedVM {
			ix.changedVM[id] = true // gone since: a tombstone
		}
	}
	if m.indexes == nil {
		m.indexes = map[string]*zoneIndex{}
	}
	m.indexes[z.ZoneID] = ix
	return ix
}

// consistent is a cheap check that nobody changed the zone's lists but
// through the index.
func (ix *zoneIndex) consistent() bool {
	return len(ix.hosts) == len(ix.z.Hosts) && ix.claims == len(ix.z.Vms)
}

// host is the host of that id, nil when the zone has none.
func (ix *zoneIndex) host(id string) *schemas.LeaseHost {
	if i, ok := ix.hosts[id]; ok {
		return &ix.z.Hosts[i]
	}
	return nil
}

// addHost adds a host the zone has not heard of.
func (ix *zoneIndex) addHost(id string) *schemas.LeaseHost {
	ix.z.Hosts = append(ix.z.Hosts, schemas.LeaseHost{HostID: id})
	ix.hosts[id] = len(ix.z.Hosts) - 1
	ix.changedHost[id] = true
	return &ix.z.Hosts[len(ix.z.Hosts)-1]
}

// claimed says the VM holds a claim on the host.
func (ix *zoneIndex) claimed(vmID, hostID string) bool {
	for _, i := range ix.vms[vmID] {
		if ix.z.Vms[i].HostID == hostID {
			return true
		}
	}
	return false
}

// claim adds a VM's claim on a host.
func (ix *zoneIndex) claim(v schemas.LeaseVm) {
	ix.z.Vms = append(ix.z.Vms, v)
	ix.vms[v.VmID] = append(ix.vms[v.VmID], len(ix.z.Vms)-1)
	ix.claims++
	ix.changedVM[v.VmID] = true
}

// unclaim removes a VM's claims on hostID, or all of them for "". The last
// claim of the list takes a removed one's place: the order of z.Vms is not
// state (every use of it is by id).
func (ix *zoneIndex) unclaim(vmID, hostID string) {
	ps := ix.vms[vmID]
	for k := len(ps) - 1; k >= 0; k-- {
		i := ps[k]
		if hostID != "" && ix.z.Vms[i].HostID != hostID {
			continue
		}
		ix.changedVM[vmID] = true
		ps = slices.Delete(ps, k, k+1)
		last := len(ix.z.Vms) - 1
		if i != last {
			moved := ix.z.Vms[last]
			ix.z.Vms[i] = moved
			mp := ix.vms[moved.VmID]
			if moved.VmID == vmID {
				mp = ps
			}
			mp[slices.Index(mp, last)] = i
		}
		ix.z.Vms = ix.z.Vms[:last]
		ix.claims--
	}
	if len(ps) == 0 {
		delete(ix.vms, vmID)
	} else {
		ix.vms[vmID] = ps
	}
}

// AppendParts appends the parts of zone key that changed since the last
// call, or all of them (engine.Parted). A zone never goes: Step and Tick
// return no zone only for none.
func (m *Machine) AppendParts(dst []schemas.Part, key string, z *schemas.LeaseZoneRecord, all bool) []schemas.Part {
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
	header := ix.header || all
	hosts, vms := slices.Sorted(maps.Keys(ix.changedHost)), slices.Sorted(maps.Keys(ix.changedVM))
	if all {
		hosts, vms = slices.Sorted(maps.Keys(ix.hosts)), slices.Sorted(maps.Keys(ix.vms))
	}
	// New maps, not cleared ones: a cleared map keeps the buckets of its
	// largest size, and a zone's first batch may mark every VM.
	ix.header, ix.changedHost, ix.changedVM = false, map[string]bool{}, map[string]bool{}
	if header {
		dst = append(dst, schemas.Part{Value: ix.headerPart()})
	}
	for _, id := range hosts {
		dst = append(dst, ix.hostPart(id))
	}
	for _, id := range vms {
		dst = append(dst, ix.vmPart(id))
	}
	return dst
}

// headerPart is the zone's header. The parts are copies, so that each
// holds what it was when handed out, whatever changes the zone later.
func (ix *zoneIndex) headerPart() *schemas.LeaseZoneHeader {
	z := ix.z
	return &schemas.LeaseZoneHeader{ZoneID: z.ZoneID, Leases: cloneLeases(z.Leases), Handled: slices.Clone(z.Handled), PollAt: z.PollAt}
}

// hostPart is a host's part.
func (ix *zoneIndex) hostPart(id string) schemas.Part {
	p := schemas.Part{Name: partHost + id}
	if h := ix.host(id); h != nil {
		c := *h
		c.Properties = maps.Clone(h.Properties)
		p.Value = &schemas.LeaseZoneHost{Host: c}
	}
	return p
}

// vmPart is a VM's claims, a tombstone when it holds none.
func (ix *zoneIndex) vmPart(id string) schemas.Part {
	p := schemas.Part{Name: partVM + id}
	if ps := ix.vms[id]; len(ps) > 0 {
		v := &schemas.LeaseZoneVm{VmID: id, Claims: make([]schemas.LeaseVm, len(ps))}
		for k, i := range ps {
			v.Claims[k] = ix.z.Vms[i]
		}
		p.Value = v
	}
	return p
}

// Assemble builds a zone from its parts, in any order (engine.Parted).
// Hosts come in id order, VMs' claims in the order of the parts: every
// choice the machine makes is of ids or by ids, never of positions.
func (m *Machine) Assemble(key string, parts []schemas.Part) (*schemas.LeaseZoneRecord, error) {
	z := &schemas.LeaseZoneRecord{ZoneID: key}
	var hosts, claims int
	for _, p := range parts {
		switch v := p.Value.(type) {
		case *schemas.LeaseZoneHost:
			hosts++
		case *schemas.LeaseZoneVm:
			claims += len(v.Claims)
		}
	}
	z.Hosts, z.Vms = make([]schemas.LeaseHost, 0, hosts), make([]schemas.LeaseVm, 0, claims)
	header := false
	for _, p := range parts {
		kind, id, _ := strings.Cut(p.Name, ":")
		ok := false
		switch v := p.Value.(type) {
		case *schemas.LeaseZoneHeader:
			z.ZoneID, z.Leases, z.Handled, z.PollAt = v.ZoneID, v.Leases, v.Handled, v.PollAt
			ok, header = p.Name == "", true
		case *schemas.LeaseZoneHost:
			z.Hosts, ok = append(z.Hosts, v.Host), kind+":" == partHost && v.Host.HostID == id
		case *schemas.LeaseZoneVm:
			ok = kind+":" == partVM && v.VmID == id && len(v.Claims) > 0
			for _, c := range v.Claims {
				ok = ok && c.VmID == id
			}
			z.Vms = append(z.Vms, v.Claims...)
		}
		if !ok {
			return nil, fmt.Errorf("part %q of zone %s is a %s that does not fit it", p.Name, key, schemas.TypeName(p.Value))
		}
	}
	if !header || z.ZoneID != key {
		return nil, fmt.Errorf("zone %s: no header naming it among its %d parts", key, len(parts))
	}
	slices.SortFunc(z.Hosts, func(a, b schemas.LeaseHost) int { return strings.Compare(a.HostID, b.HostID) })
	return z, nil
}

// cloneLeases copies leases so that the copy shares no memory with them.
func cloneLeases(ls []schemas.LeaseRecord) []schemas.LeaseRecord {
	if ls == nil {
		return nil
	}
	out := make([]schemas.LeaseRecord, len(ls))
	for i, l := range ls {
		l.Reservations = cloneReservations(l.Reservations)
		l.Dedicated, l.StopWait = slices.Clone(l.Dedicated), slices.Clone(l.StopWait)
		out[i] = l
	}
	return out
}
