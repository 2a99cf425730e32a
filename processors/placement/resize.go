package placement

import (
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// resize answers ResizeVm. When the new size fits the VM's host, the claim
// there grows to cover it (released and claimed again at the larger of the
// two sizes, per resource, so a pure shrink frees nothing yet) and the
// decision names the same host. Otherwise placement picks another host as
// for a migration: the old claim is kept until the VM releases it
// (ReleaseVm on the old host after ConfirmResize, or on the new one after
// RevertResize). A VM with no claim is placed afresh at the new size.
// Either way the VM's volumes and NICs go with it: another host must reach
// their pools (a host-local volume keeps it in place).
func (m *Machine) resize(z *schemas.ZoneRecord, r *schemas.ResizeVm, now time.Time, hdr map[string]string) []schemas.Record {
	ix := m.index(z)
	req := &schemas.PlaceVm{
		RequestID: r.RequestID, VmID: r.VmID, ZoneID: r.ZoneID, Account: r.Account, Epoch: r.Epoch,
		Offering: r.Offering, At: r.At, Volumes: r.Volumes, Nics: r.Nics,
	}
	held := ix.allocationsOf(r.VmID)
	for _, q := range held {
		if a := z.Allocations[q]; a.RequestID == r.RequestID {
			return []schemas.Record{signal(r.VmID, decided(ix, req, a.HostID, m.plannerName(req)), hdr)}
		}
	}
	if ix.decided[r.RequestID] {
		return nil
	}
	switch len(held) {
	case 0:
		return m.decide(ix, req, "", false, &touched{}, now, hdr)
	case 1:
	default:
		// The VM is between two hosts (a move not yet released): the VM
		// processor runs one job at a time, so this is a stale request.
		return []schemas.Record{signal(r.VmID, failed(req, ReasonMoveInProgress,
			"the VM holds claims on two hosts; release one first"), hdr)}
	}
	cur := z.Allocations[held[0]]
	group, anti := affinityOfKey(cur.AffinityGroup)
	if i, ok := ix.host[cur.HostID]; ok && m.fitsInPlace(&z.Hosts[i], cur, r.Offering) {
		// The claim covers both sizes until the VM settles on one: its
		// restart with the new size may fail and leave it running at the
		// old one, so a shrink frees nothing yet. The VM processor claims
		// the exact size it runs at once the resize is confirmed or
		// reverted (a release and an adopt).
		// The claim is made again under this request even when its size
		// does not change, so that a repeat of the request is answered
		// the same.
		req.Offering.CPU, req.Offering.MemoryMB = max(cur.CPU, r.Offering.CPU), max(cur.MemoryMB, r.Offering.MemoryMB)
		var out []schemas.Record
		for _, ev := range ix.release(r.VmID, cur.HostID, r.RequestID, now) {
			out = append(out, event(z.ZoneID, ev, hdr))
		}
		out = append(out, event(z.ZoneID, ix.allocate(i, req, group, now), hdr))
		m.remember(ix, r.RequestID)
		return append(out, signal(r.VmID, decided(ix, req, cur.HostID, m.plannerName(req)), hdr))
	}
	req.AvoidHosts = []string{cur.HostID}
	return m.decide(ix, req, group, anti, &touched{}, now, hdr)
}

// fitsInPlace says whether the VM's host can hold it at the new size. A
// host that is not reservable takes no growth, but a shrink is always fine.
func (m *Machine) fitsInPlace(h *schemas.HostCapacity, cur schemas.Allocation, o schemas.Offering) bool {
	dCPU, dMem := o.CPU-cur.CPU, o.MemoryMB-cur.MemoryMB
	if dCPU <= 0 && dMem <= 0 {
		return true
	}
	return h.Reservable && hasTags(h.Tags, o.HostTags) && fits(h, dCPU, dMem)
}
