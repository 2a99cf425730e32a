package vm

import (
	"fmt"

	"github.com/vmplane/vmplane/schemas"
)

// A VM on two hosts (issue 22). A host other than the VM's own reports the
// VM on it while the own host's last report has it there too, and no job
// is moving it. That is either a move seen from its far end first (an
// external live migration: the own host will report the VM gone) or a
// second copy (a host that came back after its VMs were restarted
// elsewhere, a start repeated by a confused agent): two writers of one
// disk, the one thing a control plane must never allow. One report cannot
// tell them apart, so the other host's report is kept as the VM's Twin and
// the own host's next report settles it:
//
//   - the own host still has the VM: it runs twice. An alert, and the copy
//     on the other host, which is not the VM's host, is powered off at once
//     (StopVm{force}, no job: fencing, not an action anyone asked for);
//   - the own host no longer has it: the VM moved, and follows the other
//     host as any out-of-band move does (power.go);
//   - the other host reports it gone first: nothing to settle.

// AlertRunningTwice is the kind of the alert of a VM found on two hosts.
const AlertRunningTwice = "VmRunningTwice"

// twinSeen keeps a report of the VM on host, not its own, when the own
// host's last word has the VM there too and no job is moving it; it
// reports whether it kept it (the report then changes nothing else).
func (t *tx) twinSeen(host, power string) bool {
	s := t.s
	if s.HostID == "" || s.Job.JobID != "" || s.PowerHost != s.HostID || !onHost(s.PowerState) {
		return false
	}
	if s.Rare.Twin == nil || s.Rare.Twin.HostID != host {
		s.Rare.Twin = &schemas.TwinReport{HostID: host, PowerState: power, OwnSeq: s.ReportSeq[s.HostID]}
	} else {
		s.Rare.Twin.PowerState = power
	}
	return true
}

// dropStaleTwin forgets a twin report that no longer means what it meant:
// a job started (it moves or stops the VM itself, and a report of another
// host during a job is the job's business), the VM's own host changed (a
// placement, a migration, a move: OwnSeq was that host's sequence), or the
// twin's host is now the VM's own.
func (t *tx) dropStaleTwin(orig *schemas.VmRecord) {
	s := t.s
	if s.Rare.Twin == nil {
		return
	}
	moved := orig == nil || orig.HostID != s.HostID
	if s.Job.JobID != "" || moved || s.Rare.Twin.HostID == s.HostID {
		s.Rare.Twin = nil
	}
}

// twinGone forgets the twin report of host, which no longer has the VM.
func (t *tx) twinGone(host string) {
	if t.s.Rare.Twin != nil && t.s.Rare.Twin.HostID == host {
		t.s.Rare.Twin = nil
	}
}

// twinSettled takes a report of the VM's own host while a twin report
// waits: a report newer than the twin's settles it (a HostDown of the own
// host, seq 0, always does). It reports whether the report has been fully
// handled.
func (t *tx) twinSettled(host, power string, at int64, seq int64) bool {
	s := t.s
	tw := *s.Rare.Twin
	if seq != 0 && seq <= tw.OwnSeq {
		return false
	}
	s.Rare.Twin = nil
	if onHost(power) {
		t.runningTwice(tw.HostID)
		return false // the own host's report is applied as usual
	}
	// The own host let the VM go: it moved to the other host. The own
	// host's word is recorded, then the other host's report is applied
	// again, which now follows the move.
	s.PowerState, s.PowerHost, s.PowerStateUpdateTime, s.PowerStateUpdateCount = power, host, t.ms, 1
	t.observe(tw.HostID, tw.PowerState, at, fmt.Sprintf("host %s reported %s and host %s no longer has the VM", tw.HostID, tw.PowerState, host))
	return true
}

// runningTwice raises the alert of a VM found on two hosts and powers off
// the copy on other, which is not the VM's host.
func (t *tx) runningTwice(other string) {
	s := t.s
	if other == s.HostID {
		return // never the VM's own host
	}
	id := schemas.BoundID(fmt.Sprintf("%s-twice-%s-%d", s.VmID, other, t.ms))
	t.alert(AlertRunningTwice, id, other, "", fmt.Sprintf("the VM runs on host %s and on host %s: the copy on %s is powered off", s.HostID, other, other))
	t.emit(schemas.TopicAgentCommands, other, &schemas.StopVm{AgentCommand: schemas.AgentCommand{
		CommandID: id, HostID: other, VmID: s.VmID, Epoch: s.Epoch, IssuedAt: t.ms}, Force: true})
}
