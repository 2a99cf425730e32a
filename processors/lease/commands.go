package lease

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/vmplane/vmplane/schemas"
)

// validSpecs checks reservation specs; the gateway checks the same, so this
// only catches records written by something else.
func validSpecs(specs []schemas.ReservationSpec) error {
	if len(specs) == 0 {
		return errors.New("a lease needs at least one reservation")
	}
	for i, s := range specs {
		if s.MinHosts < 1 || s.MaxHosts < s.MinHosts {
			return fmt.Errorf("reservation %d: want 1 <= min_hosts <= max_hosts, got %d..%d", i+1, s.MinHosts, s.MaxHosts)
		}
	}
	return nil
}

// create makes a lease: its hosts are allocated at once, for its whole
// window, within the policy (budget). A lease whose hosts cannot all be
// found, or that the policy refuses, is kept in ERROR with the reason, so
// the owner sees why (and can delete it).
func (t *tx) create(c *schemas.CreateLease) {
	if l := t.lease(c.LeaseID); l != nil {
		t.notify(l, "create_failed", "lease "+c.LeaseID+" exists", c.CommandID)
		return
	}
	start := max(c.Start, t.now) // "now", or a command that waited in the log
	l := schemas.LeaseRecord{LeaseID: c.LeaseID, Project: c.Project, Name: c.Name, Status: Pending,
		Start: start, End: c.End, CreatedAt: t.now}
	for i, s := range c.Reservations {
		l.Reservations = append(l.Reservations, schemas.Reservation{ID: schemas.BoundID(fmt.Sprintf("%s-r%d", c.LeaseID, i+1)),
			Status: ResPending, MinHosts: s.MinHosts, MaxHosts: s.MaxHosts, HostProperties: maps.Clone(s.HostProperties)})
	}
	notes, err := t.admit(&l, c.Reservations, c.Admin)
	t.z.Leases = append(t.z.Leases, l)
	lp := &t.z.Leases[len(t.z.Leases)-1]
	if err != nil {
		for i := range lp.Reservations {
			r := &lp.Reservations[i]
			r.Hosts = nil
			r.Status, _ = nextRes(r.Status, resFail)
		}
		lp.Status, _ = nextLease(lp.Status, "", evFail)
		lp.Reason, lp.DoneAt = err.Error(), t.now
		t.notify(lp, "create_failed", err.Error(), c.CommandID)
		return
	}
	t.notify(lp, "created", strings.Join(notes, "; "), c.CommandID)
	if lp.Start <= t.now {
		t.start(lp)
	}
}

// admit checks a new lease against its specs and the policy and allocates
// its hosts, or says why it cannot have them.
func (t *tx) admit(l *schemas.LeaseRecord, specs []schemas.ReservationSpec, admin bool) ([]string, error) {
	if err := validSpecs(specs); err != nil {
		return nil, err
	}
	if l.End <= l.Start {
		return nil, errors.New("end must be after start")
	}
	most, err := t.budget(l, nil, admin)
	if err != nil {
		return nil, err
	}
	return t.allocateAll(l, most)
}

// rejectUnknown answers a command about a lease the zone does not have: a
// notification with no status, which the read model lists but never turns
// into a lease.
func (t *tx) rejectUnknown(id, project, event, cmd string) {
	t.emit(schemas.TopicLeaseEvents, t.z.ZoneID, &schemas.LeaseStatusChanged{LeaseID: id, ZoneID: t.z.ZoneID,
		Project: project, Event: event, Detail: "no lease " + id + " in zone " + t.z.ZoneID, At: t.now, CommandID: cmd})
}

// update changes a lease's dates or host counts, all or nothing: the
// reservations are allocated again over the new window (keeping the hosts
// that still fit) and, when any falls short of its minimum, nothing
// changes and the lease returns to its previous status with update_failed.
// A successful update that gets the requested capacity is the only thing
// that clears missing_resources and degraded (resources_changed stays).
func (t *tx) update(c *schemas.UpdateLease) {
	l := t.lease(c.LeaseID)
	if l == nil {
		t.rejectUnknown(c.LeaseID, c.Project, "update_failed", c.CommandID)
		return
	}
	if c.Project != "" && c.Project != l.Project {
		t.notify(l, "update_failed", "lease belongs to another project", c.CommandID)
		return
	}
	prev := l.Status
	to, err := nextLease(l.Status, "", evUpdate)
	if err != nil {
		t.notify(l, "update_failed", err.Error(), c.CommandID)
		return
	}
	l.Status = to
	t.notify(l, "updating", "", c.CommandID)
	next, notes, err := t.reallocate(l, prev, c)
	if err != nil {
		l.Status, _ = nextLease(l.Status, prev, evUpdateErr)
		t.notify(l, "update_failed", err.Error(), c.CommandID)
		return
	}
	next.Status, _ = nextLease(l.Status, prev, evUpdated)
	*l = next
	t.notify(l, "updated", strings.Join(notes, "; "), c.CommandID)
	if l.Status == Pending && l.Start <= t.now {
		t.start(l)
	}
}

// reallocate returns l as the update would leave it, with the notes of
// its allocation, or why it cannot be had.
func (t *tx) reallocate(l *schemas.LeaseRecord, prev string, c *schemas.UpdateLease) (schemas.LeaseRecord, []string, error) {
	n := *l
	n.Reservations = make([]schemas.Reservation, len(l.Reservations))
	for i, r := range l.Reservations {
		r.Hosts = slices.Clone(r.Hosts)
		n.Reservations[i] = r
	}
	if c.Start != 0 && c.Start != l.Start {
		if prev != Pending {
			return n, nil, errors.New("the start of a started lease cannot change")
		}
		n.Start = max(c.Start, t.now)
	}
	if c.End != 0 {
		n.End = c.End
	}
	if n.End <= max(n.Start, t.now) {
		return n, nil, errors.New("end must be after start and in the future")
	}
	if len(c.Reservations) > 0 {
		if len(c.Reservations) != len(n.Reservations) {
			return n, nil, fmt.Errorf("the lease has %d reservations; an update gives %d", len(n.Reservations), len(c.Reservations))
		}
		if err := validSpecs(c.Reservations); err != nil {
			return n, nil, err
		}
		for i, s := range c.Reservations {
			n.Reservations[i].MinHosts, n.Reservations[i].MaxHosts = s.MinHosts, s.MaxHosts
			if s.HostProperties != nil {
				n.Reservations[i].HostProperties = maps.Clone(s.HostProperties)
			}
		}
	}
	most, err := t.budget(&n, l, c.Admin)
	if err != nil {
		return n, nil, err
	}
	notes, err := t.allocateAll(&n, most)
	if err != nil {
		return n, nil, err
	}
	for i := range n.Reservations {
		// The requested capacity is met: the healing shortfall is over.
		n.Reservations[i].MissingResources = false
	}
	n.Degraded = degraded(&n)
	return n, notes, nil
}

// degraded is the lease flag: some reservation lacks or changed hosts.
func degraded(l *schemas.LeaseRecord) bool {
	return slices.ContainsFunc(l.Reservations, func(r schemas.Reservation) bool {
		return r.MissingResources || r.ResourcesChanged
	})
}

// delete ends a lease early and removes it. An active lease stops the
// project's VMs on its hosts first, like an end.
func (t *tx) delete(c *schemas.DeleteLease) {
	l := t.lease(c.LeaseID)
	if l == nil {
		t.rejectUnknown(c.LeaseID, c.Project, "delete_failed", c.CommandID)
		return
	}
	if c.Project != "" && c.Project != l.Project {
		t.notify(l, "delete_failed", "lease belongs to another project", c.CommandID)
		return
	}
	was := l.Status
	to, err := nextLease(l.Status, "", evDelete)
	if err != nil {
		t.notify(l, "delete_failed", err.Error(), c.CommandID)
		return
	}
	l.Status = to
	t.notify(l, "deleting", "", c.CommandID)
	if was == Active {
		// The stops and the end job are the caller's doing.
		caller := c.Caller
		if caller.Account == "" {
			caller = schemas.SystemCaller()
		}
		t.stopVMs(l, caller)
	}
	if len(l.StopWait) == 0 {
		t.finish(l, "")
	}
}
