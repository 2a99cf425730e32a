package lease

import (
	"slices"
	"strings"

	"github.com/vmplane/vmplane/schemas"
)

// start runs at the lease's start: STARTING heals the hosts that failed
// since the allocation and swaps the ones that took another project's VMs
// (a lease not started yet: swaps keep the flags), then the reservations
// and the lease turn active and placement is told to dedicate the hosts to
// the project.
func (t *tx) start(l *schemas.LeaseRecord) {
	var err error
	if l.Status, err = nextLease(l.Status, "", evStartTime); err != nil {
		return
	}
	t.notify(l, "starting", "", "")
	t.healLease(l)
	t.vacate(l)
	for i := range l.Reservations {
		r := &l.Reservations[i]
		r.Status, _ = nextRes(r.Status, resStart)
	}
	l.Status, _ = nextLease(l.Status, "", evStarted)
	t.notify(l, "started", "", "")
}

// end runs at the lease's end: the project's VMs on the lease's hosts are
// stopped, and the lease is TERMINATED when their capacity is released.
func (t *tx) end(l *schemas.LeaseRecord) {
	var err error
	if l.Status, err = nextLease(l.Status, "", evEndTime); err != nil {
		return
	}
	t.notify(l, "terminating", "", "")
	t.stopVMs(l, schemas.SystemCaller())
	if len(l.StopWait) == 0 {
		t.finish(l, "")
	}
}

// stopVMs sends Stop for every VM of the lease's project on the lease's
// hosts, with command ids derived from the lease and the VM so a replay
// sends the same ones, and joins on their capacity release. caller caused
// them: the system at the lease's end, the DeleteLease's caller before.
func (t *tx) stopVMs(l *schemas.LeaseRecord, caller schemas.Caller) {
	hosts := leaseHosts(l)
	var children []string
	for _, v := range t.vmsOf(l.Project, hosts) {
		if slices.Contains(l.StopWait, v) {
			continue
		}
		id := stopJobID(l.LeaseID, v)
		children = append(children, id)
		t.out = append(t.out, schemas.Record{Topic: schemas.TopicVmCommands, Key: v, Headers: t.cmdHeaders(id),
			Value: &schemas.Stop{VmCommand: schemas.VmCommand{CommandID: id, VmID: v, Account: l.Project,
				Origin: schemas.OriginInternal, IssuedAt: t.now, Caller: caller}}})
		l.StopWait = append(l.StopWait, v)
	}
	if len(l.StopWait) > 0 {
		l.StopDeadline = t.now + t.m.cfg.StopTimeout.Milliseconds()
	}
	l.StopTotal = int32(len(l.StopWait))
	t.endJobStarted(l, children, caller)
}

// finish ends TERMINATING or DELETING: the reservations are deleted, the
// hosts return to the pool (placement is told by the notification copy).
func (t *tx) finish(l *schemas.LeaseRecord, reason string) {
	ev, rev, name := evEnded, resEnd, "terminated"
	if l.Status == Deleting {
		ev, rev, name = evDeleted, resDelete, "deleted"
	}
	if _, err := nextLease(l.Status, "", ev); err != nil {
		return
	}
	t.endJobEnded(l, reason) // while the status still says end or delete
	l.Status, _ = nextLease(l.Status, "", ev)
	for i := range l.Reservations {
		r := &l.Reservations[i]
		r.Status, _ = nextRes(r.Status, rev)
	}
	l.StopWait, l.StopDeadline, l.DoneAt = nil, 0, t.now
	if reason != "" {
		l.Reason = reason
	}
	t.notify(l, name, reason, "")
}

// vmsOf lists the VMs of account on hosts, by id.
func (t *tx) vmsOf(account string, hosts map[string]bool) []string {
	var out []string
	for _, v := range t.z.Vms {
		if v.Account == account && hosts[v.HostID] && !slices.Contains(out, v.VmID) {
			out = append(out, v.VmID)
		}
	}
	slices.Sort(out)
	return out
}

// allocated records a VM's claim on a host.
func (t *tx) allocated(v *schemas.CapacityAllocated) {
	if !t.ix.claimed(v.VmID, v.HostID) {
		t.ix.claim(schemas.LeaseVm{VmID: v.VmID, HostID: v.HostID, Account: v.Account})
	}
}

// released forgets a VM's claim and, when a lease end waits on the VM and
// the VM holds none of that lease's hosts any more, ends the wait.
func (t *tx) released(v *schemas.CapacityReleased) {
	t.ix.unclaim(v.VmID, v.HostID)
	for _, l := range t.sorted(func(*schemas.LeaseRecord) int64 { return 0 }) {
		if !slices.Contains(l.StopWait, v.VmID) || slices.Contains(t.vmsOf(l.Project, leaseHosts(l)), v.VmID) {
			continue // not waited on, or still on a lease host (a migration released its source)
		}
		t.ix.header = true
		l.StopWait = slices.DeleteFunc(l.StopWait, func(id string) bool { return id == v.VmID })
		t.endJobStepped(l, v.VmID)
		if len(l.StopWait) == 0 {
			t.finish(l, "")
		}
	}
}

func (t *tx) cmdHeaders(id string) map[string]string {
	h := map[string]string{"command_id": id}
	if tp, ok := t.hdr["traceparent"]; ok {
		h["traceparent"] = tp
	}
	return h
}

func joinIDs(ids []string) string { return strings.Join(ids, ", ") }
