package host

import (
	"maps"
	"slices"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// ping records an agent's heartbeat: the host is Up again whatever it was
// (a host that pings is alive), and its VM list is compared with the last.
// Pings of unknown or removed hosts are ignored.
func (m *Machine) ping(s *schemas.HostRecord, p *schemas.AgentPing, now time.Time, hdr map[string]string) (*schemas.HostRecord, []schemas.Record) {
	if s == nil || s.Status.Status == StatusRemoved {
		return s, nil
	}
	r := clone(s)
	setStatus(&r.Status, StatusUp, ReasonPing)
	m.heard(r, now)
	r.LastReportSeq = max(r.LastReportSeq, p.ReportSeq)
	out := announce(&s.Status, r, now, hdr)
	if out == nil && now.Sub(time.UnixMilli(r.Status.UpdatedAt)) >= m.cfg.StatusRefresh {
		// Unchanged, but the published last_ping_at is getting old: one
		// refresh per StatusRefresh keeps it honest at a bounded cost.
		out = publish(r, now, hdr)
	}
	return r, append(out, m.observeVms(r, p.VmIDs, p.ReportSeq, now, hdr)...)
}

// heard moves the ping deadline on. A host that has pinged has nothing left
// to prove, so any restart grace and any investigation end with it.
func (m *Machine) heard(r *schemas.HostRecord, now time.Time) {
	r.Status.LastPingAt = now.UnixMilli()
	r.PingDeadline = now.Add(m.cfg.PingTimeout).UnixMilli()
	r.GraceUntil = 0
	r.Investigation, r.StepDeadline, r.AlertAt = "", 0, 0
}

// observeVms records which VMs the host lists and tells each VM the host
// stopped listing for longer than MissingGrace, once, until it is listed
// again, under seq, the report sequence of the listing (0: a listing
// without one, which tells no VM). VMs told long ago are forgotten so the
// record does not grow with every VM that ever left the host.
func (m *Machine) observeVms(r *schemas.HostRecord, vmIDs []string, seq int64, now time.Time, hdr map[string]string) []schemas.Record {
	if r.VmLastSeen == nil {
		r.VmLastSeen = map[string]int64{}
	}
	listed := map[string]bool{}
	for _, id := range vmIDs {
		listed[id] = true
		r.VmLastSeen[id] = now.UnixMilli()
	}
	r.MissingSent = slices.DeleteFunc(r.MissingSent, func(id string) bool { return listed[id] })

	var out []schemas.Record
	for _, id := range slices.Sorted(maps.Keys(r.VmLastSeen)) {
		if seq == 0 && !listed[id] {
			continue
		}
		last := time.UnixMilli(r.VmLastSeen[id])
		switch {
		case listed[id]:
		case slices.Contains(r.MissingSent, id):
			if now.Sub(last) > m.cfg.VmForget {
				delete(r.VmLastSeen, id)
				r.MissingSent = slices.DeleteFunc(r.MissingSent, func(s string) bool { return s == id })
			}
		case now.Sub(last) > m.cfg.MissingGrace:
			r.MissingSent = append(r.MissingSent, id)
			out = append(out, schemas.Record{Topic: schemas.TopicVmSignals, Key: id, Headers: hdr, Value: &schemas.VmMissingFromHost{
				VmID: id, HostID: r.Status.HostID, LastSeenAt: last.UnixMilli(), ReportSeq: seq,
			}})
		}
	}
	if len(r.VmLastSeen) == 0 {
		r.VmLastSeen = nil
	}
	return out
}

// pingTimeout makes an Up host whose ping deadline passed Disconnected and
// opens an investigation (investigate.go); a Disconnected host found alive
// by an earlier round that is still silent is investigated again.
//
// The runtime cannot say that it restarted, yet after a restart (or a
// partition handover) every deadline that fell while no one was running is
// already past, and the agents' pings of that time may still be waiting in
// the topic behind the timer. Marking those hosts Disconnected would be a
// storm of false alarms. So a Tick that comes later than TickSlack after its
// wake time is taken for what it is — proof the processor was not running —
// and opens a restart grace instead: every host gets RestartGrace to ping
// again before its missed ping counts. A timely Tick of a machine that is not
// current (lag.go: it has read nothing yet, or is reading a backlog) opens
// the same grace, once: a host silent through it times out at its end. A
// timely Tick of a current machine is an ordinary timeout, so ping.timeout
// keeps its meaning while the processor keeps up.
func (m *Machine) pingTimeout(s *schemas.HostRecord, now time.Time) (*schemas.HostRecord, []schemas.Record) {
	wake := pingWake(s)
	if wake.IsZero() || now.Before(wake) {
		return s, nil
	}
	r := clone(s)
	switch {
	case s.Status.Status != StatusUp && s.Status.Status != StatusDisconnected && s.Status.Status != StatusConnecting:
		// Nothing to investigate; the deadline is spent.
		r.PingDeadline, r.GraceUntil = 0, 0
		return r, nil
	case now.Sub(wake) > m.cfg.TickSlack, !m.current && s.GraceUntil == 0:
		r.GraceUntil = now.Add(m.cfg.RestartGrace).UnixMilli()
		return r, nil
	case s.Status.ResourceState == ResourceUnmanaged:
		// Shown as it is, Disconnected, but neither investigated nor
		// escalated: an operator has the host in hand.
		r.PingDeadline, r.GraceUntil = 0, 0
		setStatus(&r.Status, StatusDisconnected, ReasonPingTimeout+" (unmanaged: not investigated)")
		return r, announce(&s.Status, r, now, nil)
	}
	setStatus(&r.Status, StatusDisconnected, ReasonPingTimeout)
	out := announce(&s.Status, r, now, nil)
	return r, append(out, m.investigate(r, now, nil)...)
}
