package vm

import (
	"fmt"
	"slices"

	"github.com/vmplane/vmplane/schemas"
)

// Power reports (docs/design.md §5.4). Agents report raw power state only. A report
// wakes the job in flight, or, with no job, is a fact the VM follows (with
// an alert when it contradicts the VM, and a claim of its capacity where it
// now runs, adopt.go). Same-state reports past PowerStateUpdateLimit produce
// nothing, which keeps the steady state free of events and so of database
// writes. A fenced host is handled in hostdown.go.

func (t *tx) powerReport(r *schemas.PowerReport) {
	if !t.fresh(r.HostID, r.ReportSeq) {
		return
	}
	if r.ReportedAt != 0 && r.ReportedAt < t.s.Rare.ReportsAfter {
		// Taken before a command the VM processor gave up on expired,
		// or before a migration it saw end: what it saw may be undone
		// already (staleBefore).
		t.s.StaleIgnored++
		return
	}
	t.seq = r.ReportSeq
	t.guestReport = r.HostID == t.s.HostID
	t.observe(r.HostID, r.PowerState, r.ReportedAt, fmt.Sprintf("host %s reported %s", r.HostID, r.PowerState))
}

// fresh records a host's report sequence and reports whether seq is newer
// than the last one seen from that host; an older one is stale.
func (t *tx) fresh(host string, seq int64) bool {
	if last, ok := t.s.ReportSeq[host]; ok && seq <= last {
		t.s.StaleIgnored++
		return false
	}
	if t.s.ReportSeq == nil {
		t.s.ReportSeq = map[string]int64{}
	}
	t.s.ReportSeq[host] = seq
	return true
}

// seenUpTo records that a host's reports up to seq are older than what
// the VM processor knows (an agent's answer read the power after them).
func (t *tx) seenUpTo(host string, seq int64) {
	if last, ok := t.s.ReportSeq[host]; ok && last >= seq {
		return
	}
	if t.s.ReportSeq == nil {
		t.s.ReportSeq = map[string]int64{}
	}
	t.s.ReportSeq[host] = seq
}

// observe applies one power observation of the VM on host. at is when the
// host observed it (0 when unknown).
func (t *tx) observe(host, power string, at int64, why string) {
	s := t.s
	job := s.Job.JobID
	from := s.VmState
	moved := false
	if s.VmState == StateDeleted && job == "" {
		// The VM is gone; late reports from its old host change nothing.
		return
	}
	if t.foundOffElsewhere(host, power) {
		return
	}
	if host != s.HostID {
		var done bool
		if done, moved, why = t.otherHost(host, power, why); done {
			return
		}
	}
	if host == s.HostID && s.Rare.Twin != nil && t.twinSettled(host, power, at, t.seq) {
		return
	}
	same := s.PowerState == power && s.PowerHost == host
	if same {
		s.PowerStateUpdateCount = saturatingInc(s.PowerStateUpdateCount)
	} else {
		s.PowerStateUpdateCount = 1
		t.changed(job, why)
	}
	s.PowerState, s.PowerHost, s.PowerStateUpdateTime = power, host, t.ms
	if job != "" {
		if moved && !flowOf(s.Job.JobType).placesVm() {
			// The job neither placed the VM nor moves it: the host
			// change is not its business, and the capacity follows it
			// as without a job (found by the simulation, seed 1559: a
			// migration that gave up released its destination, and the
			// report that it had moved came during a Reboot). A job that
			// places or moves the VM settles its claims itself.
			t.adopt(host)
		}
		t.wakeJob(host, power, at)
		return
	}
	if consistent(s.VmState, power) {
		if !same {
			t.errorFoundOff(host, power)
		}
		if moved {
			t.alert("VmStateSync", fmt.Sprintf("%s-sync-%d", s.VmID, t.ms), host, "", why+": out-of-band move, the host follows")
		}
		if s.PowerStateUpdateCount <= t.cfg.PowerStateUpdateLimit {
			t.event(&schemas.PowerStateObserved{VmID: s.VmID, HostID: host, PowerState: power, Count: s.PowerStateUpdateCount, At: t.ms})
		}
	} else {
		t.follow(host, power, why)
	}
	if onHost(power) && (moved || !holdsCapacity(from)) {
		// Started or moved outside vmplane: the capacity it uses there is
		// claimed, whether or not it fits.
		t.adopt(host)
	}
}

// otherHost applies a report of a host other than the VM's: done says
// the report needs nothing more, moved that the VM now belongs to host,
// why the reason its change gives.
func (t *tx) otherHost(host, power, why string) (done, moved bool, _ string) {
	s := t.s
	if s.HostID != "" && !onHost(power) {
		// Another host saying the VM is not running there says nothing
		// about where it runs (an old host's report must not override
		// the current one's, CloudStack bug #3741), but ends a twin
		// report of that host (twin.go).
		t.twinGone(host)
		return true, false, why
	}
	if !onHost(power) {
		return false, false, why
	}
	if t.twinSeen(host, power) {
		return true, false, why
	}
	// The VM runs elsewhere (an external live migration, a start by
	// another manager): the host is honoured, even during a job.
	if s.HostID != "" {
		why = fmt.Sprintf("%s (the VM was on host %s)", why, s.HostID)
		moved = true
	}
	s.HostID, s.PodID, s.ClusterID = host, "", ""
	t.changed(s.Job.JobID, why)
	return false, moved, why
}

// foundOffElsewhere takes a report that finds the VM off on a host other
// than its own, with no job running. A host the VM may be on (maybeon.go)
// gives its claim back. Of an Error VM vmplane lost track of (a terminate
// or a migration that ended not knowing where it is, its power unknown)
// with no such host, every claim it may hold goes (found by the
// simulation, seed 30084: a terminate that cancelled a migration failed,
// the VM sat off on the destination, and both hosts kept their claims).
// The VM stays placed where it was: a copy defined elsewhere says nothing
// of whether it runs there (seed 62519: taking the other host for its
// place sent the next Terminate there, and the guest running on the first
// survived the VM's deletion). A later report that finds it running
// adopts it.
func (t *tx) foundOffElsewhere(host, power string) bool {
	s := t.s
	if host == s.HostID || onHost(power) || power == schemas.PowerUnknown || s.Job.JobID != "" {
		return false
	}
	if slices.Contains(s.Rare.MaybeOn, host) {
		t.release(host)
		return true
	}
	if s.VmState != StateError || s.PowerState != schemas.PowerUnknown || s.PowerHost != "" || len(s.Rare.MaybeOn) > 0 {
		return false
	}
	t.release("")
	s.PowerState, s.PowerHost, s.PowerStateUpdateTime, s.PowerStateUpdateCount = power, host, t.ms, 1
	return true
}

// errorFoundOff gives back the claim an Error VM holds where it might run
// (a start or a terminate that got no answer, a migration no report
// settled) when its host newly finds it off: it runs nowhere vmplane knows
// of, and a host it runs on after all reports it and adopts it (found by
// the simulation, seed 184: a destination's claim outlived a failed
// terminate). With no other host it may be on, every claim of the VM goes;
// a host it may be on keeps its claim until it answers (maybeon.go).
func (t *tx) errorFoundOff(host, power string) {
	s := t.s
	if s.VmState != StateError || host != s.HostID || onHost(power) || power == schemas.PowerUnknown {
		return
	}
	if len(s.Rare.MaybeOn) > 0 {
		t.release(host)
		return
	}
	t.release("")
}

// follow moves a VM with no job to the state a contradicting report says,
// with an alert: the change happened outside vmplane.
func (t *tx) follow(host, power, why string) {
	s := t.s
	from := s.VmState
	s.VmState = stationaryFor(power)
	s.Rare.HAAwaitsCheck = false
	msg := fmt.Sprintf("%s while the VM was %s: out-of-band change, the VM follows to %s", why, from, s.VmState)
	ha := s.HA && from == StateActive && !onHost(power)
	switch {
	case ha:
	case t.guestReport && power == schemas.PowerOff && (from == StateActive || from == StateResized || from == StateRescued):
		// The host says a running VM is off and no job stopped it: the
		// guest powered itself off (CloudStack's rule for a PowerOff
		// with no job in flight). The first report is enough.
		msg = fmt.Sprintf("VM %s powered off on host %s while it was %s, with no job in flight: shut down from inside the guest (or its process ended); the VM is Stopped", s.VmID, host, from)
		t.alert("GuestShutdown", fmt.Sprintf("%s-guest-shutdown-%d", s.VmID, t.ms), host, "", msg)
	default:
		t.alert("VmStateSync", fmt.Sprintf("%s-sync-%d", s.VmID, t.ms), host, "", msg)
	}
	t.changed("", msg)
	if s.VmState == StateStopped && from != StateError {
		// A Stopped VM holds no capacity (Start asks placement again).
		t.release(s.HostID)
	}
	switch {
	case ha && s.HostID != "" && t.downHost == "":
		// An HA VM is not left off, but a report may be old, and the
		// host may have started the VM again since and be out of reach
		// now: the restart waits for the host to confirm with CheckVm
		// that the VM is off (maybeon.go; found by the simulation, seeds
		// 20604 and 60313: a restart decided on a report while the host,
		// disconnected, ran the VM). A host that is down is not asked:
		// it was fenced (hostdown.go).
		s.Rare.HAAwaitsCheck = true
	case ha:
		// An internal job starts it again.
		t.startHA(t.downHost)
	}
}

// missingFromHost treats a VM that its host stopped listing as PowerOff
// from that host, unless a newer report says otherwise: the latest report
// came from another host, or the same host reported after the miss.
func (t *tx) missingFromHost(m *schemas.VmMissingFromHost) {
	s := t.s
	if m.HostID != "" && m.HostID != s.HostID {
		t.twinGone(m.HostID) // the other host no longer has it
	}
	if m.HostID == "" || (m.HostID != s.HostID && m.HostID != s.PowerHost) {
		return
	}
	if s.PowerHost != "" && s.PowerHost != m.HostID {
		return
	}
	if last, ok := s.ReportSeq[m.HostID]; ok && last > m.ReportSeq {
		return
	}
	t.seq = m.ReportSeq
	t.observe(m.HostID, schemas.PowerOff, 0, fmt.Sprintf("host %s no longer lists the VM", m.HostID))
}
