package lease

import (
	"maps"
	"slices"

	"github.com/vmplane/vmplane/schemas"
)

// notify publishes the lease as it stands on lease.events.v1 and, when the
// set of hosts it dedicates to its project changed, the same record on
// placement.requests.v1 (placement's only view of leases).
func (t *tx) notify(l *schemas.LeaseRecord, event, detail, cmd string) {
	t.emit(schemas.TopicLeaseEvents, t.z.ZoneID, t.snapshot(l, event, detail, cmd))
	if want := dedicated(l); !slices.Equal(want, l.Dedicated) {
		l.Dedicated = want
		t.emit(schemas.TopicPlacementRequests, t.z.ZoneID, t.snapshot(l, event, detail, cmd))
	}
}

// dedicated lists the hosts placement must keep for the lease's project:
// the active reservations' hosts from the start until the lease is over,
// so the project's VMs stopping at the end are not crowded out.
func dedicated(l *schemas.LeaseRecord) []string {
	switch l.Status {
	case Active, Updating, Terminating, Deleting:
	default:
		return nil
	}
	var out []string
	for _, r := range l.Reservations {
		if r.Status == ResActive {
			out = append(out, r.Hosts...)
		}
	}
	slices.Sort(out)
	return out
}

// snapshot copies the lease into a notification sharing no memory with
// the state, which later steps change in place.
func (t *tx) snapshot(l *schemas.LeaseRecord, event, detail, cmd string) *schemas.LeaseStatusChanged {
	return &schemas.LeaseStatusChanged{LeaseID: l.LeaseID, ZoneID: t.z.ZoneID, Project: l.Project, Name: l.Name,
		Status: l.Status, Degraded: l.Degraded, Start: l.Start, End: l.End, Reservations: cloneReservations(l.Reservations),
		Event: event, Detail: detail, At: t.now, CommandID: cmd, Reason: l.Reason}
}

// cloneReservations copies reservations so that the copy shares no memory
// with them.
func cloneReservations(rs []schemas.Reservation) []schemas.Reservation {
	out := make([]schemas.Reservation, len(rs))
	for i, r := range rs {
		r.Hosts = slices.Clone(r.Hosts)
		r.HostProperties = maps.Clone(r.HostProperties)
		out[i] = r
	}
	return out
}
