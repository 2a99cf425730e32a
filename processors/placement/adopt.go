package placement

import (
	"slices"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// ReasonUnknownHost is the failure of an adopt that names a host the ledger
// does not hold, so there is nothing to claim on.
const ReasonUnknownHost = "UnknownHost"

// adopt answers a PlaceVm with Adopt set: the VM already runs on HostID (it
// was started or moved outside vmplane), so the ledger follows the fact. The
// claim is made on that host whether or not it fits — refusing would only
// leave the ledger wrong, since the capacity is used either way — and every
// other claim of the VM is released, so it counts once. A host without a
// reservation is reserved as the request's planner would have.
func (m *Machine) adopt(z *schemas.ZoneRecord, req *schemas.PlaceVm, now time.Time, hdr map[string]string) []schemas.Record {
	ix := m.index(z)
	planner := m.plannerName(req)
	i, known := ix.host[req.HostID]
	if !known {
		return []schemas.Record{signal(req.VmID, failed(req, ReasonUnknownHost, "no host "+req.HostID+" in zone "+z.ZoneID), hdr)}
	}
	held := slices.ContainsFunc(ix.allocationsOf(req.VmID), func(q int) bool { return z.Allocations[q].HostID == req.HostID })
	if !held && ix.decided[req.RequestID] {
		// Adopted once and released since (the VM stopped): a repeat of
		// the old fact must not claim again.
		return nil
	}
	var out []schemas.Record
	for _, ev := range ix.releaseExcept(req.VmID, []string{req.HostID}, req.RequestID, now) {
		out = append(out, event(z.ZoneID, ev, hdr))
	}
	if !held {
		usage := Shared
		if p, ok := m.planners[planner]; ok {
			usage = p.ResourceUsage()
		}
		if ev := ix.reserve(i, planner, usage, req.Account, now); ev != nil {
			out = append(out, event(z.ZoneID, ev, hdr))
		}
		group, _ := affinityOf(req.Account, req.AffinityGroup)
		out = append(out, event(z.ZoneID, ix.allocate(i, req, group, now), hdr))
		m.remember(ix, req.RequestID)
	}
	return append(out, signal(req.VmID, decided(ix, req, req.HostID, planner), hdr))
}
