package host

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// JobPrepareForMaintenance is the type of a host's maintenance job: the
// bulk job whose children are the internal Migrate jobs of its VMs.
const JobPrepareForMaintenance = "PrepareForMaintenance"

// A maintenance is a job like a VM's, so an operator follows it in
// /v1/jobs: its id is the PrepareForMaintenance command's, its events go
// to vm.events.v1 keyed by the host id, with no VM and no account (an
// operator's job), one step per child job that ends (done of total), and
// an end — succeeded in Maintenance, failed in ErrorInMaintenance with the
// VMs named, cancelled by CancelMaintenance, or rejected when the host
// could not start it. Its first step lists the children's job ids; each
// step's obj says how far it is ("done" of "total").

// drainRef is the JobRef of a maintenance job at now.
func drainRef(jobID string, now time.Time) schemas.JobRef {
	return schemas.JobRef{JobID: jobID, JobType: JobPrepareForMaintenance, Origin: schemas.OriginAPI, At: now.UnixMilli()}
}

// drainEvent is one event of a host's maintenance job, keyed by the host.
func drainEvent(hostID string, v any, hdr map[string]string) schemas.Record {
	return schemas.Record{Topic: schemas.TopicVmEvents, Key: hostID, Headers: hdr, Value: v}
}

// drainStarted is the job's acceptance (naming who asked) and first step,
// listing the children; with nothing to drain the job succeeds at once.
func drainStarted(r *schemas.HostRecord, jobID string, caller schemas.Caller, now time.Time, hdr map[string]string) []schemas.Record {
	if jobID == "" {
		return nil
	}
	ref := drainRef(jobID, now)
	out := []schemas.Record{drainEvent(r.Status.HostID, &schemas.JobAccepted{JobRef: ref, Caller: caller}, hdr)}
	if len(r.Draining) == 0 {
		return append(out, drainEvent(r.Status.HostID, &schemas.JobSucceeded{JobRef: ref, StartedAt: ref.At}, hdr))
	}
	children := make([]string, len(r.Draining))
	for i, vm := range r.Draining {
		children[i] = MaintenanceJobID(r.Status.HostID, r.Maintenance, vm)
	}
	obj, _ := json.Marshal(map[string]any{"host": r.Status.HostID, "vms": r.Draining, "children": children,
		"done": 0, "total": r.DrainTotal})
	return append(out, drainEvent(r.Status.HostID, &schemas.JobStepped{JobRef: ref, Seq: 1, TaskState: "Draining", Step: "drain",
		Text: fmt.Sprintf("migrating %d VM(s) off host %s", len(r.Draining), r.Status.HostID), Obj: string(obj)}, hdr))
}

// drainStepped is the step of one child's end, and the job's end after
// the last.
func drainStepped(r *schemas.HostRecord, e *schemas.MaintenanceMigrationEnded, now time.Time, hdr map[string]string) []schemas.Record {
	if r.DrainJob == "" {
		return nil
	}
	ref := drainRef(r.DrainJob, now)
	done := r.DrainTotal - int32(len(r.Draining))
	text := fmt.Sprintf("VM %s migrated (%d of %d)", e.VmID, done, r.DrainTotal)
	step := "migrated"
	if !e.OK {
		text = fmt.Sprintf("VM %s not migrated: %s (%d of %d)", e.VmID, e.Reason, done, r.DrainTotal)
		step = "not-migrated"
	}
	obj, _ := json.Marshal(map[string]any{"vm": e.VmID, "child": e.JobID, "ok": e.OK, "done": done, "total": r.DrainTotal})
	out := []schemas.Record{drainEvent(r.Status.HostID, &schemas.JobStepped{JobRef: ref, Seq: done + 1, TaskState: "Draining", Step: step,
		Text: text, Obj: string(obj)}, hdr)}
	if len(r.Draining) > 0 {
		return out
	}
	if len(r.DrainFailed) == 0 {
		out = append(out, drainEvent(r.Status.HostID, &schemas.JobSucceeded{JobRef: ref}, hdr))
	} else {
		out = append(out, drainEvent(r.Status.HostID, &schemas.JobFailed{JobRef: ref, Reason: schemas.CodeErrorInMaintenance,
			Detail: ReasonDrainFailed + strings.Join(r.DrainFailed, ", ")}, hdr))
	}
	r.DrainJob, r.DrainTotal = "", 0
	return out
}

// drainCancelled ends a maintenance job that CancelMaintenance stopped.
func drainCancelled(r *schemas.HostRecord, by string, now time.Time, hdr map[string]string) []schemas.Record {
	if r.DrainJob == "" {
		return nil
	}
	ref := drainRef(r.DrainJob, now)
	r.DrainJob, r.DrainTotal = "", 0
	return []schemas.Record{drainEvent(r.Status.HostID, &schemas.JobCancelled{JobRef: ref,
		Reason: "cancelled by " + by + "; migrations still running finish on their own", By: by}, hdr)}
}

// drainRejected ends a PrepareForMaintenance the host could not start.
func drainRejected(hostID, jobID string, caller schemas.Caller, detail string, now time.Time, hdr map[string]string) []schemas.Record {
	if jobID == "" {
		return nil
	}
	return []schemas.Record{drainEvent(hostID, &schemas.JobRejected{JobRef: drainRef(jobID, now), Reason: schemas.CodeInvalidState,
		Detail: detail, Caller: caller}, hdr)}
}
