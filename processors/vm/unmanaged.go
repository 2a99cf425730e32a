package vm

import (
	"fmt"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// Unmanaged guests (issue 22). A host reports a guest that no VM claims:
// never created here, or expunged while its guest went on running (a
// destroy that did not take, a copy an earlier agent started). vmplane
// never kills what it does not own: it raises an alert for the operator
// and keeps no state for the VM, so a report stays the only trace of it.
// The alert id is the VM and the host, so the read model keeps one row per
// unmanaged guest however many report rounds name it.

// AlertUnmanagedGuest is the kind of the alert.
const AlertUnmanagedGuest = "UnmanagedGuest"

// unmanagedGuest answers a report about a VM with no state: an alert when
// the guest is on its host (running, paused or saved), nothing otherwise.
func unmanagedGuest(vmID string, r *schemas.PowerReport, now time.Time) []schemas.Record {
	if !onHost(r.PowerState) || r.HostID == "" {
		return nil
	}
	return []schemas.Record{{Topic: schemas.TopicVmEvents, Key: vmID, Value: &schemas.AlertRaised{
		AlertID: schemas.BoundID(fmt.Sprintf("%s-unmanaged-%s", vmID, r.HostID)), Kind: AlertUnmanagedGuest, VmID: vmID, HostID: r.HostID,
		Message: fmt.Sprintf("host %s reports guest %s %s, and no VM claims it: left as it is", r.HostID, vmID, r.PowerState),
		At:      now.UnixMilli(),
	}}}
}
