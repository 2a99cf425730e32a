package host

import (
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// admin applies an admin command to a known, not removed host. Commands are
// levels (enable, disable, remove), so a repeat changes nothing and needs no
// command-id dedup. Commands the current state does not allow are ignored:
// there is no rejection record for host commands yet, and the gateway can
// check the host's state before it sends one.
func (m *Machine) admin(s *schemas.HostRecord, now time.Time, hdr map[string]string, apply func(*schemas.HostRecord)) (*schemas.HostRecord, []schemas.Record) {
	if s == nil || s.Status.Status == StatusRemoved {
		return s, nil
	}
	r := clone(s)
	apply(r)
	return r, announce(&s.Status, r, now, hdr)
}

// enable returns a disabled host to placement. Hosts in (or preparing for)
// maintenance leave it through CancelMaintenance, not EnableHost.
func (m *Machine) enable(r *schemas.HostRecord) {
	switch r.Status.ResourceState {
	case ResourceDisabled, ResourceCreating, ResourceError:
		setResourceState(&r.Status, ResourceEnabled, "enabled by admin")
	}
}

// disable keeps placement off a host; its VMs keep running.
func (m *Machine) disable(r *schemas.HostRecord) {
	switch r.Status.ResourceState {
	case ResourceEnabled, ResourceCreating, ResourceError:
		setResourceState(&r.Status, ResourceDisabled, "disabled by admin")
	}
}

// Reasons of the admin's host commands.
const (
	ReasonAdded     = "added by admin; waiting for its agent"
	ReasonUnmanaged = "unmanaged by admin"
	ReasonManaged   = "managed again by admin"
)

// add registers a host before its agent connects, or brings a removed one
// back. The host waits in Creating, with no clock running, until its
// agent says hello. A host that is known and not removed is left as it is.
func (m *Machine) add(s *schemas.HostRecord, c *schemas.AddHost, now time.Time, hdr map[string]string) (*schemas.HostRecord, []schemas.Record) {
	if s != nil && s.Status.Status != StatusRemoved {
		return s, nil
	}
	var before *schemas.HostStatus
	r := &schemas.HostRecord{}
	if s != nil {
		before, r = &s.Status, clone(s)
		// Whatever it listed before its removal is history.
		r.VmLastSeen, r.MissingSent, r.Draining, r.DrainFailed, r.AgentID = nil, nil, nil, nil, ""
	}
	st := &r.Status
	st.HostID, st.Name, st.ZoneID, st.PodID, st.ClusterID, st.Hypervisor = c.HostID, c.Name, c.ZoneID, c.PodID, c.ClusterID, c.Hypervisor
	st.ResourceState = ResourceEnabled
	setStatus(st, StatusCreating, ReasonAdded)
	return r, announce(before, r, now, hdr)
}

// unmanage takes a host out of vmplane's hands: out of placement, and no
// missed ping is investigated or escalated (nothing is done to its VMs)
// until it is managed again. A host preparing for maintenance is first
// cancelled or left to finish.
func (m *Machine) unmanage(r *schemas.HostRecord) {
	switch r.Status.ResourceState {
	case ResourceEnabled, ResourceDisabled, ResourceMaintenance, ResourceErrorInMaintenance, ResourceError, ResourceCreating:
		setResourceState(&r.Status, ResourceUnmanaged, ReasonUnmanaged)
		r.Investigation, r.StepDeadline, r.AlertAt = "", 0, 0
	}
}

// manage takes an Unmanaged host back, Enabled; its agent has a ping
// timeout from now to be heard, as after a restart.
func (m *Machine) manage(r *schemas.HostRecord, now time.Time) {
	if r.Status.ResourceState != ResourceUnmanaged {
		return
	}
	setResourceState(&r.Status, ResourceEnabled, ReasonManaged)
	switch r.Status.Status {
	case StatusUp, StatusConnecting, StatusDisconnected:
		r.PingDeadline = now.Add(m.cfg.PingTimeout).UnixMilli()
	}
}

// removeHost removes a known host; a maintenance in progress ends
// cancelled with it.
func (m *Machine) removeHost(s *schemas.HostRecord, c *schemas.RemoveHost, now time.Time, hdr map[string]string) (*schemas.HostRecord, []schemas.Record) {
	if s == nil || s.Status.Status == StatusRemoved {
		return s, nil
	}
	r := clone(s)
	out := drainCancelled(r, c.Account+" (RemoveHost)", now, hdr)
	m.remove(r)
	return r, append(announce(&s.Status, r, now, hdr), out...)
}

// remove forgets a host: it is never reservable again and its agent is
// refused from then on. The resource state keeps the admin's last intent.
func (m *Machine) remove(r *schemas.HostRecord) {
	setStatus(&r.Status, StatusRemoved, ReasonRemoved)
	r.PingDeadline, r.GraceUntil = 0, 0
	r.Investigation, r.StepDeadline, r.AlertAt = "", 0, 0
	r.Draining, r.DrainFailed = nil, nil
}
