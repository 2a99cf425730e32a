package placement

import (
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// reservationAllows is the host-reservation check of the planning manager
// (CloudStack's op_host_planner_reservation): a host reserved Dedicated
// serves only the planner and account that reserved it, and a Shared host
// is never handed to a planner that needs hosts to itself.
func reservationAllows(h schemas.HostCapacity, p Planner, account string) bool {
	switch {
	case h.Planner == "":
		return true
	case h.ResourceUsage == Dedicated:
		return h.Planner == p.Name() && h.ReservedFor == account
	default:
		return p.ResourceUsage() != Dedicated
	}
}

// reserve records the planner's reservation on an unreserved host and
// returns the event, or nil when the host was already reserved.
func reserve(z *schemas.ZoneRecord, i int, p Planner, account string, now time.Time) *schemas.HostReserved {
	h := &z.Hosts[i]
	if h.Planner != "" {
		return nil
	}
	h.Planner, h.ResourceUsage = p.Name(), p.ResourceUsage()
	if h.ResourceUsage == Dedicated {
		h.ReservedFor = account
	}
	return &schemas.HostReserved{
		ZoneID: z.ZoneID, HostID: h.HostID, Planner: h.Planner,
		ResourceUsage: h.ResourceUsage, Account: h.ReservedFor, At: now.UnixMilli(),
	}
}

// releaseDue says when a host's reservation is to be released: a reserved
// host that became empty, one release period later.
func (m *Machine) releaseDue(h schemas.HostCapacity) (time.Time, bool) {
	if h.Planner == "" || h.EmptySince == 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(h.EmptySince).Add(m.cfg.HostReservationReleasePeriod), true
}

// releaseReservations frees every due reservation of an empty host.
func (m *Machine) releaseReservations(z *schemas.ZoneRecord, now time.Time) []schemas.Record {
	var out []schemas.Record
	for i := range z.Hosts {
		h := &z.Hosts[i]
		due, ok := m.releaseDue(*h)
		if !ok || now.Before(due) || hasAllocations(z, h.HostID) {
			continue
		}
		h.Planner, h.ResourceUsage, h.ReservedFor, h.EmptySince = "", "", "", 0
		out = append(out, event(z.ZoneID, &schemas.HostReservationReleased{
			ZoneID: z.ZoneID, HostID: h.HostID,
			Reason: "no VMs for " + m.cfg.HostReservationReleasePeriod.String(), At: now.UnixMilli(),
		}, nil))
	}
	return out
}
