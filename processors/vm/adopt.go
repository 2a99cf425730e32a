package vm

import (
	"fmt"
	"strings"

	"github.com/vmplane/vmplane/schemas"
)

// Capacity follows facts (docs/design.md §5.4). A VM that vmplane did not start or
// move — a report finds a Stopped VM running, a VM running on another host,
// a migration landing on a third host — uses capacity where it runs. The
// processor then sends PlaceVm{adopt, host_id}: placement claims on exactly
// that host even over capacity and releases the VM's other claims, so the
// ledger counts the VM once, where it is. The answer changes nothing but
// the pod and cluster of the VM's host, which a move left unknown.

// holdsCapacity reports whether a VM in a stationary state holds a claim:
// it is defined on a host (running, frozen or saved there). Stopped and
// Error VMs gave theirs back.
func holdsCapacity(vmState string) bool {
	switch vmState {
	case StateActive, StatePaused, StateSuspended, StateRescued, StateResized:
		return true
	}
	return false
}

// adoptPrefix starts the request id of an adopt, after the VM id.
const adoptPrefix = "-adopt-"

// adopt claims the VM's capacity on host, where it runs.
func (t *tx) adopt(host string) {
	s := t.s
	if s.ZoneID == "" || host == "" {
		return
	}
	t.emit(schemas.TopicPlacementRequests, s.ZoneID, &schemas.PlaceVm{
		RequestID: schemas.BoundID(fmt.Sprintf("%s%s%d", s.VmID, adoptPrefix, t.ms)), VmID: s.VmID, ZoneID: s.ZoneID, Account: s.Account,
		Epoch: s.Epoch, Offering: s.Offering, HostID: host, AffinityGroup: s.Rare.AffinityGroup, Adopt: true, At: t.ms,
	})
	// Placement releases every other claim of the VM: the hosts it may
	// have been on keep none.
	t.notOn("")
	if host == s.HostID {
		t.claimGone = false
	}
}

// adopted takes the decision of an adopt: it records the host's pod and
// cluster when the VM is still there, and reports true. A decision the
// running job waits for is never an adopt's.
func (t *tx) adopted(d *schemas.PlacementDecided) bool {
	s := t.s
	if s.Job.Wait.Kind == waitPlacement && d.RequestID == s.Job.Wait.RequestID {
		return false
	}
	if !strings.HasPrefix(d.RequestID, s.VmID+adoptPrefix) {
		return false
	}
	if d.HostID == s.HostID {
		s.PodID, s.ClusterID = d.PodID, d.ClusterID
	}
	return true
}
