package placement

import (
	"slices"
	"time"

	"github.com/vmplane/vmplane/schemas"
	"github.com/vmplane/vmplane/schemas/settings"
)

// hostStatusRemoved is the agent status of a host an admin removed.
const hostStatusRemoved = "Removed"

// applyHostStatus upserts a host of the ledger from the host processor's
// status. Used capacity, allocations and reservations are placement's own
// and are kept; a removed host with nothing allocated leaves the ledger.
func (m *Machine) applyHostStatus(z *schemas.ZoneRecord, st *schemas.HostStatus) {
	ix := m.index(z)
	i, known := ix.host[st.HostID]
	if st.Status == hostStatusRemoved && ix.hostVMs[st.HostID] == 0 {
		if known {
			// Rare: positions shift, so the index is rebuilt.
			z.Hosts = slices.Delete(z.Hosts, i, i+1)
			ix.hostChanged(st.HostID)
			m.reindex(ix)
		}
		return
	}
	row := schemas.HostCapacity{HostID: st.HostID}
	if known {
		row = z.Hosts[i]
	}
	row.PodID, row.ClusterID = st.PodID, st.ClusterID
	row.CPU, row.MemoryMB = st.CPU, st.MemoryMB
	row.CPUOvercommit = ratio(st.CPUOvercommit, m.settings.Float(settings.CPUOverprovisioning, z.ZoneID, st.ClusterID, m.cfg.CPUOvercommit))
	row.MemOvercommit = ratio(st.MemOvercommit, m.settings.Float(settings.MemOverprovisioning, z.ZoneID, st.ClusterID, m.cfg.MemOvercommit))
	row.Reservable = st.Reservable
	row.Tags = slices.Clone(st.Tags)
	if !known {
		ix.addHost(row)
		return
	}
	old := z.Hosts[i]
	if old.ClusterID != row.ClusterID || old.PodID != row.PodID {
		// A host that moved carries its VMs' counts to the new cluster.
		z.Hosts[i] = row
		ix.hostChanged(row.HostID)
		m.reindex(ix)
		return
	}
	ix.count(i, -1)
	z.Hosts[i] = row
	ix.count(i, +1)
}

// ratio is the host's own over-commit ratio when it has one, else the
// setting of its cluster, zone or the global one.
func ratio(own, fallback float64) float64 {
	if own > 0 {
		return own
	}
	return fallback
}

// cpuLimit is the CPUs a host may hand out: physical CPUs × over-commit.
func cpuLimit(h schemas.HostCapacity) int64 {
	return schemas.Overcommitted(int64(h.CPU), h.CPUOvercommit)
}

// memLimit is the memory a host may hand out, MiB.
func memLimit(h schemas.HostCapacity) int64 {
	return schemas.Overcommitted(h.MemoryMB, h.MemOvercommit)
}

// fits reports whether a host has room for cpu and memory more.
func fits(h *schemas.HostCapacity, cpu int32, memoryMB int64) bool {
	return int64(h.UsedCPU)+int64(cpu) <= cpuLimit(*h) && h.UsedMemoryMB+memoryMB <= memLimit(*h)
}

// fits is fits for host i, from the index's free capacity.
func (ix *zoneIndex) fits(i int, cpu int32, memoryMB int64) bool {
	return int64(cpu) <= ix.free[i].cpu && memoryMB <= ix.free[i].mem
}

// hostIndex returns the position of a host in the ledger, or -1.
func hostIndex(z *schemas.ZoneRecord, hostID string) int {
	for i := range z.Hosts {
		if z.Hosts[i].HostID == hostID {
			return i
		}
	}
	return -1
}

// allocate claims capacity on host i for a VM and returns the event.
func (ix *zoneIndex) allocate(i int, req *schemas.PlaceVm, group string, now time.Time) *schemas.CapacityAllocated {
	z := ix.z
	ix.count(i, -1)
	h := &z.Hosts[i]
	h.UsedCPU += req.Offering.CPU
	h.UsedMemoryMB += req.Offering.MemoryMB
	h.EmptySince = 0
	ix.count(i, +1)
	ix.appendAllocation(schemas.Allocation{
		VmID: req.VmID, HostID: h.HostID, Account: req.Account,
		CPU: req.Offering.CPU, MemoryMB: req.Offering.MemoryMB, RequestID: req.RequestID, AffinityGroup: group,
	})
	ix.track(h.HostID)
	return &schemas.CapacityAllocated{
		ZoneID: z.ZoneID, HostID: h.HostID, VmID: req.VmID, Account: req.Account,
		CPU: req.Offering.CPU, MemoryMB: req.Offering.MemoryMB,
		HostUsedCPU: h.UsedCPU, HostUsedMemory: h.UsedMemoryMB,
		RequestID: req.RequestID, At: now.UnixMilli(),
	}
}

// release removes a VM's allocations (only those on hostID when it is set)
// and returns one CapacityReleased per allocation removed, each giving back
// exactly what its claim took. A host left empty starts its reservation
// release period.
func (ix *zoneIndex) release(vmID, hostID, requestID string, now time.Time) []*schemas.CapacityReleased {
	z := ix.z
	var out []*schemas.CapacityReleased
	for {
		p := -1
		for _, q := range ix.allocationsOf(vmID) {
			if hostID == "" || z.Allocations[q].HostID == hostID {
				p = q
				break
			}
		}
		if p < 0 {
			return out
		}
		a := ix.removeAllocation(p)
		ev := &schemas.CapacityReleased{
			ZoneID: z.ZoneID, HostID: a.HostID, VmID: a.VmID, CPU: a.CPU, MemoryMB: a.MemoryMB,
			RequestID: requestID, At: now.UnixMilli(),
		}
		if i, ok := ix.host[a.HostID]; ok {
			ix.count(i, -1)
			h := &z.Hosts[i]
			h.UsedCPU -= a.CPU
			h.UsedMemoryMB -= a.MemoryMB
			if ix.hostVMs[a.HostID] == 0 {
				h.EmptySince = now.UnixMilli()
			}
			ix.count(i, +1)
			ix.track(a.HostID)
			ev.HostUsedCPU, ev.HostUsedMemory = h.UsedCPU, h.UsedMemoryMB
		}
		out = append(out, ev)
	}
}
