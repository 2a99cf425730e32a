package vm

import (
	"maps"
	"reflect"
	"slices"

	"github.com/vmplane/vmplane/schemas"
)

// Stationary VM states (vm_state, docs/design.md §5.1). Expunged is final: the
// state is then deleted.
const (
	StateBuilding  = "Building"
	StateActive    = "Active"
	StateStopped   = "Stopped"
	StatePaused    = "Paused"
	StateSuspended = "Suspended"
	StateRescued   = "Rescued"
	StateResized   = "Resized"
	StateError     = "Error"
	StateDeleted   = "Deleted"
	StateExpunged  = "Expunged"
)

// Task states: the step of the job in flight (empty for none).
const (
	TaskScheduling         = "Scheduling"
	TaskNetworking         = "Networking"
	TaskBlockDeviceMapping = "BlockDeviceMapping"
	TaskSpawning           = "Spawning"
	TaskStarting           = "Starting"
	TaskStopping           = "Stopping"
	TaskRebooting          = "Rebooting"
	TaskPausing            = "Pausing"
	TaskUnpausing          = "Unpausing"
	TaskSuspending         = "Suspending"
	TaskResuming           = "Resuming"
	TaskMigrating          = "Migrating"
	TaskResizing           = "Resizing"
	TaskResizeVerify       = "ResizeVerify"
	TaskRebuilding         = "Rebuilding"
	TaskRescuing           = "Rescuing"
	TaskUnrescuing         = "Unrescuing"
	TaskSnapshotting       = "Snapshotting"
	TaskRevertingSnapshot  = "RevertingSnapshot"
	TaskDeletingSnapshot   = "DeletingSnapshot"
	TaskRecovering         = "Recovering"
	TaskDeleting           = "Deleting"
	// The volume actions (volumes.go).
	TaskAttachingVolume    = "AttachingVolume"
	TaskDetachingVolume    = "DetachingVolume"
	TaskResizingVolume     = "ResizingVolume"
	TaskSnapshottingVolume = "SnapshottingVolume"
	TaskDeletingVolume     = "DeletingVolume"
)

// clone deep-copies a VM record. Step and Tick work on a copy, so a caller
// holding the previous pointer keeps an unchanged value.
func clone(s *schemas.VmRecord) *schemas.VmRecord {
	if s == nil {
		return nil
	}
	c := *s
	c.Offering.HostTags = slices.Clone(s.Offering.HostTags)
	if s.Job != nil {
		j := *s.Job
		j.Params = maps.Clone(j.Params)
		c.Job = &j
	}
	c.Recent = slices.Clone(s.Recent)
	c.ReportSeq = maps.Clone(s.ReportSeq)
	c.Storage = cloneStorage(s.Storage)
	if s.Rare != nil {
		r := *s.Rare
		if r.OldOffering != nil {
			o := *r.OldOffering
			o.HostTags = slices.Clone(o.HostTags)
			r.OldOffering = &o
		}
		r.Queue = slices.Clone(r.Queue)
		for i := range r.Queue {
			r.Queue[i].Payload = slices.Clone(r.Queue[i].Payload)
		}
		r.HAAvoidHosts = slices.Clone(r.HAAvoidHosts)
		r.MaybeOn = slices.Clone(r.MaybeOn)
		if r.Snapshots != nil {
			r.Snapshots = &schemas.SnapshotList{Items: slices.Clone(r.Snapshots.Items)}
		}
		if r.Twin != nil {
			tw := *r.Twin
			r.Twin = &tw
		}
		c.Rare = &r
	}
	return &c
}

// The out-of-line parts of a record (schemas.VmRecord's Job, Storage and
// Rare, and Rare's OldOffering, Twin and Snapshots) are nil when zero in
// every state Step and Tick return, as in every state decoded from
// vm.state.v1. Inside a Step or Tick the working copy always has a Job and
// a Rare, changed in place, so the flows read and write them without nil
// checks; finish compacts them again. Outside, rare(s) reads them.

// rare is the rarely set fields of s, zero when none is set.
func rare(s *schemas.VmRecord) *schemas.VmRare {
	if s.Rare == nil {
		return &noRare
	}
	return s.Rare
}

// noRare is what rare returns for a record without them; never written.
var noRare schemas.VmRare

// jobID is the id of the VM's job in flight; "" for none.
func jobID(s *schemas.VmRecord) string {
	if s.Job == nil {
		return ""
	}
	return s.Job.JobID
}

// oldOffering is the offering before a resize awaiting confirmation; zero
// for none.
func oldOffering(s *schemas.VmRecord) schemas.Offering {
	if o := rare(s).OldOffering; o != nil {
		return *o
	}
	return schemas.Offering{}
}

// compact drops the out-of-line parts of s that are zero.
func compact(s *schemas.VmRecord) {
	if s.Job != nil && reflect.ValueOf(s.Job).Elem().IsZero() {
		s.Job = nil
	}
	if s.Storage != nil && emptyStorage(s.Storage) {
		s.Storage = nil
	}
	r := s.Rare
	if r == nil {
		return
	}
	if r.OldOffering != nil && reflect.ValueOf(r.OldOffering).Elem().IsZero() {
		r.OldOffering = nil
	}
	if r.Twin != nil && *r.Twin == (schemas.TwinReport{}) {
		r.Twin = nil
	}
	if r.Snapshots != nil && len(r.Snapshots.Items) == 0 {
		r.Snapshots = nil
	}
	// Emptied lists are nil, as decoding leaves them, so that a Rare
	// with nothing left is seen to be zero.
	if len(r.Queue) == 0 {
		r.Queue = nil
	}
	if len(r.HAAvoidHosts) == 0 {
		r.HAAvoidHosts = nil
	}
	if len(r.MaybeOn) == 0 {
		r.MaybeOn = nil
	}
	if reflect.ValueOf(r).Elem().IsZero() {
		s.Rare = nil
	}
}

// onHost reports whether a power state means the VM exists and is defined
// on the reporting host (running, frozen or saved there).
func onHost(power string) bool {
	return power == schemas.PowerOn || power == schemas.PowerPaused || power == schemas.PowerSusp
}

// stationaryFor is the stationary state a VM follows a power report to; ""
// when the report says nothing definite (PowerUnknown).
func stationaryFor(power string) string {
	switch power {
	case schemas.PowerOn:
		return StateActive
	case schemas.PowerOff:
		return StateStopped
	case schemas.PowerPaused:
		return StatePaused
	case schemas.PowerSusp:
		return StateSuspended
	}
	return ""
}

// consistent reports whether a stationary state agrees with a power state.
// PowerUnknown contradicts nothing: the host could not tell; neither does a
// power state this processor does not know, which it could not follow.
func consistent(vmState, power string) bool {
	if stationaryFor(power) == "" {
		return true
	}
	switch vmState {
	case StateActive, StateResized, StateRescued:
		return power == schemas.PowerOn
	case StateStopped:
		return power == schemas.PowerOff
	case StatePaused:
		return power == schemas.PowerPaused
	case StateSuspended:
		return power == schemas.PowerSusp
	case StateError:
		// An Error VM is not running; only finding it running is news.
		return !onHost(power)
	}
	return true
}

// watched is the part of a VM whose change is announced with VmStateChanged.
type watched struct{ vm, task, power, host string }

func watch(s *schemas.VmRecord) watched {
	if s == nil {
		return watched{}
	}
	return watched{s.VmState, rare(s).TaskState, s.PowerState, s.HostID}
}

// snapshot is the full VmStateChanged of a VM: the read model's row.
func snapshot(s *schemas.VmRecord, jobID, reason string) *schemas.VmStateChanged {
	r := rare(s)
	return &schemas.VmStateChanged{
		VmID:                  s.VmID,
		Name:                  s.Name,
		Account:               s.Account,
		ZoneID:                s.ZoneID,
		Offering:              s.Offering,
		HA:                    s.HA,
		VmState:               s.VmState,
		TaskState:             r.TaskState,
		PowerState:            s.PowerState,
		PowerHost:             s.PowerHost,
		LegacyState:           LegacyState(s.VmState, r.TaskState, s.PowerState),
		HostID:                s.HostID,
		Epoch:                 s.Epoch,
		JobID:                 jobID,
		PendingJobs:           int32(len(r.Queue)),
		AllowedActions:        AllowedActions(s.VmState, r.TaskState),
		Reason:                reason,
		PowerStateUpdateTime:  s.PowerStateUpdateTime,
		PowerStateUpdateCount: s.PowerStateUpdateCount,
		CreatedAt:             s.CreatedAt,
		UpdatedAt:             s.UpdatedAt,
	}
}
