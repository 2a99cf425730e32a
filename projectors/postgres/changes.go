package postgres

import (
	"strings"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// changes is one poll's worth of records folded into the rows they leave
// behind. Folding is pure: a VM changed ten times in a batch becomes one
// upsert, a job's accepted/stepped/succeeded one row, so the write is a few
// set-based statements instead of one round trip per record.
type changes struct {
	vms     map[string]*vmChange
	vmOrder []string
	jobs    map[string]*jobChange
	jobIDs  []string
	// newJobs are jobs seen only as commands: inserted as pending unless
	// an event already made the row.
	newJobs map[string]*jobChange
	newIDs  []string
	steps   []stepRow
	// stmts are the low-volume topics' writes, one statement per record in
	// log order (hosts, placement, catalog, accounts, alerts).
	stmts []stmt
	// refusedVMs are the VMs of rejected Deploys: no row will come for
	// them, so their accepted rows go (accepted.go).
	refusedVMs []string
}

type stmt struct {
	sql  string
	args []any
}

type vmOp int

const (
	vmUpsert vmOp = iota // the whole row is known (VmStateChanged)
	vmPower              // only the power fields changed (PowerStateObserved)
	vmDelete             // VmExpunged
)

type vmChange struct {
	op      vmOp
	row     vmRow
	version int64
}

// vmRow mirrors the vms table. For vmPower only the power fields are set.
type vmRow struct {
	ID, Name, Account, ZoneID, OfferingID, Offering string
	CPU                                             int32
	MemoryMB                                        int64
	HA                                              bool
	VmState, TaskState, PowerState, PowerHost       string
	PowerUpdateTime                                 *time.Time
	PowerUpdateCount                                int32
	LegacyState, HostID                             string
	Epoch                                           int64
	JobID                                           string
	PendingJobs                                     int32
	AllowedActions                                  []string
	Reason                                          string
	CreatedAt, UpdatedAt                            time.Time
}

// jobChange is the net effect of a batch on one job. Nil pointers mean
// "leave the stored value": a batch holding only JobSucceeded must not wipe
// the task state an earlier batch wrote.
type jobChange struct {
	ID, VmID, Account, Type, Origin string
	State                           string
	Reason, Detail, TaskState       *string
	ErrorCode                       *string
	// Caller is who asked, from the command or the job's JobAccepted or
	// JobRejected; nil when the batch says nothing of it (the job's
	// other events, a record from before the field).
	Caller               *schemas.Caller
	AllowedActions       []string // nil: unchanged
	CreatedAt, UpdatedAt time.Time
	FinishedAt           *time.Time
	version              int64
}

type stepRow struct {
	JobID, VmID, TaskState, Step, Text, Obj string
	Seq                                     int32
	At                                      time.Time
	version                                 int64
}

// rejected ends a rejected job; a rejected Deploy's VM will have no row.
func (c *changes) rejected(v *schemas.JobRejected, offset int64, ts time.Time) {
	j := c.job(v.JobRef, offset, ts)
	c.finish(j, "rejected", v.Reason, v.Detail, v, ts, v.At)
	j.setCaller(v.Caller)
	j.AllowedActions = nonNil(v.AllowedActions)
	if v.JobType == "Deploy" {
		c.refusedVMs = append(c.refusedVMs, v.VmID)
	}
}

func newChanges() *changes {
	return &changes{vms: map[string]*vmChange{}, jobs: map[string]*jobChange{}, newJobs: map[string]*jobChange{}}
}

// jobsEnded lists the jobs the batch ends (the waiters of GET /v1/jobs/{id}?wait=).
func (c *changes) jobsEnded() []string {
	var ids []string
	for _, id := range c.jobIDs {
		if c.jobs[id].FinishedAt != nil {
			ids = append(ids, id)
		}
	}
	return ids
}

// jobsStepped lists once each job the batch adds steps to.
func (c *changes) jobsStepped() []string {
	var ids []string
	seen := map[string]bool{}
	for _, s := range c.steps {
		if !seen[s.JobID] {
			seen[s.JobID] = true
			ids = append(ids, s.JobID)
		}
	}
	return ids
}

// ms turns Unix milliseconds into a UTC time; fallback is used for 0.
func ms(v int64, fallback time.Time) time.Time {
	if v == 0 {
		return fallback
	}
	return time.UnixMilli(v).UTC()
}

// msPtr is ms with 0 meaning "none".
func msPtr(v int64) *time.Time {
	if v == 0 {
		return nil
	}
	t := time.UnixMilli(v).UTC()
	return &t
}

func ptr[T any](v T) *T { return &v }

// add folds one decoded record. It reports false for a type the projector
// has no table for (the offset still advances).
func (c *changes) add(r schemas.Record) bool {
	// The Kafka timestamp stands in for a missing event time.
	ts := time.UnixMilli(r.TimestampMs).UTC()
	switch v := r.Value.(type) {
	case *schemas.VmStateChanged:
		c.vmUpsert(v, r.Offset, ts)
	case *schemas.PowerStateObserved:
		c.vmPowerObserved(v, r.Offset, ts)
	case *schemas.VmExpunged:
		c.vm(v.VmID).op = vmDelete
		c.vms[v.VmID].version = r.Offset
		c.stmts = append(c.stmts, stmt{sqlSnapshotsExpunged, []any{v.VmID, r.Offset}})
		c.stmts = append(c.stmts, expungedStorageStmts(v.VmID, r.Offset)...)
	case *schemas.SnapshotTaken, *schemas.SnapshotDeleted:
		c.stmts = append(c.stmts, rowStmt(v, r.Offset, ts))
	case *schemas.JobAccepted:
		j := c.job(v.JobRef, r.Offset, ts)
		j.setCaller(v.Caller)
		j.State = "running"
		if v.Queued {
			j.State = "pending"
		}
	case *schemas.JobStepped:
		j := c.job(v.JobRef, r.Offset, ts)
		j.State = "running"
		j.TaskState = ptr(v.TaskState)
		c.steps = append(c.steps, stepRow{JobID: v.JobID, VmID: v.VmID, TaskState: v.TaskState, Step: v.Step,
			Text: v.Text, Obj: v.Obj, Seq: v.Seq, At: ms(v.At, ts), version: r.Offset})
	case *schemas.JobSucceeded:
		c.finish(c.job(v.JobRef, r.Offset, ts), "succeeded", "", "", v, ts, v.At)
	case *schemas.JobFailed:
		c.finish(c.job(v.JobRef, r.Offset, ts), "failed", v.Reason, v.Detail, v, ts, v.At)
	case *schemas.JobCancelled:
		c.finish(c.job(v.JobRef, r.Offset, ts), "cancelled", v.Reason, v.Detail, v, ts, v.At)
	case *schemas.JobRejected:
		c.rejected(v, r.Offset, ts)
	case *schemas.AlertRaised:
		c.stmts = append(c.stmts, stmt{sqlAlert, []any{v.AlertID, v.Kind, v.VmID, v.HostID, v.Account, v.JobID, v.Message, ms(v.At, ts), r.Offset, v.ZoneID}})
	case *schemas.AlertAcknowledged:
		c.stmts = append(c.stmts, stmt{sqlAlertAck, []any{v.AlertID, v.By, ms(v.At, ts), r.Offset}})
	case *schemas.HostStatus:
		c.stmts = append(c.stmts, stmt{sqlHostStatus, []any{v.HostID, v.Name, v.ZoneID, v.PodID, v.ClusterID, v.Hypervisor,
			v.Status, v.ResourceState, v.Reservable, v.CPU, v.MemoryMB, v.CPUOvercommit, v.MemOvercommit, nonNil(v.Tags),
			msPtr(v.LastPingAt), v.Reason, ms(v.UpdatedAt, ts), r.Offset}})
	case *schemas.CapacityAllocated:
		c.stmts = append(c.stmts,
			stmt{sqlAllocation, []any{v.VmID, v.HostID, v.ZoneID, v.Account, v.CPU, v.MemoryMB, v.RequestID, ms(v.At, ts), r.Offset}},
			stmt{sqlHostUsage, []any{v.HostID, v.ZoneID, v.HostUsedCPU, v.HostUsedMemory, ms(v.At, ts), r.Offset}})
	case *schemas.CapacityReleased:
		c.stmts = append(c.stmts,
			stmt{sqlAllocationRelease, []any{v.VmID, v.HostID, r.Offset}},
			stmt{sqlHostUsage, []any{v.HostID, v.ZoneID, v.HostUsedCPU, v.HostUsedMemory, ms(v.At, ts), r.Offset}})
	case *schemas.HostReserved:
		c.stmts = append(c.stmts, stmt{sqlHostReserved, []any{v.HostID, v.ZoneID, v.Planner, v.ResourceUsage, v.Account, ms(v.At, ts), r.Offset}})
	case *schemas.HostReservationReleased:
		c.stmts = append(c.stmts, stmt{sqlHostReservationReleased, []any{v.HostID, v.ZoneID, v.Reason, ms(v.At, ts), r.Offset}})
	case *schemas.ServiceOffering, *schemas.SettingChanged:
		c.stmts = append(c.stmts, rowStmt(v, r.Offset, ts))
	case *schemas.LeaseStatusChanged, *schemas.LeaseHostChanged, *schemas.Template, *schemas.StoragePoolChanged,
		*schemas.NetworkChanged, *schemas.VolumeChanged, *schemas.NicChanged, *schemas.VolumeSnapshotTaken:
		c.stmts = append(c.stmts, tableStmts(v, r.Offset, ts)...)

	case *schemas.AccountCreated:
		c.stmts = append(c.stmts, stmt{sqlAccount, []any{v.AccountID, v.Name, ms(v.At, ts), r.Offset}})
	case *schemas.ApiKeyIssued:
		c.stmts = append(c.stmts, stmt{sqlAPIKey, []any{v.KeyID, v.AccountID, v.Role, v.Hash, msPtr(v.ExpiresAt), ms(v.At, ts), r.Offset}})
	case *schemas.ApiKeyRevoked:
		c.stmts = append(c.stmts, stmt{sqlAPIKeyRevoke, []any{v.KeyID, r.Offset}})
	default:
		if cmd, ok := r.Value.(schemas.VmCommandRecord); ok {
			c.command(*cmd.Common(), schemas.TypeName(r.Value), ts)
			return true
		}
		return false
	}
	return true
}

// tableStmts is the write of a lease, storage or network record, each
// of which sets rows of its own tables. One case in add for them all keeps
// add's branches within the linter's bound.
func tableStmts(v any, offset int64, ts time.Time) []stmt {
	if s := storageStmts(v, offset, ts); s != nil {
		return s
	}
	return leaseStmts(v, offset, ts)
}

// rowStmt is the write of a record that sets or removes one row of a
// small table: an offering, a setting or a snapshot. One case in add for
// them all keeps add's branches within the linter's bound.
func rowStmt(v any, offset int64, ts time.Time) stmt {
	switch v := v.(type) {
	case *schemas.ServiceOffering:
		return offeringStmt(v, offset, ts)
	case *schemas.SettingChanged:
		return settingStmt(v, offset, ts)
	}
	return snapshotStmt(v, offset, ts)
}

// offeringStmt sets an offering's row, or removes a deleted one.
func offeringStmt(v *schemas.ServiceOffering, offset int64, ts time.Time) stmt {
	if v.Deleted {
		return stmt{sqlOfferingDelete, []any{v.ID, offset}}
	}
	return stmt{sqlOffering, []any{v.ID, v.Name, v.CPU, v.MemoryMB, v.HA, v.DeploymentPlanner,
		nonNil(v.HostTags), ms(v.CreatedAt, ts), offset, v.PlannerMode, nonNil(v.StorageTags)}}
}

// settingStmt sets a setting's row at its scope, or removes it when the
// setting was set back to its default.
func settingStmt(v *schemas.SettingChanged, offset int64, ts time.Time) stmt {
	if v.Value == "" {
		return stmt{sqlSettingDelete, []any{v.Name, v.Scope, v.ScopeID, offset}}
	}
	return stmt{sqlSetting, []any{v.Name, v.Scope, v.ScopeID, v.Value, v.By, ms(v.At, ts), offset}}
}

// snapshotStmt is the write of a SnapshotTaken or SnapshotDeleted.
func snapshotStmt(v any, offset int64, ts time.Time) stmt {
	if t, ok := v.(*schemas.SnapshotTaken); ok {
		return stmt{sqlSnapshot, []any{t.VmID, t.Name, t.Account, t.JobID, ms(t.At, ts), offset}}
	}
	d := v.(*schemas.SnapshotDeleted)
	return stmt{sqlSnapshotDelete, []any{d.VmID, d.Name, offset}}
}

func (c *changes) vm(id string) *vmChange {
	v, ok := c.vms[id]
	if !ok {
		v = &vmChange{op: vmPower, row: vmRow{ID: id}}
		c.vms[id] = v
		c.vmOrder = append(c.vmOrder, id)
	}
	return v
}

func (c *changes) vmUpsert(e *schemas.VmStateChanged, offset int64, ts time.Time) {
	v := c.vm(e.VmID)
	v.op, v.version = vmUpsert, offset
	v.row = vmRow{
		ID: e.VmID, Name: e.Name, Account: e.Account, ZoneID: e.ZoneID,
		OfferingID: e.Offering.ID, Offering: e.Offering.Name, CPU: e.Offering.CPU, MemoryMB: e.Offering.MemoryMB,
		HA: e.HA, VmState: e.VmState, TaskState: e.TaskState, PowerState: e.PowerState, PowerHost: e.PowerHost,
		PowerUpdateTime: msPtr(e.PowerStateUpdateTime), PowerUpdateCount: e.PowerStateUpdateCount,
		LegacyState: e.LegacyState, HostID: e.HostID, Epoch: e.Epoch, JobID: e.JobID, PendingJobs: e.PendingJobs,
		AllowedActions: nonNil(e.AllowedActions), Reason: e.Reason,
		CreatedAt: ms(e.CreatedAt, ts), UpdatedAt: ms(e.UpdatedAt, ts),
	}
}

func (c *changes) vmPowerObserved(e *schemas.PowerStateObserved, offset int64, ts time.Time) {
	v := c.vm(e.VmID)
	if v.op == vmDelete {
		return // an expunged VM has no row to report on
	}
	v.version = offset
	v.row.PowerState, v.row.PowerHost, v.row.PowerUpdateCount = e.PowerState, e.HostID, e.Count
	v.row.PowerUpdateTime = ptr(ms(e.At, ts))
}

func (c *changes) job(ref schemas.JobRef, offset int64, ts time.Time) *jobChange {
	at := ms(ref.At, ts)
	j, ok := c.jobs[ref.JobID]
	if !ok {
		j = &jobChange{ID: ref.JobID, CreatedAt: at}
		c.jobs[ref.JobID] = j
		c.jobIDs = append(c.jobIDs, ref.JobID)
	}
	j.VmID, j.Account, j.Type, j.Origin = ref.VmID, ref.Account, ref.JobType, ref.Origin
	j.UpdatedAt, j.version = at, offset
	if at.Before(j.CreatedAt) {
		j.CreatedAt = at
	}
	return j
}

// finish ends a job with its end event ev, whose error code goes beside
// reason and detail.
func (c *changes) finish(j *jobChange, state, reason, detail string, ev any, ts time.Time, at int64) {
	j.State, j.Reason, j.Detail, j.ErrorCode = state, ptr(reason), ptr(detail), ptr(schemas.ErrorCode(ev))
	j.FinishedAt = ptr(ms(at, ts))
}

// setCaller keeps who asked for the job; a record from before the field
// says nothing and changes nothing.
func (j *jobChange) setCaller(c schemas.Caller) {
	if c != (schemas.Caller{}) {
		j.Caller = &c
	}
}

// callerOr is the job's caller as a batch leaves it: its own, or old.
func (j *jobChange) callerOr(old schemas.Caller) schemas.Caller {
	if j.Caller == nil {
		return old
	}
	return *j.Caller
}

func (c *changes) command(cmd schemas.VmCommand, typ string, ts time.Time) {
	if _, ok := c.newJobs[cmd.CommandID]; ok || cmd.CommandID == "" {
		return
	}
	at := ms(cmd.IssuedAt, ts)
	n := &jobChange{ID: cmd.CommandID, VmID: cmd.VmID, Account: cmd.Account, Type: typ,
		Origin: cmd.Origin, State: "pending", CreatedAt: at, UpdatedAt: at, version: -1}
	n.setCaller(cmd.Caller)
	c.newJobs[cmd.CommandID] = n
	c.newIDs = append(c.newIDs, cmd.CommandID)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// joinActions packs an action list into one text for unnest (Postgres has
// no arrays of arrays of differing lengths); action names never hold commas.
func joinActions(a []string) string { return strings.Join(a, ",") }
