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

// remove forgets a host: it is never reservable again and its agent is
// refused from then on. The resource state keeps the admin's last intent.
func (m *Machine) remove(r *schemas.HostRecord) {
	setStatus(&r.Status, StatusRemoved, ReasonRemoved)
	r.PingDeadline, r.GraceUntil = 0, 0
	r.Investigation, r.StepDeadline, r.AlertAt = "", 0, 0
	r.Draining, r.DrainFailed = nil, nil
}
