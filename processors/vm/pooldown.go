package vm

import (
	"fmt"
	"slices"

	"github.com/vmplane/vmplane/schemas"
)

// A failed storage pool (StoragePoolDown, docs/design.md §5.7). Every VM
// with a volume on it gets AlertRaised{StoragePoolFailed} naming the pool.
// Its disks are gone, so an HA VM that was Active with no job is an HA
// case: an internal restart stops it on its host first (it may run on
// there, writing to nothing), then places it as any HA restart does.
// Placement refuses a volume on a Failed pool, so the attempts fail and
// retry with the HA backoff until the pool is back or the retries run out,
// and the VM goes to Error with AlertRaised{HAExhausted}. Any other VM rests
// as it is: its next start finds the pool back, or fails naming it.

func (t *tx) storagePoolDown(d *schemas.StoragePoolDown) {
	s := t.s
	if d.PoolID == "" || !slices.ContainsFunc(storageOf(s).Volumes, func(v schemas.Volume) bool { return v.PoolID == d.PoolID }) {
		// No volume of the VM is there (deleted since): not its pool.
		return
	}
	// Only a disk the guest runs with makes it an HA case: a detached
	// volume there costs the VM nothing while it runs.
	inUse := slices.ContainsFunc(attachedVolumes(s), func(v schemas.Volume) bool { return v.PoolID == d.PoolID })
	ha := inUse && s.HA && s.VmState == StateActive && s.Job.JobID == ""
	msg := fmt.Sprintf("storage pool %s, which holds volumes of VM %s, failed", d.PoolID, s.VmID)
	switch {
	case !inUse:
		msg = fmt.Sprintf("storage pool %s, which holds detached volumes of VM %s, failed; the VM starts again only once the pool is back or they are deleted", d.PoolID, s.VmID)
	case ha:
		msg += "; the VM is HA and restarts once the pool is back"
	case s.VmState == StateActive:
		msg += "; the VM runs on without its disks"
	}
	t.alert("StoragePoolFailed", fmt.Sprintf("%s-pool-%s-%d", s.VmID, d.PoolID, t.ms), s.HostID, s.Job.JobID, msg)
	if ha {
		t.startHAFor(&haRequest{StopFor: d.PoolID})
	}
}
