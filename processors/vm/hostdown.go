package vm

import (
	"fmt"
	"slices"

	"github.com/vmplane/vmplane/schemas"
)

// HostDown (a fenced host, docs/design.md §5.4). With no job waiting on the host it
// is a PowerOff report from it for the VM that was there. A job waiting on
// the host (an agent command sent to it, or a migration from or to it)
// cannot go on: it fails at once with reason HostDown instead of running to
// its timeout, the VM is off when it ran there (a Stopped VM holds no
// capacity), and an HA VM that was Active is restarted elsewhere — unless
// the job was meant to turn it off (Stop, Terminate).

func (t *tx) hostDown(d *schemas.HostDown) {
	s := t.s
	if d.HostID == "" {
		return
	}
	waits := t.jobWaitsOn(d.HostID)
	if d.HostID != s.HostID {
		t.twinGone(d.HostID) // a fenced host runs nothing
		if !waits && slices.Contains(s.Rare.MaybeOn, d.HostID) {
			t.release(d.HostID) // nor needs the claim the VM kept there (maybeon.go)
		}
	}
	if !waits && d.HostID != s.HostID && d.HostID != s.PowerHost {
		return
	}
	t.downHost = d.HostID
	why := fmt.Sprintf("host %s is down (%s)", d.HostID, d.Reason)
	if waits {
		t.jobHostDown(d.HostID, why)
		return
	}
	if s.Rare.HAAwaitsCheck && d.HostID == s.HostID && s.Job.JobID == "" {
		// The HA restart waited for this host to confirm the VM is off;
		// fenced, it has: the restart goes ahead, elsewhere.
		s.Rare.HAAwaitsCheck = false
		t.startHA(d.HostID)
		return
	}
	t.observe(d.HostID, schemas.PowerOff, 0, why)
}

// jobWaitsOn reports whether the running job waits on host: for an agent's
// answer or report from it, or for a migration leaving it.
func (t *tx) jobWaitsOn(host string) bool {
	j := t.s.Job
	if j.JobID == "" {
		return false
	}
	if j.Wait.Kind == waitAnswer && j.Wait.HostID == host {
		return true
	}
	return j.Phase == phaseMigrating && j.Params[paramSource] == host
}

// jobHostDown fails the running job because host, which it waits on, is
// down.
func (t *tx) jobHostDown(host, why string) {
	s := t.s
	j := *s.Job
	if host == s.HostID {
		// The VM ran there (or was being started there): it is off now.
		if s.PowerState != schemas.PowerOff || s.PowerHost != host {
			s.PowerStateUpdateCount = 1
		}
		s.PowerState, s.PowerHost, s.PowerStateUpdateTime = schemas.PowerOff, host, t.ms
	}
	wasActive := s.VmState == StateActive
	if st := t.failState(false); !holdsCapacity(st) {
		// A VM that is off holds nothing. Released before the job ends, so
		// the release precedes the PlaceVm of a queued job that starts
		// then; the job's own release is then not needed.
		t.release("")
	}
	t.fail(schemas.CodeHostDown, fmt.Sprintf("%s while job %s waited on it (phase %s)", why, j.JobID, j.Phase), false)
	if s.HA && wasActive && s.VmState == StateStopped && s.Job.JobID == "" &&
		j.JobType != ActStop && j.JobType != ActTerminate {
		t.startHA(host)
	}
}
