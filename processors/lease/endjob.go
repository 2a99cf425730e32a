package lease

import (
	"encoding/json"
	"fmt"

	"github.com/vmplane/vmplane/schemas"
)

// Job types of a lease's end: the bulk job whose children are the Stop
// jobs of the project's VMs on the lease's hosts.
const (
	JobLeaseEnd    = "LeaseEnd"
	JobLeaseDelete = "LeaseDelete"
)

// The end of an active lease is a job like a VM's, so its project follows
// it in /v1/jobs: its id comes from the lease, its events go to
// vm.events.v1 keyed by the lease id under the lease's project, with one
// step per VM whose capacity is released (done of total), and an end —
// succeeded when every VM stopped, failed when the stop timeout ran out.
// Its first step lists the children's job ids; each step's obj says how
// far it is ("done" of "total").

// endJobID is the id of a lease's end job.
func endJobID(leaseID string) string { return schemas.BoundID("lease-" + leaseID + "-end") }

// stopJobID is the id of the Stop job of one VM at a lease's end.
func stopJobID(leaseID, vmID string) string {
	return schemas.BoundID(fmt.Sprintf("lease-%s-end-%s", leaseID, vmID))
}

func (t *tx) endRef(l *schemas.LeaseRecord) schemas.JobRef {
	typ := JobLeaseEnd
	if l.Status == Deleting {
		typ = JobLeaseDelete
	}
	return schemas.JobRef{JobID: endJobID(l.LeaseID), Account: l.Project, JobType: typ, Origin: schemas.OriginInternal, At: t.now}
}

// endJobStarted accepts the end job and lists its children; with no VM to
// stop it succeeds at once.
func (t *tx) endJobStarted(l *schemas.LeaseRecord, children []string, caller schemas.Caller) {
	ref := t.endRef(l)
	t.emit(schemas.TopicVmEvents, l.LeaseID, &schemas.JobAccepted{JobRef: ref, Caller: caller})
	if len(children) == 0 {
		t.emit(schemas.TopicVmEvents, l.LeaseID, &schemas.JobSucceeded{JobRef: ref, StartedAt: t.now})
		return
	}
	obj, _ := json.Marshal(map[string]any{"lease": l.LeaseID, "vms": l.StopWait, "children": children, "done": 0, "total": l.StopTotal})
	t.emit(schemas.TopicVmEvents, l.LeaseID, &schemas.JobStepped{JobRef: ref, Seq: 1, TaskState: "Stopping", Step: "stop",
		Text: fmt.Sprintf("stopping %d VM(s) of project %s on the lease's hosts", len(children), l.Project), Obj: string(obj)})
}

// endJobStepped is the step of one VM whose stop released its capacity.
func (t *tx) endJobStepped(l *schemas.LeaseRecord, vmID string) {
	if l.StopTotal == 0 {
		return
	}
	done := l.StopTotal - int32(len(l.StopWait))
	obj, _ := json.Marshal(map[string]any{"vm": vmID, "child": stopJobID(l.LeaseID, vmID), "ok": true, "done": done, "total": l.StopTotal})
	t.emit(schemas.TopicVmEvents, l.LeaseID, &schemas.JobStepped{JobRef: t.endRef(l), Seq: done + 1, TaskState: "Stopping",
		Step: "stopped", Text: fmt.Sprintf("VM %s stopped (%d of %d)", vmID, done, l.StopTotal), Obj: string(obj)})
}

// endJobEnded ends the end job: failed when VMs were still running at the
// stop timeout (reason names them).
func (t *tx) endJobEnded(l *schemas.LeaseRecord, reason string) {
	if l.StopTotal == 0 {
		return
	}
	ref := t.endRef(l)
	if reason != "" {
		t.emit(schemas.TopicVmEvents, l.LeaseID, &schemas.JobFailed{JobRef: ref, Reason: schemas.CodeTimeout, Detail: reason})
	} else {
		t.emit(schemas.TopicVmEvents, l.LeaseID, &schemas.JobSucceeded{JobRef: ref})
	}
	l.StopTotal = 0
}
