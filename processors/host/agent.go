package host

import (
	"fmt"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// Reasons recorded on a host's status or sent to its agent.
const (
	ReasonConnected   = "agent connected; waiting for its first report round"
	ReasonPing        = "ping"
	ReasonPingTimeout = "ping timeout"
	ReasonRemoved     = "removed by admin"
	ReasonUnknownHost = "unknown host"
	ReasonRemovedHost = "host removed"
)

// connected registers a host on its agent's hello, or refuses the agent of
// an unknown (without auto-registration) or removed host. A host an admin
// added (Creating) is known.
func (m *Machine) connected(s *schemas.HostRecord, ev *schemas.AgentConnected, in schemas.Record, now time.Time, hdr map[string]string) (*schemas.HostRecord, []schemas.Record) {
	switch {
	case s == nil && !m.cfg.AutoRegister:
		return nil, []schemas.Record{reject(ev, in, ReasonUnknownHost, now, hdr)}
	case s != nil && s.Status.Status == StatusRemoved:
		return s, []schemas.Record{reject(ev, in, ReasonRemovedHost, now, hdr)}
	}
	var before *schemas.HostStatus
	var r *schemas.HostRecord
	if s == nil {
		r = &schemas.HostRecord{Status: schemas.HostStatus{HostID: ev.HostID, ResourceState: ResourceEnabled}}
	} else {
		before = &s.Status
		r = clone(s)
	}
	st := &r.Status
	st.Name, st.ZoneID, st.PodID, st.ClusterID, st.Hypervisor = ev.Name, ev.ZoneID, ev.PodID, ev.ClusterID, ev.Hypervisor
	st.CPU, st.MemoryMB = ev.CPU, ev.MemoryMB
	st.Tags, st.Properties = ev.Tags, ev.Properties
	r.AgentID = ev.AgentID
	// Up only once its first report round has ended (its ping): until
	// then the VM processor has not heard what the host runs, and
	// placement must not choose it.
	setStatus(st, StatusConnecting, ReasonConnected)
	m.heard(r, now)
	out := announce(before, r, now, hdr)
	// The hello lists the host's VMs like a ping does, but carries no
	// report sequence: a VM it leaves out is told missing by the next
	// ping, under that ping's sequence. The last ping's sequence is older
	// than anything the agent said since it reconnected, and the VM
	// processor would take the signal for a stale one (found by the
	// simulation, seed 6411: a VM that moved while its old host was away
	// was never released by that host).
	return r, append(out, m.observeVms(r, ev.VmIDs, 0, now, hdr)...)
}

// disconnected records an agent's orderly goodbye. The host is Disconnected
// at once, but its clocks run on as for a silent host (the AgentManager
// seed): if no agent pings by the ping deadline it is investigated, and it
// turns Alert after alert.wait unless found Down. A goodbye says why the
// agent left, not that the host or its VMs are gone.
func (m *Machine) disconnected(s *schemas.HostRecord, ev *schemas.AgentDisconnected, now time.Time, hdr map[string]string) (*schemas.HostRecord, []schemas.Record) {
	if s == nil || s.Status.Status == StatusRemoved || s.Status.Status == StatusDown || s.Status.Status == StatusAlert {
		return s, nil
	}
	r := clone(s)
	setStatus(&r.Status, StatusDisconnected, "agent disconnected: "+ev.Reason)
	if r.Investigation == "" && r.PingDeadline == 0 {
		r.PingDeadline = now.Add(m.cfg.PingTimeout).UnixMilli()
	}
	return r, announce(&s.Status, r, now, hdr)
}

// reject refuses an agent. The command id comes from the refused record's
// place in the log, so a redelivery refuses with the same id.
func reject(ev *schemas.AgentConnected, in schemas.Record, reason string, now time.Time, hdr map[string]string) schemas.Record {
	id := schemas.BoundID(fmt.Sprintf("reject:%s:%d:%d", ev.HostID, in.Partition, in.Offset))
	return schemas.Record{Topic: schemas.TopicAgentCommands, Key: ev.HostID, Headers: withCommand(hdr, id), Value: &schemas.AgentRejected{
		AgentCommand: schemas.AgentCommand{CommandID: id, HostID: ev.HostID, IssuedAt: now.UnixMilli()},
		Reason:       reason,
	}}
}
