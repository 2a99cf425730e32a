package crashloop

import (
	"fmt"
	"sort"
)

// holdStates are the VM states whose VM holds capacity on its host; a VM
// Stopped, Deleted or never placed holds none (processors/vm releases it),
// one in Error may hold either.
var holdStates = map[string]bool{"Active": true, "Paused": true, "Suspended": true, "Rescued": true, "Resized": true}

// checkCapacity is invariant 3: the placement ledger (placement.state.v1)
// equals the sum of the VMs placed on each host (vm.state.v1), and the read
// model's hosts show the ledger's usage.
func checkCapacity(s *states, apiHosts []hostJSON) result {
	r := result{name: "3 capacity ledger equals the sum of placed VMs"}
	type claim struct {
		zone, host string
		cpu        int32
		mem        int64
	}
	allocs := map[string][]claim{} // vm → its claims
	used := map[string][2]int64{}  // host → ledger's used cpu, memory
	var hosts, nAllocs int
	var ledgerCPU, ledgerMem int64
	zones := make([]string, 0, len(s.zones))
	for z := range s.zones {
		zones = append(zones, z)
	}
	sort.Strings(zones)
	for _, z := range zones {
		zr := s.zones[z]
		sum := map[string][2]int64{}
		for _, a := range zr.Allocations {
			nAllocs++
			allocs[a.VmID] = append(allocs[a.VmID], claim{z, a.HostID, a.CPU, a.MemoryMB})
			c := sum[a.HostID]
			sum[a.HostID] = [2]int64{c[0] + int64(a.CPU), c[1] + a.MemoryMB}
		}
		for _, h := range zr.Hosts {
			hosts++
			ledgerCPU += int64(h.UsedCPU)
			ledgerMem += h.UsedMemoryMB
			used[h.HostID] = [2]int64{int64(h.UsedCPU), h.UsedMemoryMB}
			if c := sum[h.HostID]; c[0] != int64(h.UsedCPU) || c[1] != h.UsedMemoryMB {
				r.failf("host %s: ledger used %d CPU / %d MiB, its allocations sum to %d CPU / %d MiB", h.HostID, h.UsedCPU, h.UsedMemoryMB, c[0], c[1])
			}
			delete(sum, h.HostID)
		}
		for h, c := range sum {
			r.failf("zone %s: allocations of %d CPU / %d MiB on host %s, which the ledger does not list", z, c[0], c[1], h)
		}
	}

	var holding, placedCPU, placedMem int64
	var errorVMs, jobs int
	vmIDs := make([]string, 0, len(s.vms))
	for id := range s.vms {
		vmIDs = append(vmIDs, id)
	}
	sort.Strings(vmIDs)
	for _, id := range vmIDs {
		v := s.vms[id]
		cs := allocs[id]
		delete(allocs, id)
		if v.Job != nil && v.Job.JobID != "" {
			jobs++ // mid-job: its claims may be moving; judged by the ledger sums only
			continue
		}
		switch {
		case holdStates[v.VmState]:
			holding++
			placedCPU += int64(v.Offering.CPU)
			placedMem += v.Offering.MemoryMB
			want := 1
			if v.VmState == "Resized" && v.RareFields().ResizeSourceHost != "" {
				want = 2
			}
			on := 0
			for _, c := range cs {
				if c.host == v.HostID {
					on++
					if c.cpu != v.Offering.CPU || c.mem != v.Offering.MemoryMB {
						r.failf("VM %s (%s on %s): claims %d CPU / %d MiB, its offering %s is %d CPU / %d MiB", id, v.VmState, v.HostID, c.cpu, c.mem, v.Offering.Name, v.Offering.CPU, v.Offering.MemoryMB)
					}
				}
			}
			if on != 1 || len(cs) != want {
				r.failf("VM %s (%s on host %q): %d claims %v, want one on its host", id, v.VmState, v.HostID, len(cs), cs)
			}
		case v.VmState == "Error":
			errorVMs++
		default:
			if len(cs) > 0 {
				r.failf("VM %s reads %s (host %q) yet holds %d claims %v: capacity leaked", id, v.VmState, v.HostID, len(cs), cs)
			}
		}
	}
	for id, cs := range allocs {
		r.failf("claims %v for VM %s, which the VM processor does not know (expunged?)", cs, id)
	}

	var apiCPU, apiMem int64
	for _, h := range apiHosts {
		apiCPU += int64(h.UsedCPU)
		apiMem += h.UsedMemoryMB
		if u, ok := used[h.ID]; ok && (u[0] != int64(h.UsedCPU) || u[1] != h.UsedMemoryMB) {
			r.failf("host %s: GET /v1/hosts shows used %d CPU / %d MiB, the ledger %d CPU / %d MiB", h.ID, h.UsedCPU, h.UsedMemoryMB, u[0], u[1])
		}
	}
	if len(s.zones) == 0 {
		r.failf("no placement state was read: nothing checked")
	}
	r.summary = fmt.Sprintf("hosts %d, claims %d, ledger used %d CPU / %d MiB; VMs holding capacity %d with offerings of %d CPU / %d MiB; "+
		"in Error %d, mid-job %d; GET /v1/hosts used %d CPU / %d MiB", hosts, nAllocs, ledgerCPU, ledgerMem, holding, placedCPU, placedMem,
		errorVMs, jobs, apiCPU, apiMem)
	return r
}
