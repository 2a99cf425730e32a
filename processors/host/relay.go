package host

import (
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// Relay forwards the end of every maintenance Migrate job from vm.events.v1
// (keyed by VM) to host.events.v1 (keyed by the host being drained) as a
// MaintenanceMigrationEnded, so the host processor can join its fan-out
// without reading a topic of another key class.
//
// It keeps no state: the host is in the job id (MaintenanceJobID). Run by
// the runtime, the forward and the consumed offset commit in one
// transaction, so each job end reaches the host exactly once. Its changelog
// only ever receives tombstones.
type Relay struct{}

// Step forwards a maintenance job's end; every other record is ignored.
func (Relay) Step(_ *schemas.HostRecord, in schemas.Record, _ time.Time) (*schemas.HostRecord, []schemas.Record) {
	var (
		ref    schemas.JobRef
		ok     bool
		reason string
	)
	switch v := in.Value.(type) {
	case *schemas.JobSucceeded:
		ref, ok = v.JobRef, true
	case *schemas.JobFailed:
		ref, reason = v.JobRef, v.Reason
	case *schemas.JobCancelled:
		ref, reason = v.JobRef, "Cancelled"
	case *schemas.JobRejected:
		ref, reason = v.JobRef, "Rejected: "+v.Reason
	default:
		return nil, nil
	}
	host, _, isMaint := ParseMaintenanceJobID(ref.JobID)
	if !isMaint {
		return nil, nil
	}
	return nil, []schemas.Record{{Topic: schemas.TopicHostEvents, Key: host, Headers: carried(in), Value: &schemas.MaintenanceMigrationEnded{
		HostID: host, VmID: ref.VmID, JobID: ref.JobID, OK: ok, Reason: reason, At: ref.At,
	}}}
}

// Tick never runs: the relay has no timers.
func (Relay) Tick(s *schemas.HostRecord, _ string, _ time.Time) (*schemas.HostRecord, []schemas.Record) {
	return s, nil
}

// Wake is never: the relay has no timers.
func (Relay) Wake(*schemas.HostRecord) time.Time { return time.Time{} }
