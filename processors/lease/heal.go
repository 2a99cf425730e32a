package lease

import (
	"fmt"
	"slices"
	"strings"

	"github.com/vmplane/vmplane/schemas"
)

// AlertHostUnreservable is the kind of the alert raised when a host that
// leases hold stops being reservable.
const AlertHostUnreservable = "HostUnreservable"

// hostStatus is push monitoring: the status table takes the host's latest
// status; a known host whose reservable flips is a resource notification,
// and one that stops being reservable heals the leases holding it now.
func (t *tx) hostStatus(v *schemas.HostStatus) {
	h := t.host(v.HostID)
	known := h != nil
	if !known {
		h = t.ix.addHost(v.HostID)
	}
	t.ix.changedHost[v.HostID] = true
	was := h.Reservable
	h.Status, h.ResourceState, h.Reservable, h.UpdatedAt = v.Status, v.ResourceState, v.Reservable, t.now
	h.Properties = v.Properties
	if !known || was == v.Reservable {
		return
	}
	t.ix.header = true // leases holding the host may heal
	var affected []string
	for i := range t.z.Leases {
		l := &t.z.Leases[i]
		if holds(l.Status) && l.End > t.now && leaseHosts(l)[v.HostID] {
			affected = append(affected, l.LeaseID)
		}
	}
	slices.Sort(affected)
	t.emit(schemas.TopicLeaseEvents, t.z.ZoneID, &schemas.LeaseHostChanged{ZoneID: t.z.ZoneID, HostID: v.HostID,
		Reservable: v.Reservable, Status: v.Status, ResourceState: v.ResourceState, Leases: affected,
		Reason: v.Reason, At: t.now})
	if !v.Reservable && len(affected) > 0 {
		// Leases lose a host they hold: the operators hear of it with
		// the leases named, whether healing finds a replacement or not.
		why := v.Status + "/" + v.ResourceState
		if v.Reason != "" {
			why += ": " + v.Reason
		}
		t.emit(schemas.TopicVmEvents, v.HostID, &schemas.AlertRaised{
			AlertID: schemas.BoundID(fmt.Sprintf("lease:%s:HostUnreservable:%d", v.HostID, t.now)), Kind: AlertHostUnreservable,
			HostID: v.HostID, ZoneID: t.z.ZoneID, At: t.now,
			Message: fmt.Sprintf("host is no longer reservable (%s); leases holding it: %s", why, strings.Join(affected, ", ")),
		})
	}
	if !v.Reservable && t.m.monitor(t.z.ZoneID).Push {
		for _, id := range affected {
			if l := t.lease(id); t.inWindow(l) {
				t.healLease(l)
			}
		}
	}
}

// reconcile is polling monitoring: every lease in the healing window is
// checked against the status table, which catches failures whose push was
// off or that happened before a lease entered the window.
func (t *tx) reconcile() {
	for _, l := range t.sorted(func(l *schemas.LeaseRecord) int64 { return l.Start }) {
		if t.inWindow(l) {
			t.healLease(l)
		}
	}
}

// inWindow says the lease is healed now: active, starting, or pending with
// a start within healing.window.
func (t *tx) inWindow(l *schemas.LeaseRecord) bool {
	switch l.Status {
	case Active, Starting:
		return true
	case Pending:
		return l.Start <= t.now+t.m.healingWindow().Milliseconds()
	}
	return false
}

// healLease takes every host of l that is not reservable out of its
// reservation and looks for a replacement over the rest of the lease's
// window. These are exactly the four cases of docs/design.md §8:
//
//	not started, replacement  → swap, flags unchanged            (1-1)
//	not started, none         → degraded, missing_resources      (1-2)
//	started, replacement      → swap, degraded, resources_changed (2-1)
//	started, none             → degraded, missing_resources      (2-2)
//
// A failed host is never given back when it recovers: the flags stay until
// an update gets the requested capacity (resources_changed, never).
func (t *tx) healLease(l *schemas.LeaseRecord) {
	started := l.Status == Active
	var notes []string
	// The replacement must be free over the whole window, the past part
	// included: the only leases that held a host there and still hold it
	// are ending ones whose VMs are still stopping on it.
	cal, taken := calendarOf(t.z, l.LeaseID), leaseHosts(l)
	from := l.Start
	for i := range l.Reservations {
		r := &l.Reservations[i]
		for _, failed := range slices.Clone(r.Hosts) {
			if t.reservable(failed) {
				continue
			}
			r.Hosts = slices.DeleteFunc(r.Hosts, func(h string) bool { return h == failed })
			repl, _ := t.candidates(cal, l.Project, r.HostProperties, from, l.End, taken)
			if len(repl) == 0 {
				l.Degraded, r.MissingResources = true, true
				notes = append(notes, fmt.Sprintf("host %s of %s failed: no replacement", failed, r.ID))
				continue
			}
			n := repl[0]
			taken[n] = true
			r.Hosts = append(r.Hosts, n)
			slices.Sort(r.Hosts)
			if started {
				l.Degraded, r.ResourcesChanged = true, true
				t.moveVMs(l, failed, n)
			}
			notes = append(notes, fmt.Sprintf("host %s of %s failed: replaced by %s", failed, r.ID, n))
		}
	}
	if len(notes) > 0 {
		t.notify(l, "healed", strings.Join(notes, "; "), "")
	}
}

// vacate runs at a lease's start. Placement keeps other projects off a
// lease's hosts only once the lease is active, so a host may have taken
// another project's VM while the lease waited: it is swapped for a free
// host that runs no other project's VM, flags unchanged like any swap
// before the start. With none free the lease keeps the host and the VM
// stays on it.
func (t *tx) vacate(l *schemas.LeaseRecord) {
	var notes []string
	cal, taken, pref := calendarOf(t.z, l.LeaseID), leaseHosts(l), t.preferences(l.Project)
	for i := range l.Reservations {
		r := &l.Reservations[i]
		for _, h := range slices.Clone(r.Hosts) {
			if pref[h] != prefShared {
				continue
			}
			repl, _ := t.candidates(cal, l.Project, r.HostProperties, l.Start, l.End, taken)
			if len(repl) == 0 {
				continue
			}
			taken[repl[0]] = true
			r.Hosts = append(slices.DeleteFunc(r.Hosts, func(x string) bool { return x == h }), repl[0])
			slices.Sort(r.Hosts)
			notes = append(notes, fmt.Sprintf("host %s of %s runs another account's VMs: replaced by %s", h, r.ID, repl[0]))
		}
	}
	if len(notes) > 0 {
		t.notify(l, "healed", strings.Join(notes, "; "), "")
	}
}

// moveVMs migrates the project's VMs off a failed host that is still Up
// (disabled or going into maintenance) to its replacement. A host that is
// not Up is the host processor's: its HA restarts the VMs, and placement
// puts them on the lease's dedicated hosts.
func (t *tx) moveVMs(l *schemas.LeaseRecord, from, to string) {
	if h := t.host(from); h == nil || h.Status != "Up" {
		return
	}
	for _, v := range t.vmsOf(l.Project, map[string]bool{from: true}) {
		id := schemas.BoundID(fmt.Sprintf("lease-%s-heal-%s-%s", l.LeaseID, from, v))
		t.out = append(t.out, schemas.Record{Topic: schemas.TopicVmCommands, Key: v, Headers: t.cmdHeaders(id),
			Value: &schemas.Migrate{VmCommand: schemas.VmCommand{CommandID: id, VmID: v, Account: l.Project,
				Origin: schemas.OriginInternal, IssuedAt: t.now, Caller: schemas.SystemCaller()}, HostID: to}})
	}
}
