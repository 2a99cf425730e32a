package host

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// Investigators, asked in Config.Investigators order when a host misses its
// ping (docs/design.md §6).
const (
	// InvestigatorNeighbour asks an agent of another host of the cluster
	// whether it can reach the host. Reachable is Up; unreachable is only
	// Unknown, since a neighbour cannot tell a dead host from a cut cable.
	InvestigatorNeighbour = "neighbour"
	// InvestigatorVmActivity asks a neighbour whether the VMs the host last
	// listed still show activity on shared storage: activity is Up (the host
	// runs them, only its network is gone); none proves nothing, so Unknown.
	InvestigatorVmActivity = "vm-activity"
	// InvestigatorFence asks a neighbour to power the host off through its
	// fencing device. A fenced host is Down for sure — it is the only
	// investigator whose answer can be Down by construction.
	InvestigatorFence = "fence"
)

// Verdicts of an investigator (CheckHostAnswer.Result).
const (
	VerdictUp      = "Up"
	VerdictDown    = "Down"
	VerdictUnknown = "Unknown"
)

// Reasons of the investigation's outcomes.
const (
	ReasonAlive        = "alive per "
	ReasonFenced       = "down per "
	ReasonInconclusive = "no investigator could tell whether the host is down"
)

// stepID mints the command id of one investigator of one round, so that a
// redelivered input asks with the same id and answers to an older round are
// recognised as stale.
func stepID(hostID string, round int64, investigator string) string {
	return schemas.BoundID(fmt.Sprintf("investigate:%s:%d:%s", hostID, round, investigator))
}

// investigate opens a new round at the first investigator. The alert clock
// starts with the first round since the host was last heard and runs on
// through the rounds after it: a host that no round finds Down — whether
// no investigator could tell, or they found it alive while its agent stays
// silent — turns Alert after AlertWait, and never Down.
func (m *Machine) investigate(r *schemas.HostRecord, now time.Time, hdr map[string]string) []schemas.Record {
	r.Round++
	r.PingDeadline, r.GraceUntil = 0, 0
	var out []schemas.Record
	if r.AlertAt == 0 {
		r.AlertAt = now.Add(m.cfg.AlertWait).UnixMilli()
		out = append(out, raise(r, AlertDisconnected, fmt.Sprintf("%s; no ping since %s; investigating, Alert at %s unless found down",
			r.Status.Reason, time.UnixMilli(r.Status.LastPingAt).UTC().Format(time.RFC3339), time.UnixMilli(r.AlertAt).UTC().Format(time.RFC3339)), now, hdr))
	}
	return append(out, m.ask(r, 0, now, hdr)...)
}

// ask sends investigator i its command, addressed by the host's cluster.
func (m *Machine) ask(r *schemas.HostRecord, i int, now time.Time, hdr map[string]string) []schemas.Record {
	name := m.cfg.Investigators[i]
	r.Investigation = name
	r.StepDeadline = now.Add(m.cfg.StepTimeout).UnixMilli()
	st := &r.Status
	// The step expires at its deadline: a fencing read later could power
	// off a host that has come back since (its answer would not count
	// anyway).
	base := schemas.AgentCommand{CommandID: stepID(st.HostID, r.Round, name), HostID: st.HostID, IssuedAt: now.UnixMilli(),
		ExpiresAt: r.StepDeadline}
	if name != InvestigatorFence {
		v := &schemas.CheckHost{AgentCommand: base, TargetHostID: st.HostID, ClusterID: st.ClusterID, Method: name, VmIDs: listed(r)}
		return []schemas.Record{{Topic: schemas.TopicAgentCommands, Key: st.HostID, Value: v, Headers: withCommand(hdr, base.CommandID)}}
	}
	v := &schemas.FenceHost{AgentCommand: base, TargetHostID: st.HostID, ClusterID: st.ClusterID}
	return []schemas.Record{
		{Topic: schemas.TopicAgentCommands, Key: st.HostID, Value: v, Headers: withCommand(hdr, base.CommandID)},
		raise(r, AlertFencing, fmt.Sprintf("the investigators before could not tell whether the host is down; fencing it through a neighbour of cluster %s (round %d)",
			st.ClusterID, r.Round), now, hdr),
	}
}

// answer applies an investigator's answer. Only the answer to the step in
// progress counts: a late answer to an earlier step or round could describe
// a host that has changed since.
func (m *Machine) answer(s *schemas.HostRecord, a *schemas.CheckHostAnswer, now time.Time, hdr map[string]string) (*schemas.HostRecord, []schemas.Record) {
	if s == nil || s.Investigation == "" || a.CommandID != stepID(s.Status.HostID, s.Round, s.Investigation) {
		return s, nil
	}
	r := clone(s)
	by := s.Investigation
	if a.Detail != "" {
		by += ": " + a.Detail
	}
	switch a.Result {
	case VerdictUp:
		// Alive: its agent is what is gone. No HA; look again if the
		// agent stays silent for another ping timeout, and turn Alert
		// if it is still silent at AlertAt.
		r.Investigation, r.StepDeadline = "", 0
		r.PingDeadline = now.Add(m.cfg.PingTimeout).UnixMilli()
		setStatus(&r.Status, StatusDisconnected, ReasonAlive+by)
		r.Status.Reason = ReasonAlive + by
		return r, announce(&s.Status, r, now, hdr)
	case VerdictDown:
		return r, m.down(s, r, ReasonFenced+by, now, hdr)
	default:
		return r, m.next(r, now, hdr)
	}
}

// next moves to the investigator after the current one; after the last, the
// round waits for AlertAt with nobody left to ask.
func (m *Machine) next(r *schemas.HostRecord, now time.Time, hdr map[string]string) []schemas.Record {
	i := slices.Index(m.cfg.Investigators, r.Investigation) + 1
	if i > 0 && i < len(m.cfg.Investigators) {
		return m.ask(r, i, now, hdr)
	}
	r.Investigation, r.StepDeadline = "", 0
	return nil
}

// stepTimeout counts an investigator that did not answer in time as
// Unknown. A late Tick (after a processor restart) is harmless here: the
// worst it does is move on to the next investigator, never to Down.
func (m *Machine) stepTimeout(s *schemas.HostRecord, now time.Time) (*schemas.HostRecord, []schemas.Record) {
	if now.Before(time.UnixMilli(s.StepDeadline)) {
		return s, nil
	}
	r := clone(s)
	return r, m.next(r, now, nil)
}

// alert gives up on a host no investigator could decide. Alert is for an
// operator; no VM is restarted, since one that may still run would then run
// twice and corrupt its disks.
func (m *Machine) alert(s *schemas.HostRecord, now time.Time) (*schemas.HostRecord, []schemas.Record) {
	if now.Before(time.UnixMilli(s.AlertAt)) {
		return s, nil
	}
	r := clone(s)
	reason := ReasonInconclusive
	if strings.HasPrefix(s.Status.Reason, ReasonAlive) {
		reason = fmt.Sprintf("agent silent since %s; host %s", time.UnixMilli(s.Status.LastPingAt).UTC().Format(time.RFC3339), s.Status.Reason)
	}
	r.AlertAt, r.Investigation, r.StepDeadline, r.PingDeadline, r.GraceUntil = 0, "", 0, 0, 0
	setStatus(&r.Status, StatusAlert, reason)
	out := announce(&s.Status, r, now, nil)
	return r, append(out, raise(r, AlertHostAlert, reason+"; no VM is restarted until an operator looks", now, nil))
}

// down marks a host Down on a definitive answer and tells every VM it last
// listed, so the VM processor restarts the HA ones elsewhere. VMs already
// told missing are left out: they may run elsewhere by now.
func (m *Machine) down(before, r *schemas.HostRecord, reason string, now time.Time, hdr map[string]string) []schemas.Record {
	r.Investigation, r.StepDeadline, r.AlertAt, r.PingDeadline, r.GraceUntil = "", 0, 0, 0, 0
	setStatus(&r.Status, StatusDown, reason)
	out := announce(&before.Status, r, now, hdr)
	told := listed(r)
	out = append(out, raise(r, AlertHostDown, fmt.Sprintf("%s; %d VM(s) told, HA ones restart elsewhere", reason, len(told)), now, hdr))
	// Told once: no VmMissingFromHost for them when the host comes back.
	r.MissingSent = append(r.MissingSent, told...)
	for _, id := range told {
		out = append(out, schemas.Record{Topic: schemas.TopicVmSignals, Key: id, Headers: hdr, Value: &schemas.HostDown{
			VmID: id, HostID: r.Status.HostID, Reason: reason, At: now.UnixMilli()}})
	}
	return out
}

// listed returns, sorted, the VMs the host listed last: those it has listed
// and not since stopped listing.
func listed(r *schemas.HostRecord) []string {
	var out []string
	for _, id := range slices.Sorted(maps.Keys(r.VmLastSeen)) {
		if !slices.Contains(r.MissingSent, id) {
			out = append(out, id)
		}
	}
	return out
}

// withCommand adds the command_id header every command carries.
func withCommand(hdr map[string]string, id string) map[string]string {
	h := maps.Clone(hdr)
	if h == nil {
		h = map[string]string{}
	}
	h["command_id"] = id
	return h
}
