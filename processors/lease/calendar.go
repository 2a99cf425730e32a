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
// then hosts that run only its own project's VMs, and only then hosts that
// run another project's. Dedication keeps others' new VMs off a lease host
// but never moves the ones already there, so a host shared with another
// project is a lease host the project does not have to itself.
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

// candidates lists the hosts that fit, best preference for project first,
// then by host id (a fixed order keeps the machine deterministic and replays
// identical).
func (t *tx) candidates(c calendar, project string, props map[string]string, from, to int64, taken map[string]bool) []string {
	var out []string
	for i := range t.z.Hosts {
		if id := t.z.Hosts[i].HostID; t.fits(c, id, props, from, to, taken) {
			out = append(out, id)
		}
	}
	pref := t.preferences(project)
	slices.SortFunc(out, func(a, b string) int { return cmp.Or(cmp.Compare(pref[a], pref[b]), cmp.Compare(a, b)) })
	return out
}

// allocate picks up to r.MaxHosts hosts for r of project's lease over
// [from, to): first the hosts in keep that still fit, then free ones in
// order of preference (see candidates). It marks them taken and
// reports a shortfall below r.MinHosts as an error naming what was found.
func (t *tx) allocate(c calendar, project string, r *schemas.Reservation, keep []string, from, to int64, taken map[string]bool) ([]string, error) {
	var got []string
	for _, id := range keep {
		if len(got) < int(r.MaxHosts) && t.fits(c, id, r.HostProperties, from, to, taken) {
			got = append(got, id)
			taken[id] = true
		}
	}
	for _, id := range t.candidates(c, project, r.HostProperties, from, to, taken) {
		if len(got) >= int(r.MaxHosts) {
			break
		}
		got = append(got, id)
		taken[id] = true
	}
	if len(got) < int(r.MinHosts) {
		for _, id := range got {
			delete(taken, id)
		}
		return nil, fmt.Errorf("reservation %s: %d of at least %d hosts free", r.ID, len(got), r.MinHosts)
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
