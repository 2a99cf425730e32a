package vm

import (
	"fmt"

	"github.com/vmplane/vmplane/schemas"
)

// Recover brings a Deleted VM back before it is expunged, as CloudStack's
// recoverVirtualMachine does: the VM is Stopped, keeps its name, offering,
// HA and account, and is no longer due for expunge. It holds no capacity,
// as no Stopped VM does, and has no host: its terminate released every
// claim and destroyed it, disk and snapshots with it, on every host it was
// or may have been on. Its next Start places it like a new VM and boots a
// fresh disk. Once expunged the VM is gone: a Recover then is a
// JobRejected{NotFound}, as any command for no VM is.
func recoverFlow() flow { return flow{start: recoverStart} }

func recoverStart(t *tx, _ any) {
	s := t.s
	t.step(TaskRecovering, "recover", "recovering the deleted VM; it rests Stopped, on no host", nil)
	s.VmState = StateStopped
	// The terminate's destroys were answered: the VM runs nowhere, even
	// if the last report before them said it ran.
	s.PowerState = schemas.PowerOff
	s.Rare.DeletedAt, s.Rare.ExpungeAt = 0, 0
	// Its NICs kept their addresses; its volumes were destroyed, and it
	// gets new ones like them, which its next Start places.
	t.volumesRemade()
	t.succeed(fmt.Sprintf("the VM is recovered, Stopped; %s places it", Snake(ActStart)))
}
