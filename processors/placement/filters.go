package placement

import (
	"fmt"
	"slices"
	"strings"

	"github.com/vmplane/vmplane/schemas"
)

// The filters of the planning manager, in the order they are applied. The
// first that refuses a host names why; a failed placement counts them.
const (
	filterNotReservable = "not reservable"
	filterAvoided       = "avoided"
	filterTags          = "lack host tags"
	filterLeased        = "leased to another project"
	filterDedicated     = "dedicated to another account"
	filterOtherPlanner  = "dedicated to another planner"
	filterShared        = "shared, planner needs dedicated"
	filterAntiAffinity  = "hold a VM of the anti-affinity group"
	filterAffinity      = "not the affinity group's host"
	filterCapacity      = "lack capacity"
	filterStorage       = "lack storage"
)

var filterOrder = []string{filterNotReservable, filterAvoided, filterTags, filterLeased, filterDedicated,
	filterOtherPlanner, filterShared, filterAntiAffinity, filterAffinity, filterCapacity, filterStorage}

// ask is one placement question: the request with what the manager derived
// from it, so the filters do not derive it again per host.
type ask struct {
	req     *schemas.PlaceVm
	planner Planner
	usage   string // the planner's usage, or Shared when falling back
	group   string // affinity group key, "" for none
	anti    bool
	// members is the group's use, looked up once per request; nil for a
	// request without a group or of a group that never had a VM.
	members *groupUse
	// storage holds why hosts were refused for storage, naming the pools
	// they reach and their free space: the first few distinct reasons,
	// each with the hosts it was given for.
	storage storageWhy
}

// storageWhy collects the distinct storage reasons of a placement, so a
// failure names every pool that was full or refused, not only those of
// the first host looked at.
type storageWhy struct {
	whys  []string
	hosts [][]string
}

// Bounds of a storage failure's detail: a zone of host-local pools would
// otherwise list every host.
const (
	storageReasons     = 3
	storageHostsPerWhy = 3
)

func (w *storageWhy) add(hostID, why string) {
	for k, x := range w.whys {
		if x == why {
			w.hosts[k] = append(w.hosts[k], hostID)
			return
		}
	}
	if len(w.whys) < storageReasons {
		w.whys = append(w.whys, why)
		w.hosts = append(w.hosts, []string{hostID})
	}
}

func (w *storageWhy) String() string {
	var parts []string
	for k, why := range w.whys {
		hs := w.hosts[k]
		list := strings.Join(hs[:min(len(hs), storageHostsPerWhy)], ", ")
		if len(hs) > storageHostsPerWhy {
			list += fmt.Sprintf(" and %d more", len(hs)-storageHostsPerWhy)
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", why, list))
	}
	return strings.Join(parts, "; ")
}

// refuse returns why host i cannot take the request, or "" when it can.
func (ix *zoneIndex) refuse(i int, a *ask) string {
	req, h := a.req, &ix.z.Hosts[i]
	switch {
	case !h.Reservable:
		return filterNotReservable
	case len(req.AvoidHosts) > 0 && slices.Contains(req.AvoidHosts, h.HostID):
		return filterAvoided
	case !hasTags(h.Tags, req.Offering.HostTags):
		return filterTags
	case h.LeaseProject != "" && h.LeaseProject != req.Account:
		return filterLeased
	}
	if why := reservationRefuses(h, a.planner.Name(), a.usage, req.Account); why != "" {
		return why
	}
	if g := a.members; g != nil && g.vms > 0 {
		n := tallyOf(ix.groupsOn[i], g.id)
		if a.anti && n > 0 {
			return filterAntiAffinity
		}
		if !a.anti && n == 0 {
			return filterAffinity
		}
	}
	if !ix.fits(i, req.Offering.CPU, req.Offering.MemoryMB) {
		return filterCapacity
	}
	if len(req.Volumes) > 0 {
		if _, why := ix.fitVolumes(req, hostSite(h)); why != "" {
			a.storage.add(h.HostID, why)
			return filterStorage
		}
	}
	return ""
}

func hasTags(have, want []string) bool {
	for _, t := range want {
		if !slices.Contains(have, t) {
			return false
		}
	}
	return true
}

// whyNot explains a failed placement: how many hosts each filter removed,
// e.g. "no host: 4 hosts; 2 not reservable, 1 dedicated to another
// account, 1 lack capacity". It runs only when placement fails, so it may
// look at every host. It looks at them in cluster and host id order, as
// the planners do, so that the storage reasons name hosts in the same
// order whatever order the zone lists them in (a restored zone lists them
// in id order).
func (ix *zoneIndex) whyNot(a *ask) string {
	counts := map[string]int{}
	for _, c := range ix.byID {
		for _, i := range c.hosts {
			counts[ix.refuse(i, a)]++
		}
	}
	var parts []string
	for _, f := range filterOrder {
		if n := counts[f]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, f))
		}
	}
	s := fmt.Sprintf("no host: %d hosts", len(ix.z.Hosts))
	if len(parts) > 0 {
		s += "; " + strings.Join(parts, ", ")
	}
	return s
}
