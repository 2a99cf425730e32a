package placement

import (
	"math"
	"slices"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// hostStatusRemoved is the agent status of a host an admin removed.
const hostStatusRemoved = "Removed"

// applyHostStatus upserts a host of the ledger from the host processor's
// status. Used capacity, allocations and reservations are placement's own
// and are kept; a removed host with nothing allocated leaves the ledger.
func (m *Machine) applyHostStatus(z *schemas.ZoneRecord, st *schemas.HostStatus) {
	i := hostIndex(z, st.HostID)
	if st.Status == hostStatusRemoved && !hasAllocations(z, st.HostID) {
		if i >= 0 {
			z.Hosts = slices.Delete(z.Hosts, i, i+1)
		}
		return
	}
	if i < 0 {
		z.Hosts = append(z.Hosts, schemas.HostCapacity{HostID: st.HostID})
		i = len(z.Hosts) - 1
	}
	h := &z.Hosts[i]
	h.PodID = st.PodID
	h.ClusterID = st.ClusterID
	h.CPU = st.CPU
	h.MemoryMB = st.MemoryMB
	h.CPUOvercommit = ratio(st.CPUOvercommit, m.cfg.CPUOvercommit)
	h.MemOvercommit = ratio(st.MemOvercommit, m.cfg.MemOvercommit)
	h.Reservable = st.Reservable
	h.Tags = slices.Clone(st.Tags)
}

// ratio is the host's own over-commit ratio when it has one, else the zone's.
func ratio(own, fallback float64) float64 {
	if own > 0 {
		return own
	}
	return fallback
}

// cpuLimit is the CPUs a host may hand out: physical CPUs × over-commit. The
// small epsilon keeps 4 × 2.5 from flooring to 9 through float rounding.
func cpuLimit(h schemas.HostCapacity) int64 {
	return int64(math.Floor(float64(h.CPU)*overcommit(h.CPUOvercommit) + 1e-9))
}

// memLimit is the memory a host may hand out, MiB.
func memLimit(h schemas.HostCapacity) int64 {
	return int64(math.Floor(float64(h.MemoryMB)*overcommit(h.MemOvercommit) + 1e-9))
}

func overcommit(r float64) float64 {
	if r <= 0 {
		return 1.0
	}
	return r
}

// fits reports whether a host has room for cpu and memory more.
func fits(h schemas.HostCapacity, cpu int32, memoryMB int64) bool {
	return int64(h.UsedCPU)+int64(cpu) <= cpuLimit(h) && h.UsedMemoryMB+memoryMB <= memLimit(h)
}

func hostIndex(z *schemas.ZoneRecord, hostID string) int {
	for i := range z.Hosts {
		if z.Hosts[i].HostID == hostID {
			return i
		}
	}
	return -1
}

func hasAllocations(z *schemas.ZoneRecord, hostID string) bool {
	for _, a := range z.Allocations {
		if a.HostID == hostID {
			return true
		}
	}
	return false
}

// allocate claims capacity on host i for a VM and returns the event.
func allocate(z *schemas.ZoneRecord, i int, req *schemas.PlaceVm, now time.Time) *schemas.CapacityAllocated {
	h := &z.Hosts[i]
	h.UsedCPU += req.Offering.CPU
	h.UsedMemoryMB += req.Offering.MemoryMB
	h.EmptySince = 0
	z.Allocations = append(z.Allocations, schemas.Allocation{
		VmID: req.VmID, HostID: h.HostID, Account: req.Account,
		CPU: req.Offering.CPU, MemoryMB: req.Offering.MemoryMB, RequestID: req.RequestID,
	})
	return &schemas.CapacityAllocated{
		ZoneID: z.ZoneID, HostID: h.HostID, VmID: req.VmID, Account: req.Account,
		CPU: req.Offering.CPU, MemoryMB: req.Offering.MemoryMB,
		HostUsedCPU: h.UsedCPU, HostUsedMemory: h.UsedMemoryMB,
		RequestID: req.RequestID, At: now.UnixMilli(),
	}
}

// release removes a VM's allocations (only those on hostID when it is set)
// and returns one CapacityReleased per allocation removed. A host left empty
// starts its reservation release period.
func release(z *schemas.ZoneRecord, vmID, hostID, requestID string, now time.Time) []*schemas.CapacityReleased {
	var out []*schemas.CapacityReleased
	kept := z.Allocations[:0]
	for _, a := range z.Allocations {
		if a.VmID != vmID || (hostID != "" && a.HostID != hostID) {
			kept = append(kept, a)
			continue
		}
		ev := &schemas.CapacityReleased{
			ZoneID: z.ZoneID, HostID: a.HostID, VmID: a.VmID, CPU: a.CPU, MemoryMB: a.MemoryMB,
			RequestID: requestID, At: now.UnixMilli(),
		}
		if i := hostIndex(z, a.HostID); i >= 0 {
			h := &z.Hosts[i]
			h.UsedCPU -= a.CPU
			h.UsedMemoryMB -= a.MemoryMB
			ev.HostUsedCPU, ev.HostUsedMemory = h.UsedCPU, h.UsedMemoryMB
		}
		out = append(out, ev)
	}
	z.Allocations = kept
	for _, ev := range out {
		if i := hostIndex(z, ev.HostID); i >= 0 && !hasAllocations(z, ev.HostID) {
			z.Hosts[i].EmptySince = now.UnixMilli()
		}
	}
	return out
}

// allocationOf returns the index of a VM's allocation, or -1.
func allocationOf(z *schemas.ZoneRecord, vmID string) int {
	for i, a := range z.Allocations {
		if a.VmID == vmID {
			return i
		}
	}
	return -1
}

// clone copies a zone so that Step never changes the state it was given: the
// runtime may step the same state again after an aborted transaction.
// Tags are replaced, never edited in place, so they may be shared.
func clone(z *schemas.ZoneRecord) *schemas.ZoneRecord {
	return &schemas.ZoneRecord{
		ZoneID:      z.ZoneID,
		Hosts:       slices.Clone(z.Hosts),
		Allocations: slices.Clone(z.Allocations),
		Decided:     slices.Clone(z.Decided),
	}
}
