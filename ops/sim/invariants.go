package sim

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/vmplane/vmplane/processors/lease"
	"github.com/vmplane/vmplane/schemas"
)

// check folds what was committed and holds every safety invariant. The
// job invariants are checked as the events are folded (views.job).
func (w *world) check() {
	w.views.fold(w)
	if w.err != nil {
		return
	}
	w.oneGuest()
	w.taskStates()
	w.ledger()
	w.haOnlyForHA()
	w.storageLedger()
	w.proj.poll(w)
}

// oneGuest: no VM has a guest running (or paused in memory) on two hosts.
func (w *world) oneGuest() {
	if !w.touched {
		return // nothing ran on the hypervisor since the last check
	}
	w.touched = false
	w.checks["one guest per VM"]++
	where := map[string]string{}
	for _, h := range w.hosts {
		g := w.drv.Guests(h.ID)
		for _, id := range slices.Sorted(maps.Keys(g)) {
			if !onHostPower(g[id]) {
				continue
			}
			if other, ok := where[id]; ok {
				w.fail("VM %s has guests running on %s and %s", id, other, h.ID)
				return
			}
			where[id] = h.ID
		}
	}
}

// taskStates: a VM with no job in flight shows no task state, and rests in
// a stationary state.
func (w *world) taskStates() {
	for _, id := range w.views.changedVMs {
		v, ok := w.views.vms[id]
		if !ok {
			continue
		}
		w.checks["idle VM has no task state"]++
		if v.Job == nil && v.RareFields().TaskState != "" {
			w.fail("VM %s has no job but task state %q (state %s)", id, v.RareFields().TaskState, v.VmState)
			return
		}
		if v.Job == nil && !stationary(v.VmState) {
			w.fail("VM %s has no job but rests in %q", id, v.VmState)
			return
		}
	}
}

// ledger: every host's used capacity is the sum of its allocations and
// within its capacity × overcommit.
func (w *world) ledger() {
	for _, zid := range w.views.changedZones {
		z, ok := w.views.zones[zid]
		if !ok {
			continue
		}
		cpu, mem := map[string]int32{}, map[string]int64{}
		acct := map[string][]string{}
		for _, a := range z.Allocations {
			cpu[a.HostID] += a.CPU
			mem[a.HostID] += a.MemoryMB
			acct[a.HostID] = append(acct[a.HostID], a.Account+"/"+a.VmID)
		}
		for _, h := range z.Hosts {
			w.checks["ledger equals allocations"]++
			if h.UsedCPU != cpu[h.HostID] || h.UsedMemoryMB != mem[h.HostID] {
				w.fail("host %s: ledger says %d CPU / %d MiB used, its allocations sum to %d / %d (%v)",
					h.HostID, h.UsedCPU, h.UsedMemoryMB, cpu[h.HostID], mem[h.HostID], acct[h.HostID])
				return
			}
			w.checks["host within capacity"]++
			if float64(h.UsedCPU) > float64(h.CPU)*max(h.CPUOvercommit, 1) || float64(h.UsedMemoryMB) > float64(h.MemoryMB)*max(h.MemOvercommit, 1) {
				w.fail("host %s allocated beyond capacity: %d/%d CPU, %d/%d MiB (overcommit %v/%v); claims %v",
					h.HostID, h.UsedCPU, h.CPU, h.UsedMemoryMB, h.MemoryMB, h.CPUOvercommit, h.MemOvercommit, claimsOn(z, h.HostID))
				return
			}
		}
	}
}

// haOnlyForHA: an HA restart is only ever started for a VM with HA, and
// never places a VM while a guest of it still runs on a host in doubt
// (Alert, Disconnected). A restart for a failed pool first stops the VM
// where it is, which may wait on a host in doubt: what it must not do is
// place the VM before that stop is answered.
func (w *world) haOnlyForHA() {
	for _, ev := range w.views.fresh {
		switch e := ev.(type) {
		case *schemas.JobAccepted:
			if e.JobType != "HARestart" {
				continue
			}
			w.checks["HA restarts only HA VMs"]++
			if v, ok := w.views.vms[e.VmID]; ok && !v.HA {
				w.fail("HA restart %s of VM %s, which has no HA", e.JobID, e.VmID)
				return
			}
		case *schemas.JobStepped:
			if e.JobType != "HARestart" || e.Step != "schedule" {
				continue
			}
			// No guest of it may still run on a host in doubt (Alert,
			// Disconnected): that host's copy is alive behind a cut cable.
			w.checks["no HA placement while it runs on a host in doubt"]++
			for _, h := range w.hosts {
				if !onHostPower(w.drv.Guests(h.ID)[e.VmID]) {
					continue
				}
				if r, ok := w.views.hosts[h.ID]; ok {
					switch st := r.Status.Status; st {
					case "Alert", "Disconnected", "Connecting":
						w.fail("HA restart %s of VM %s places it while it runs on host %s, which is %s", e.JobID, e.VmID, h.ID, st)
						return
					}
				}
			}
		}
	}
}

// settled holds the liveness invariants once the faults have stopped and
// the world has had the job timeout and more to settle.
func (w *world) settled() {
	w.views.fold(w)
	for _, id := range slices.Sorted(maps.Keys(w.views.vms)) {
		v := w.views.vms[id]
		w.checks["every job ends"]++
		if v.Job != nil {
			w.fail("settled, but VM %s still runs job %s (%s, phase %s, since %d)", id, v.Job.JobID, v.Job.JobType, v.Job.Phase, v.Job.StartedAt)
			return
		}
	}
	for _, id := range slices.Sorted(maps.Keys(w.views.jobs)) {
		j := w.views.jobs[id]
		// A lease's end job waits for its VMs' stops at most the lease's
		// stop timeout (11 min), longer than a world waits once settled;
		// its end is the lease processor's deadline, tested there.
		if j.vm == "" && (j.jobType == lease.JobLeaseEnd || j.jobType == lease.JobLeaseDelete) {
			continue
		}
		if j.accepted && len(j.ends) == 0 {
			w.fail("settled, but job %s (%s of %s) never ended", id, j.jobType, j.vm)
			return
		}
	}
	for _, h := range w.hosts {
		w.checks["host status matches the truth"]++
		r, ok := w.views.hosts[h.ID]
		got := ""
		if ok {
			got = r.Status.Status
		}
		// A host an admin asked to remove may be gone, or still Up when
		// the removal was refused.
		if w.cl.removed[h.ID] && (got == "Removed" || !ok) {
			continue
		}
		// The truth: every host was brought back when the faults stopped,
		// but a fencing sent before may have powered one off since.
		_, err := w.drv.PowerStates(h.ID)
		switch up := err == nil; {
		case up && got != "Up":
			w.fail("settled, but host %s is %q while it is up and its agent runs", h.ID, got)
			return
		case !up && got == "Up":
			w.fail("settled, but host %s is Up while it is down (%v)", h.ID, err)
			return
		}
	}
	w.claimsMatchVMs()
	if w.err == nil {
		w.storageMatchesVMs()
	}
}

// mayKeep says whether a settled world may leave a VM's claim on host: a
// host the VM may be on (VmRecord.MaybeOn) keeps its claim until its agent
// answers a CheckVm, which a host powered off by a fencing since the faults
// stopped cannot do. Its capacity is of no use to anyone while it is down,
// and its first answer once back gives the claim back.
func (w *world) mayKeep(v *schemas.VmRecord, host string) bool {
	if !slices.Contains(v.RareFields().MaybeOn, host) {
		return false
	}
	_, err := w.drv.PowerStates(host)
	return err != nil
}

// claimed says whether host holds a claim of zone for VM vm.
func (w *world) claimed(zone, vm, host string) bool {
	z, ok := w.views.zones[zone]
	return ok && slices.ContainsFunc(z.Allocations, func(a schemas.Allocation) bool { return a.VmID == vm && a.HostID == host })
}

// claimsMatchVMs: every claim of capacity belongs to a VM placed on that
// host, and every running guest to a live VM placed where it runs, which
// holds a claim there.
func (w *world) claimsMatchVMs() {
	for _, zid := range slices.Sorted(maps.Keys(w.views.zones)) {
		for _, a := range w.views.zones[zid].Allocations {
			w.checks["every claim has its VM"]++
			v, ok := w.views.vms[a.VmID]
			switch {
			case !ok:
				w.fail("settled, but host %s keeps a claim for VM %s, which does not exist", a.HostID, a.VmID)
			case v.HostID != a.HostID && v.RareFields().ResizeSourceHost != a.HostID && !w.mayKeep(v, a.HostID):
				w.fail("settled, but host %s keeps a claim for VM %s, which is %s on %q", a.HostID, a.VmID, v.VmState, v.HostID)
			}
			if w.err != nil {
				return
			}
		}
	}
	for _, h := range w.hosts {
		g := w.drv.Guests(h.ID)
		for _, id := range slices.Sorted(maps.Keys(g)) {
			if g[id] != schemas.PowerOn {
				continue
			}
			w.checks["every guest has its VM"]++
			v, ok := w.views.vms[id]
			if !ok || v.VmState == "Deleted" || v.HostID != h.ID {
				state := "gone"
				if ok {
					state = fmt.Sprintf("%s on %q", v.VmState, v.HostID)
				}
				w.fail("settled, but a guest of VM %s runs on %s, and the VM is %s", id, h.ID, state)
				return
			}
			w.checks["every guest has its claim"]++
			if !w.claimed(v.ZoneID, id, h.ID) {
				w.fail("settled, but a guest of VM %s runs on %s, which holds no claim for it", id, h.ID)
				return
			}
		}
	}
}

// claimsOn lists a host's claims, for messages.
func claimsOn(z *schemas.ZoneRecord, host string) []string {
	var out []string
	for _, a := range z.Allocations {
		if a.HostID == host {
			out = append(out, fmt.Sprintf("%s:%s(%d/%d)", a.VmID, a.RequestID, a.CPU, a.MemoryMB))
		}
	}
	return out
}

// leasedClaims watches placement: a host an active lease holds takes new
// VMs of the lease's project only (VMs already there stay, and may resize
// in place; an adopt records where a VM runs, whoever asked).
func leasedClaims(w *world, z *schemas.ZoneRecord) func([]schemas.Record) {
	leased := map[string]schemas.HostCapacity{}
	there := map[[2]string]bool{}
	if z != nil {
		for _, h := range z.Hosts {
			if h.LeaseProject != "" {
				leased[h.HostID] = h
			}
		}
		for _, a := range z.Allocations {
			there[[2]string{a.VmID, a.HostID}] = true
		}
	}
	return func(outs []schemas.Record) {
		for _, o := range outs {
			a, ok := o.Value.(*schemas.CapacityAllocated)
			if !ok || strings.Contains(a.RequestID, "-adopt-") {
				continue
			}
			h, ok := leased[a.HostID]
			if !ok || there[[2]string{a.VmID, a.HostID}] {
				continue
			}
			w.checks["leased host takes its project only"]++
			if h.LeaseProject != a.Account {
				w.fail("host %s is leased to %s (lease %s), but VM %s of %s was placed on it (request %s)",
					h.HostID, h.LeaseProject, h.LeaseID, a.VmID, a.Account, a.RequestID)
				return
			}
		}
	}
}

// onHostPower says whether a power state is a guest in memory on its host.
func onHostPower(p string) bool { return p == schemas.PowerOn || p == schemas.PowerPaused }
