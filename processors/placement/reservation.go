package placement

import (
	"slices"
	"time"

	"github.com/vmplane/vmplane/schemas"
	"github.com/vmplane/vmplane/schemas/settings"
)

// reservationRefuses is the host-reservation check of the planning manager
// (CloudStack's op_host_planner_reservation): a host reserved Dedicated
// serves only the planner and account that reserved it, and a Shared host
// is never handed to a planner that needs hosts to itself. It returns the
// filter that refuses, or "".
func reservationRefuses(h *schemas.HostCapacity, planner, usage, account string) string {
	switch {
	case h.Planner == "":
		return ""
	case h.ResourceUsage == Dedicated && h.Planner != planner:
		return filterOtherPlanner
	case h.ResourceUsage == Dedicated && h.ReservedFor != account:
		return filterDedicated
	case h.ResourceUsage == Dedicated && usage != Dedicated:
		// Its own planner, falling back to shared hosts, keeps the
		// dedicated host's contract: only this account runs there.
		return ""
	case h.ResourceUsage != Dedicated && usage == Dedicated:
		return filterShared
	}
	return ""
}

// reservationAllows reports whether a planner may use a host for account.
func reservationAllows(h schemas.HostCapacity, p Planner, account string) bool {
	return reservationRefuses(&h, p.Name(), p.ResourceUsage(), account) == ""
}

// reserve records a reservation on an unreserved host and returns the
// event, or nil when the host was already reserved.
func (ix *zoneIndex) reserve(i int, planner, usage, account string, now time.Time) *schemas.HostReserved {
	h := &ix.z.Hosts[i]
	if h.Planner != "" {
		return nil
	}
	ix.count(i, -1)
	h.Planner, h.ResourceUsage = planner, usage
	if usage == Dedicated {
		h.ReservedFor = account
	}
	ix.count(i, +1)
	ix.track(h.HostID)
	return &schemas.HostReserved{
		ZoneID: ix.z.ZoneID, HostID: h.HostID, Planner: h.Planner,
		ResourceUsage: h.ResourceUsage, Account: h.ReservedFor, At: now.UnixMilli(),
	}
}

// releaseDue says when a host's reservation is to be released: a reserved
// host that became empty, one release period later.
func (m *Machine) releaseDue(zone string, h *schemas.HostCapacity) (time.Time, bool) {
	if h.Planner == "" || h.EmptySince == 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(h.EmptySince).Add(m.releasePeriod(zone)), true
}

// releasePeriod is host.reservation.release.period in a zone.
func (m *Machine) releasePeriod(zone string) time.Duration {
	return m.settings.Duration(settings.ReservationRelease, zone, "", m.cfg.HostReservationReleasePeriod)
}

// releaseReservations frees every due reservation of an empty host, in host
// id order.
func (m *Machine) releaseReservations(z *schemas.ZoneRecord, now time.Time) []schemas.Record {
	ix := m.index(z)
	ids := make([]string, 0, len(ix.releasable))
	for id := range ix.releasable {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var out []schemas.Record
	for _, id := range ids {
		i := ix.host[id]
		h := &z.Hosts[i]
		due, ok := m.releaseDue(z.ZoneID, h)
		if !ok || now.Before(due) || ix.hostVMs[id] > 0 {
			continue
		}
		ix.count(i, -1)
		h.Planner, h.ResourceUsage, h.ReservedFor, h.EmptySince = "", "", "", 0
		ix.count(i, +1)
		ix.track(id)
		out = append(out, event(z.ZoneID, &schemas.HostReservationReleased{
			ZoneID: z.ZoneID, HostID: id,
			Reason: "no VMs for " + m.releasePeriod(z.ZoneID).String(), At: now.UnixMilli(),
		}, nil))
	}
	return out
}
