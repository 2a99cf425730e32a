package postgres

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// Model is the read model as plain Go values: the rows the live projector
// leaves in vms, jobs, job_steps, hosts, allocations and alerts after a run
// of polls (Apply), by the rules of its statements — version guards, the
// command placeholders, coalesced job fields, the first row of a step —,
// or after a rebuild from the whole log (Rebuilt). It never touches a
// database. The simulation folds its log poll by poll with it and holds
// the result against a rebuild (docs/design.md §14);
// TestModelMatchesPostgres holds Apply against the real projector's
// tables. The other tables (leases, offerings, accounts, keys, host
// reservations, snapshots) run the same statements, in log order, in both paths, and
// are not modelled.
type Model struct {
	vms   map[string]vmChange
	jobs  map[string]jobRow
	steps map[stepKey]stepRow
	stmts *folded
}

// NewModel is an empty read model.
func NewModel() *Model {
	return &Model{vms: map[string]vmChange{}, jobs: map[string]jobRow{}, steps: map[stepKey]stepRow{}, stmts: newFolded()}
}

// Apply folds one poll of records, as the live projector writes it in one
// transaction.
func (m *Model) Apply(poll []schemas.Record) {
	c := newChanges()
	for _, r := range poll {
		c.add(r)
	}
	m.applyVMs(c)
	m.applyJobs(c)
	for _, st := range c.steps {
		k := stepKey{st.JobID, st.Seq}
		if _, ok := m.steps[k]; !ok {
			m.steps[k] = st
		}
	}
	m.stmts.add(c.stmts)
}

// applyVMs is sqlVmsUpsert, sqlVmsPower and sqlVmsDelete.
func (m *Model) applyVMs(c *changes) {
	for _, id := range c.vmOrder {
		v := *c.vms[id]
		cur, ok := m.vms[id]
		if ok && cur.version >= v.version {
			continue
		}
		switch v.op {
		case vmUpsert:
			m.vms[id] = vmChange{op: vmUpsert, row: v.row, version: v.version}
		case vmPower:
			if ok {
				r := &cur.row
				r.PowerState, r.PowerHost, r.PowerUpdateCount, r.PowerUpdateTime = v.row.PowerState, v.row.PowerHost, v.row.PowerUpdateCount, v.row.PowerUpdateTime
				cur.version = v.version
				m.vms[id] = cur
			}
		case vmDelete:
			delete(m.vms, id)
		}
	}
}

// applyJobs is sqlJobs and then sqlJobsFromCommands.
func (m *Model) applyJobs(c *changes) {
	for _, id := range c.jobIDs {
		j := c.jobs[id]
		cur, ok := m.jobs[id]
		if !ok {
			m.jobs[id] = jobRow{ID: j.ID, VmID: j.VmID, Account: j.Account, Type: j.Type, Origin: j.Origin, State: j.State,
				Reason: deref(j.Reason), Detail: deref(j.Detail), TaskState: deref(j.TaskState), AllowedActions: nonNil(j.AllowedActions),
				CreatedAt: j.CreatedAt, UpdatedAt: j.UpdatedAt, FinishedAt: j.FinishedAt, Version: j.version,
				ErrorCode: deref(j.ErrorCode), Caller: j.callerOr(schemas.Caller{})}
			continue
		}
		if cur.Version >= j.version {
			continue
		}
		cur.ErrorCode, cur.Caller = coalesce(j.ErrorCode, cur.ErrorCode), j.callerOr(cur.Caller)
		cur.VmID, cur.Account, cur.Type, cur.Origin, cur.State = j.VmID, j.Account, j.Type, j.Origin, j.State
		cur.Reason, cur.Detail, cur.TaskState = coalesce(j.Reason, cur.Reason), coalesce(j.Detail, cur.Detail), coalesce(j.TaskState, cur.TaskState)
		if j.AllowedActions != nil {
			cur.AllowedActions = j.AllowedActions
		}
		if j.CreatedAt.Before(cur.CreatedAt) {
			cur.CreatedAt = j.CreatedAt
		}
		cur.UpdatedAt, cur.Version = j.UpdatedAt, j.version
		if j.FinishedAt != nil {
			cur.FinishedAt = j.FinishedAt
		}
		m.jobs[id] = cur
	}
	for _, id := range c.newIDs {
		n := c.newJobs[id]
		cur, ok := m.jobs[id]
		switch {
		case !ok:
			m.jobs[id] = n.pendingRow()
		case n.CreatedAt.Before(cur.CreatedAt) || cur.Caller.Account == "" && n.Caller != nil && n.Caller.Account != "":
			cur.CreatedAt = minTime(cur.CreatedAt, n.CreatedAt)
			if cur.Caller.Account == "" {
				cur.Caller = n.callerOr(schemas.Caller{})
			}
			m.jobs[id] = cur
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func coalesce(p *string, old string) string {
	if p == nil {
		return old
	}
	return *p
}

// Rebuilt is the read model a rebuild makes of log: every record folded
// into one set of changes, then loaded as Rebuild loads it.
func Rebuilt(log []schemas.Record) *Model {
	c := newChanges()
	for _, r := range log {
		c.add(r)
	}
	m := NewModel()
	for _, id := range c.vmOrder {
		if v := c.vms[id]; v.op == vmUpsert {
			m.vms[id] = *v
		}
	}
	for _, j := range jobTable(c) {
		m.jobs[j.ID] = j
	}
	for _, st := range c.steps {
		if _, ok := m.steps[stepKey{st.JobID, st.Seq}]; !ok {
			m.steps[stepKey{st.JobID, st.Seq}] = st
		}
	}
	m.stmts = foldStatements(c.stmts)
	return m
}

// Diff names the first rows in which two models differ, table by table
// and key by key in order; "" when they are equal.
func (m *Model) Diff(o *Model) string {
	var out []string
	if d := diffRows("vms", m.vms, o.vms, func(a, b vmChange) bool { return a.version == b.version && reflect.DeepEqual(a.row, b.row) }); d != "" {
		out = append(out, d)
	}
	if d := diffRows("jobs", m.jobs, o.jobs, func(a, b jobRow) bool { return a.equal(b) }); d != "" {
		out = append(out, d)
	}
	if d := diffRows("job_steps", keyed(m.steps), keyed(o.steps), func(a, b stepRow) bool { return a == b }); d != "" {
		out = append(out, d)
	}
	if d := diffRows("hosts", m.stmts.hosts, o.stmts.hosts, rowsEqual); d != "" {
		out = append(out, d)
	}
	if d := diffRows("allocations", m.stmts.allocationMap(), o.stmts.allocationMap(), rowsEqual); d != "" {
		out = append(out, d)
	}
	if d := diffRows("alerts", m.stmts.alertMap(), o.stmts.alertMap(), rowsEqual); d != "" {
		out = append(out, d)
	}
	return strings.Join(out, "; ")
}

func (j jobRow) equal(o jobRow) bool {
	return reflect.DeepEqual(j.values(), o.values())
}

func rowsEqual(a, b []any) bool { return reflect.DeepEqual(a, b) }

// keyed names steps by "job#seq" for diffRows.
func keyed(steps map[stepKey]stepRow) map[string]stepRow {
	out := make(map[string]stepRow, len(steps))
	for k, v := range steps {
		out[fmt.Sprintf("%s#%d", k.job, k.seq)] = v
	}
	return out
}

func (f *folded) allocationMap() map[string][]any {
	out := map[string][]any{}
	for k, a := range f.allocs {
		if a != nil {
			out[k[0]+"@"+k[1]] = a
		}
	}
	return out
}

func (f *folded) alertMap() map[string][]any {
	out := make(map[string][]any, len(f.alerts))
	for _, a := range f.alerts {
		out[a[0].(string)] = a
	}
	return out
}

// diffRows describes the first key whose row is missing from one side or
// differs.
func diffRows[R any](table string, a, b map[string]R, eq func(R, R) bool) string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		x, inA := a[k]
		y, inB := b[k]
		switch {
		case !inA:
			return fmt.Sprintf("%s %s: only in the second (%+v)", table, k, y)
		case !inB:
			return fmt.Sprintf("%s %s: only in the first (%+v)", table, k, x)
		case !eq(x, y):
			return fmt.Sprintf("%s %s: %+v, against %+v", table, k, x, y)
		}
	}
	return ""
}

// Rows says how many rows each modelled table holds.
func (m *Model) Rows() map[string]int {
	return map[string]int{"vms": len(m.vms), "jobs": len(m.jobs), "job_steps": len(m.steps),
		"hosts": len(m.stmts.hosts), "allocations": len(m.stmts.allocationMap()), "alerts": len(m.stmts.alerts)}
}
