// Package vm is the VM processor's pure state machine (docs/design.md §5): one
// *schemas.VmRecord per vm_id holding the VM's three state axes, its job in
// flight with what that job waits for, the FIFO of queued commands and the
// per-host power report sequence. It turns VM commands, agent answers, power
// reports and placement/host signals into job events, VmStateChanged
// snapshots, placement requests and agent commands.
//
// It owns the action table (which command a VM allows in which state), the
// job lifecycle (one job per VM, queueing, cancellation by Terminate or
// CancelJob,
// epochs, timeouts, stall alerts, command-id dedup) and the reaction to
// power reports. It never does I/O, never reads the clock (time arrives as
// an argument), never uses randomness (every id it makes derives from a job
// id and a step number) and never decides placement or host health.
//
// Step and Tick never modify the state they are given: they work on a deep
// copy and return it, or return the given pointer itself when nothing
// changed (the common power reports take a shallow copy that shares the
// untouched slices and maps: states are never modified in place). A nil state is "no such VM"; returning nil deletes it.
package vm

import (
	"reflect"
	"time"

	"github.com/vmplane/vmplane/schemas"
	"github.com/vmplane/vmplane/schemas/settings"
)

// Machine is the VM state machine. It satisfies engine.Machine for
// *schemas.VmRecord. It is not safe for concurrent use: it belongs to one
// runtime, which steps it from its poll loop (reportseq.go says why).
type Machine struct {
	// base is the Config the machine was made with; cfg is base with the
	// operator settings over it.
	base     Config
	cfg      Config
	settings settings.Values
	// seqs are the report sequence maps shared by the states the quick
	// report path returns (reportseq.go).
	seqs seqMaps
}

// New returns a Machine; zero fields of cfg take their defaults.
func New(cfg Config) *Machine { return &Machine{base: cfg, cfg: cfg.withDefaults()} }

// Configure applies an operator setting (docs/design.md §13). A job
// already running keeps the deadline it was given; the next step of each
// VM uses the new values.
func (m *Machine) Configure(c *schemas.SettingChanged) error {
	if err := m.settings.Apply(c.Name, c.Scope, c.ScopeID, c.Value); err != nil {
		return err
	}
	m.cfg = m.base.with(&m.settings).withDefaults()
	return nil
}

// Config returns the settings in effect.
func (m *Machine) Config() Config { return m.cfg }

// tx is one Step or Tick in progress: the working copy of the state and the
// records produced so far.
type tx struct {
	cfg    Config
	s      *schemas.VmRecord
	key    string
	now    time.Time
	ms     int64
	out    []schemas.Record
	before watched
	// cause and reason describe the latest change, for VmStateChanged.
	cause, reason string
	// downHost is the fenced host a HostDown names, for an HA restart to
	// avoid.
	downHost string
	// releasedAll is set once this transaction released every claim of
	// the VM, so a failing job does not release again.
	releasedAll bool
	// keepClaims is set when a failing job must keep the VM's claims: the
	// VM may run where they are (cleanup.go).
	keepClaims bool
	// claimGone is set when this transaction released the VM's claim on
	// its host (alone or with every other) and has not adopted it there
	// since.
	claimGone bool
	// guestReport is set while a power report of the VM's own host is
	// observed: a PowerOff in it, with no job, is the guest's own doing.
	guestReport bool
	// seq is the report sequence of the report being observed; 0 for an
	// observation that is no report (a HostDown).
	seq int64
}

func (m *Machine) begin(s *schemas.VmRecord, key string, now time.Time) *tx {
	c := clone(s)
	// The working copy always has a Job and a Rare; finish compacts them
	// (state.go).
	if c != nil && c.Job == nil {
		c.Job = &schemas.JobState{}
	}
	if c != nil && c.Rare == nil {
		c.Rare = &schemas.VmRare{}
	}
	return &tx{cfg: m.cfg, s: c, key: key, now: now, ms: now.UnixMilli(), before: watch(s)}
}

// Step applies one record of vm.commands.v1, vm.power.v1, vm.answers.v1 or
// vm.signals.v1 (in.Key is the vm_id). Other values are ignored.
func (m *Machine) Step(s *schemas.VmRecord, in schemas.Record, now time.Time) (*schemas.VmRecord, []schemas.Record) {
	return m.stepOwning(s, in, now, false)
}

// StepReusing is Step for the runtime, which keeps no state it handed
// over (engine.Reuser): a stale or same-state power report changes s and
// returns it, where Step copies it; every other record is Step's.
func (m *Machine) StepReusing(s *schemas.VmRecord, in schemas.Record, now time.Time) (*schemas.VmRecord, []schemas.Record) {
	return m.stepOwning(s, in, now, true)
}

// stepOwning is Step, deciding the quick power reports in s itself when
// the caller gives s up (reuse).
func (m *Machine) stepOwning(s *schemas.VmRecord, in schemas.Record, now time.Time, reuse bool) (*schemas.VmRecord, []schemas.Record) {
	if r, isReport := in.Value.(*schemas.PowerReport); isReport && s != nil {
		if next, out, ok := m.quickReport(s, in.Key, r, now, reuse); ok {
			return next, out
		}
	}
	return m.step(s, in, now)
}

// step is the general path of Step: it decides any input on a deep copy.
func (m *Machine) step(s *schemas.VmRecord, in schemas.Record, now time.Time) (*schemas.VmRecord, []schemas.Record) {
	t := m.begin(s, in.Key, now)
	if a, cmd, ok := commandOf(in.Value); ok {
		t.command(a, cmd, in.Value)
		return t.finish(s)
	}
	if t.s == nil {
		// Reports and signals about a VM that does not exist (never created,
		// or expunged) have nothing to act on, but a guest that runs all
		// the same is shown to the operator (unmanaged.go).
		if r, ok := in.Value.(*schemas.PowerReport); ok {
			return s, unmanagedGuest(in.Key, r, now)
		}
		return s, nil
	}
	switch v := in.Value.(type) {
	case *schemas.PowerReport:
		t.powerReport(v)
	case *schemas.AgentAnswer:
		t.answer(v)
	case *schemas.PlacementDecided:
		t.placementDecided(v)
	case *schemas.PlacementFailed:
		t.placementFailed(v)
	case *schemas.HostDown:
		t.hostDown(v)
	case *schemas.VmMissingFromHost:
		t.missingFromHost(v)
	case *schemas.StoragePoolDown:
		t.storagePoolDown(v)
	case *schemas.CancelJob:
		t.cancelJob(v)
	}
	return t.finish(s)
}

// Tick runs the VM's timers: job deadline, stall alert, answer re-send and
// the periodic re-check of a running job; expunge of a Deleted VM; an HA
// restart and a CheckVm round that are due.
func (m *Machine) Tick(s *schemas.VmRecord, key string, now time.Time) (*schemas.VmRecord, []schemas.Record) {
	if s == nil {
		return nil, nil
	}
	t := m.begin(s, key, now)
	switch {
	case t.s.Job.JobID != "":
		t.tickJob()
	case t.s.Rare.ExpungeAt != 0 && t.ms >= t.s.Rare.ExpungeAt && t.s.VmState == StateDeleted:
		t.nicsReleased()
		t.event(&schemas.VmExpunged{VmID: t.s.VmID, Account: t.s.Account, At: t.ms})
		return nil, t.out
	default:
		t.haDue()
		t.checkDue()
	}
	return t.finish(s)
}

// Wake says when the VM next needs a Tick: the running job's next re-check
// or deadline, the expunge time of a Deleted VM, or its next HA restart or
// CheckVm round; zero for never.
func (m *Machine) Wake(s *schemas.VmRecord) time.Time {
	switch {
	case s == nil:
		return time.Time{}
	case jobID(s) != "":
		at := s.Job.Deadline
		if s.Job.NextWake != 0 && s.Job.NextWake < at {
			at = s.Job.NextWake
		}
		return time.UnixMilli(at).UTC()
	case s.Rare == nil:
		return time.Time{}
	case s.VmState == StateDeleted && s.Rare.ExpungeAt != 0:
		return time.UnixMilli(s.Rare.ExpungeAt).UTC()
	}
	at := s.Rare.HARetryAt
	if s.Rare.CheckAt != 0 && (at == 0 || s.Rare.CheckAt < at) {
		at = s.Rare.CheckAt
	}
	if at == 0 {
		return time.Time{}
	}
	return time.UnixMilli(at).UTC()
}

// finish announces a change of the watched axes with one VmStateChanged and
// returns the new state, or the original pointer when nothing changed.
func (t *tx) finish(orig *schemas.VmRecord) (*schemas.VmRecord, []schemas.Record) {
	if t.s == nil {
		return nil, t.out
	}
	t.dropStaleTwin(orig)
	t.planCheck()
	if watch(t.s) != t.before {
		t.s.UpdatedAt = t.ms
		job := t.s.Job.JobID
		if job == "" {
			job = t.cause
		}
		t.event(snapshot(t.s, job, t.reason))
	}
	compact(t.s)
	if orig != nil && reflect.DeepEqual(orig, t.s) {
		return orig, t.out
	}
	return t.s, t.out
}

// changed records why the VM is changing, for the VmStateChanged that
// finish emits.
func (t *tx) changed(jobID, reason string) {
	t.cause, t.reason = jobID, reason
}

func (t *tx) emit(topic, key string, v any) {
	t.out = append(t.out, schemas.Record{Topic: topic, Key: key, Value: v})
}

// event emits a record on vm.events.v1.
func (t *tx) event(v any) { t.emit(schemas.TopicVmEvents, t.key, v) }
