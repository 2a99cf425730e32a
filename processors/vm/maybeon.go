package vm

import (
	"fmt"
	"slices"

	"github.com/vmplane/vmplane/schemas"
)

// A job that ends not knowing whether the VM moved (a migration no report
// settled, a terminate that cancelled a migration and then failed) keeps
// the claims of both hosts: releasing the one the VM turns out to run on
// lets placement fill that host, and the VM's next report then adopts it
// beyond its capacity (found by the simulation, seed 2547 and 25 more). The
// host besides the VM's own is kept in VmRecord.MaybeOn, and since a host
// that never had the VM never reports it, each is asked with CheckVm, a
// command that changes nothing, every resend interval while no job runs,
// until its agent answers: running there, the VM is adopted there and every
// other claim goes; off or absent, that host's claim goes. The VM's own
// host is asked too while the VM is in Error with its power unknown, so a
// claim there does not outlive a VM destroyed without its answer (seed
// 46128), and while an HA restart waits for it to confirm that the VM is
// off (power.go, follow). A Terminate destroys the VM on every such host;
// a fenced host needs no answer (hostdown.go).

// typeCheckVm is the command_type of an answer to a CheckVm.
const typeCheckVm = "CheckVm"

// mayBeOn keeps host's claim for the VM: it may be there.
func (t *tx) mayBeOn(host string) {
	s := t.s
	if host == "" || host == s.HostID || slices.Contains(s.Rare.MaybeOn, host) {
		return
	}
	s.Rare.MaybeOn = append(s.Rare.MaybeOn, host)
}

// notOn forgets host as one the VM may be on; its claim is released by
// the caller (release does both).
func (t *tx) notOn(host string) {
	if host == "" {
		t.s.Rare.MaybeOn = nil
		return
	}
	t.s.Rare.MaybeOn = slices.DeleteFunc(t.s.Rare.MaybeOn, func(h string) bool { return h == host })
	if len(t.s.Rare.MaybeOn) == 0 {
		t.s.Rare.MaybeOn = nil
	}
}

// checkHosts are the hosts a CheckVm round asks: those the VM may be on,
// and its own host while the VM is in Error with its power unknown, while
// an HA restart waits for it to confirm the VM is off, or while another
// host reports the VM (a twin, which the own host's next word settles: a
// host that never listed the VM never reports it gone).
func (t *tx) checkHosts() []string {
	hosts := slices.Clone(t.s.Rare.MaybeOn)
	if t.checkOwnHost() {
		hosts = append(hosts, t.s.HostID)
	}
	return hosts
}

// checkOwnHost says whether a CheckVm round asks the VM's own host.
func (t *tx) checkOwnHost() bool {
	s := t.s
	return s.HostID != "" && (s.Rare.HAAwaitsCheck || s.Rare.Twin != nil || (s.VmState == StateError && s.PowerState == schemas.PowerUnknown))
}

// planCheck keeps CheckAt at the end of every step: a round due now when
// the VM has hosts to ask and none is due later, none when it has none.
func (t *tx) planCheck() {
	s := t.s
	switch {
	case len(s.Rare.MaybeOn) == 0 && !t.checkOwnHost():
		s.Rare.CheckAt = 0
	case s.Rare.CheckAt < t.ms:
		s.Rare.CheckAt = t.ms
	}
}

// checkDue sends a round of CheckVm when one is due and no job runs; the
// next round follows a resend interval later, until no host is left to
// ask. Each command expires when the next round goes.
func (t *tx) checkDue() {
	s := t.s
	if s.Rare.CheckAt == 0 || t.ms < s.Rare.CheckAt || s.Job.JobID != "" {
		return
	}
	hosts := t.checkHosts()
	if len(hosts) == 0 {
		s.Rare.CheckAt = 0
		return
	}
	next := t.ms + t.cfg.ResendAfter.Milliseconds()
	for _, h := range hosts {
		t.emit(schemas.TopicAgentCommands, h, &schemas.CheckVm{AgentCommand: schemas.AgentCommand{
			CommandID: schemas.BoundID(fmt.Sprintf("%s-check-%d-%s", s.VmID, t.ms, h)), HostID: h, VmID: s.VmID,
			Epoch: s.Epoch, IssuedAt: t.ms, ExpiresAt: next}})
	}
	s.Rare.CheckAt = next
}

// checkAnswered applies an agent's answer to a CheckVm. Only an answer of
// the current epoch read while no job runs counts (a job's own commands
// settle what it does), and only one newer than the last report of that
// host.
func (t *tx) checkAnswered(a *schemas.AgentAnswer) {
	s := t.s
	host := a.PowerHost
	asked := slices.Contains(s.Rare.MaybeOn, host) || (host == s.HostID && t.checkOwnHost())
	if a.Epoch != s.Epoch || s.Job.JobID != "" || !a.OK || host != a.HostID || a.PowerState == schemas.PowerUnknown || !asked {
		return
	}
	if !t.fresh(host, a.ReportSeq) {
		return
	}
	t.seq = a.ReportSeq
	why := fmt.Sprintf("host %s answered a check: %s", host, a.PowerState)
	switch {
	case s.Rare.HAAwaitsCheck && host == s.HostID && !onHost(a.PowerState):
		// Confirmed off: the HA restart goes ahead.
		s.Rare.HAAwaitsCheck = false
		t.startHA("")
	default:
		// An answer is a report (power.go): running there, the VM is
		// adopted there and every other claim goes; off or absent on a
		// host it may be on, that claim goes (foundOffElsewhere); off on
		// its own host, an Error VM gives its claim back (errorFoundOff).
		t.observe(host, a.PowerState, a.AnsweredAt, why)
	}
}
