package vm

import (
	"fmt"
	"slices"
	"strings"

	"github.com/vmplane/vmplane/schemas"
)

// HA restart (docs/design.md §5.5): an HA VM that was Active and is found off (a
// report, a fenced host, a missing report) is started again by an internal
// job, elsewhere when its host is down. A failed attempt is retried after a
// backoff that doubles from HABackoff; after HAMaxRetries attempts the VM
// goes to Error with AlertRaised{HAExhausted}. A successful start (by HA or
// by anyone) resets the count.
//
// Every attempt of one episode (from the first restart to a success or
// Error) avoids the hosts kept in VmRecord.HAAvoidHosts: the host that went
// down, and each destination where an attempt failed after placement chose
// it, so a retry does not land on the host that just failed it.

// haAvoidMax bounds HAAvoidHosts; the oldest host is dropped first.
const haAvoidMax = 8

func haRestartFlow() flow {
	return flow{start: haStart, advance: haAdvance, holds: haHolds, failed: haFailed}
}

// haHolds: the forced stop of a restart whose pool failed claims nothing,
// and the VM may run on where it is until the stop is answered, keeping
// its claim; from placement on, the restart holds what any placement does.
func haHolds(j schemas.JobState) bool { return j.Phase != "" && j.Phase != phaseStopping }

// haRequest is what starts an HA restart job, in place of a command; its
// row keeps Avoid in the job's parameters, as it keeps a command's fields.
type haRequest struct {
	// Avoid is the host the restart must not use (down or fenced).
	Avoid string `avro:"avoid"`
	// StopFor is the failed storage pool of a VM that may still run on
	// its host: the restart stops it there first (pooldown.go).
	StopFor string `avro:"stop_for"`
}

// paramStopFor keeps haRequest.StopFor in the job's parameters.
const paramStopFor = "stop_for"

// startHA starts an HA restart job now, avoiding host when it is down.
func (t *tx) startHA(avoid string) { t.startHAFor(&haRequest{Avoid: avoid}) }

// startHAFor starts an HA restart job now for r.
func (t *tx) startHAFor(r *haRequest) {
	s := t.s
	s.Rare.HARetryAt = 0
	t.haAvoid(r.Avoid)
	c := schemas.VmCommand{CommandID: schemas.BoundID(fmt.Sprintf("%s-ha-%d", s.VmID, t.ms)), VmID: s.VmID, Account: s.Account,
		Origin: schemas.OriginInternal, IssuedAt: t.ms, Caller: schemas.SystemCaller()}
	t.event(&schemas.JobAccepted{JobRef: t.refOf(ActHARestart, c), Caller: c.Caller})
	t.startJob(actionByName[ActHARestart], c, r)
}

func haStart(t *tx, _ any) {
	s := t.s
	if pool := s.Job.Params[paramStopFor]; pool != "" && s.HostID != "" {
		t.step(TaskStopping, "stop", fmt.Sprintf("HA restart: stopping the VM on host %s first, since its storage pool %s failed", s.HostID, pool),
			map[string]any{"host_id": s.HostID, "pool_id": pool, "command_id": t.nextID(), "epoch": s.Epoch, "force": true})
		t.callAgent(phaseStopping, s.HostID, "")
		return
	}
	haPlace(t)
}

// haAdvance goes on after the forced stop of a restart whose pool failed,
// as a start does after anything else.
func haAdvance(t *tx) {
	s := t.s
	if s.Job.Phase != phaseStopping {
		startAdvance(t)
		return
	}
	// The host answered: the VM is off there, and holds nothing.
	if s.PowerState != schemas.PowerOff || s.PowerHost != s.HostID {
		s.PowerStateUpdateCount = 1
	}
	s.PowerState, s.PowerHost, s.PowerStateUpdateTime = schemas.PowerOff, s.HostID, t.ms
	s.VmState = StateStopped
	delete(s.Job.Params, paramStopFor)
	haPlace(t)
}

// haPlace asks placement for a host for the restart.
func haPlace(t *tx) {
	s := t.s
	attempt := s.HARetries + 1
	t.step(TaskScheduling, "schedule", fmt.Sprintf("HA restart, attempt %d of %d: asking placement for a host", attempt, t.cfg.HAMaxRetries),
		map[string]any{"zone_id": s.ZoneID, "attempt": attempt, "avoid": strings.Join(s.Rare.HAAvoidHosts, ","), "request_id": t.nextID(), "epoch": s.Epoch})
	// The host it was found off on comes first when it is not to be
	// avoided (down, or where an attempt failed): a guest that stopped on
	// a healthy host starts again there, as CloudStack's HA does, and if
	// a late report had it wrong and the guest runs there after all, the
	// start finds it running instead of making a second copy elsewhere
	// (found by the simulation, family queue seed 421).
	prefer := s.HostID
	if slices.Contains(s.Rare.HAAvoidHosts, prefer) {
		prefer = ""
	}
	// The VM is off wherever it was: every claim goes first. Placement
	// keeps a claim on a host a request avoids (a migration's source),
	// and an avoided host here is one the VM must not use (simulation,
	// family host-down-ha seed 857: a failed attempt's destination kept
	// its claim after the next attempt succeeded elsewhere).
	t.release("")
	t.placeAvoiding(prefer, false, s.Offering, s.Rare.HAAvoidHosts)
}

// haAvoid adds a host to the episode's avoid list (nothing for "").
func (t *tx) haAvoid(host string) {
	s := t.s
	if host == "" || slices.Contains(s.Rare.HAAvoidHosts, host) {
		return
	}
	s.Rare.HAAvoidHosts = append(s.Rare.HAAvoidHosts, host)
	if n := len(s.Rare.HAAvoidHosts); n > haAvoidMax {
		s.Rare.HAAvoidHosts = slices.Clone(s.Rare.HAAvoidHosts[n-haAvoidMax:])
	}
}

// haEnded ends an HA episode: the VM started, or HA gave up.
func (t *tx) haEnded() {
	t.s.HARetries = 0
	t.s.Rare.HAAvoidHosts = nil
}

// haFailed counts the attempt and schedules the next, or gives up.
func haFailed(t *tx) {
	s := t.s
	if s.Job.Phase == phaseStopping {
		// The VM could not be stopped where it is: it was not restarted
		// and may run there still. It rests as its power says, and the
		// alert of its pool stands.
		return
	}
	if s.Job.Phase == phaseStarting || s.Job.Phase == phaseCleanup {
		// Placement chose this host and the start there failed (or
		// was never answered).
		t.haAvoid(s.HostID)
	}
	s.HARetries = saturatingInc(s.HARetries)
	if s.HARetries >= t.cfg.HAMaxRetries {
		s.VmState = StateError
		s.Rare.HARetryAt = 0
		s.Rare.HAAvoidHosts = nil
		t.alert("HAExhausted", fmt.Sprintf("%s-ha-exhausted-%d", s.VmID, t.ms), s.HostID, s.Job.JobID,
			fmt.Sprintf("HA restart of VM %s failed %d times; the VM is in Error", s.VmID, s.HARetries))
		return
	}
	wait := t.cfg.HABackoff << (s.HARetries - 1)
	if wait > t.cfg.HABackoffMax || wait <= 0 {
		wait = t.cfg.HABackoffMax
	}
	s.Rare.HARetryAt = t.ms + wait.Milliseconds()
}

// haDue starts the HA restart whose backoff ended, if the VM still needs
// it: HA, no job, and not running.
func (t *tx) haDue() {
	s := t.s
	if s.Rare.HARetryAt == 0 || t.ms < s.Rare.HARetryAt || s.Job.JobID != "" {
		return
	}
	s.Rare.HARetryAt = 0
	if !s.HA || s.VmState != StateStopped {
		return
	}
	t.startHA("")
}
