package lease

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/vmplane/vmplane/schemas"
)

// window is a span [from, to) in which a lease holds a host.
type window struct {
	from, to int64
	lease    string
}

// calendar maps each host to the windows leases hold it in. It is derived
// from the leases every time it is needed rather than kept beside them, so
// it can never disagree with them.
type calendar map[string][]window

// calendarOf builds the zone's calendar, leaving out lease except (the one
// being allocated, whose own hosts are tracked by the caller).
func calendarOf(z *schemas.LeaseZoneRecord, except string) calendar {
	c := calendar{}
	for i := range z.Leases {
		l := &z.Leases[i]
		if l.LeaseID == except || !holds(l.Status) {
			continue
		}
		for _, r := range l.Reservations {
			for _, h := range r.Hosts {
				c[h] = append(c[h], window{l.Start, l.End, l.LeaseID})
			}
		}
	}
	return c
}

// free says no lease holds host in a window overlapping [from, to).
func (c calendar) free(host string, from, to int64) bool {
	for _, w := range c[host] {
		if w.from < to && from < w.to {
			return false
		}
	}
	return true
}

// matches says the host has every property the reservation asks for.
func matches(h *schemas.LeaseHost, props map[string]string) bool {
	for k, v := range props {
		if h.Properties[k] != v {
			return false
		}
	}
	return true
}

// fits says host can serve a reservation with props over [from, to): it
// is reservable, has the properties, is not taken by the lease already and
// is free in the calendar.
func (t *tx) fits(c calendar, id string, props map[string]string, from, to int64, taken map[string]bool) bool {
	h := t.host(id)
	return h != nil && h.Reservable && matches(h, props) && !taken[id] && c.free(id, from, to)
}

// Host preferences, best first: a lease takes hosts that run no VM at all,
// then hosts that run only its own project's VMs. A host that runs another
// project's VMs is never taken (prefShared): dedication keeps others' new
// VMs off a lease host but never moves the ones already there, so leasing
// it would lock its tenants out of the host their VMs run on (issue 23).
const (
	prefEmpty = iota
	prefOwn
	prefShared
)

// preferences ranks every host that runs a VM for project (a host missing
// from the map is prefEmpty), from the VMs placement reported.
func (t *tx) preferences(project string) map[string]int {
	out := map[string]int{}
	for _, v := range t.z.Vms {
		switch {
		case v.Account != project:
			out[v.HostID] = prefShared
		case out[v.HostID] == prefEmpty:
			out[v.HostID] = prefOwn
		}
	}
	return out
}

// candidates lists the hosts that fit and run no other project's VM, best
// preference for project first, then by host id (a fixed order keeps the
// machine deterministic and replays identical). It also counts the hosts
// that fit but run another project's VMs, so a shortfall can say why.
func (t *tx) candidates(c calendar, project string, props map[string]string, from, to int64, taken map[string]bool) ([]string, int) {
	pref := t.preferences(project)
	var out []string
	shared := 0
	for i := range t.z.Hosts {
		switch id := t.z.Hosts[i].HostID; {
		case !t.fits(c, id, props, from, to, taken):
		case pref[id] == prefShared:
			shared++
		default:
			out = append(out, id)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return cmp.Or(cmp.Compare(pref[a], pref[b]), cmp.Compare(a, b)) })
	return out, shared
}

// allocateAll gives every reservation of l its hosts over l's whole window
// (the past part of a started lease included, see healLease), keeping the
// ones it holds that still fit, and at most most hosts in all: each
// reservation leaves room for the minimums of those after it. It returns
// a note for each reservation the limit held below its max_hosts.
func (t *tx) allocateAll(l *schemas.LeaseRecord, most int) ([]string, error) {
	cal, taken := calendarOf(t.z, l.LeaseID), map[string]bool{}
	later := 0
	for _, r := range l.Reservations {
		later += int(r.MinHosts)
	}
	var notes []string
	for i := range l.Reservations {
		r := &l.Reservations[i]
		later -= int(r.MinHosts)
		limit := most - later
		hosts, err := t.allocate(cal, l.Project, r, r.Hosts, l.Start, l.End, taken, limit)
		if err != nil {
			return nil, err
		}
		r.Hosts = hosts
		most -= len(hosts)
		if len(hosts) == limit && limit < int(r.MaxHosts) {
			notes = append(notes, fmt.Sprintf("%s has %d of its %d max_hosts: the lease quota allows no more", r.ID, limit, r.MaxHosts))
		}
	}
	return notes, nil
}

// allocate picks up to r.MaxHosts hosts, and at most most, for r of
// project's lease over [from, to): first the hosts in keep that still fit,
// then free ones in order of preference (see candidates). It marks them
// taken and reports a shortfall below r.MinHosts as an error naming what
// was found.
func (t *tx) allocate(c calendar, project string, r *schemas.Reservation, keep []string, from, to int64, taken map[string]bool, most int) ([]string, error) {
	limit := min(int(r.MaxHosts), most)
	var got []string
	for _, id := range keep {
		if len(got) < limit && t.fits(c, id, r.HostProperties, from, to, taken) {
			got = append(got, id)
			taken[id] = true
		}
	}
	free, shared := t.candidates(c, project, r.HostProperties, from, to, taken)
	for _, id := range free {
		if len(got) >= limit {
			break
		}
		got = append(got, id)
		taken[id] = true
	}
	if len(got) < int(r.MinHosts) {
		for _, id := range got {
			delete(taken, id)
		}
		err := fmt.Errorf("reservation %s: %d of at least %d hosts free", r.ID, len(got), r.MinHosts)
		switch {
		case shared == 1:
			err = fmt.Errorf("%w; 1 more runs another account's VMs, and a lease never takes it", err)
		case shared > 1:
			err = fmt.Errorf("%w; %d more run other accounts' VMs, and a lease never takes those", err, shared)
		}
		return nil, err
	}
	slices.Sort(got)
	return got, nil
}

// leaseHosts is every host of the lease's reservations.
func leaseHosts(l *schemas.LeaseRecord) map[string]bool {
	out := map[string]bool{}
	for _, r := range l.Reservations {
		for _, h := range r.Hosts {
			out[h] = true
		}
	}
	return out
}
