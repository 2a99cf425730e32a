package postgres

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// ReadModel reads the modelled tables of conn's search_path into a Model,
// for holding what the projector or a rebuild wrote against Model.Apply
// or Rebuilt (Diff).
func ReadModel(ctx context.Context, conn *pgx.Conn) (*Model, error) {
	m := NewModel()
	for _, read := range []func(context.Context, *pgx.Conn, *Model) error{readVMs, readJobs, readSteps, readHosts, readAllocations, readAlerts} {
		if err := read(ctx, conn, m); err != nil {
			return nil, fmt.Errorf("read model: %w", err)
		}
	}
	return m, nil
}

// eachRow runs sql and, for each row scanned into dest, row.
func eachRow(ctx context.Context, conn *pgx.Conn, sql string, dest []any, row func()) error {
	rows, err := conn.Query(ctx, sql)
	if err != nil {
		return err
	}
	_, err = pgx.ForEachRow(rows, dest, func() error { row(); return nil })
	return err
}

// utc gives times read back the location the fold gives them.
func utc(t time.Time) time.Time { return t.UTC() }

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	return ptr(t.UTC())
}

func readVMs(ctx context.Context, conn *pgx.Conn, m *Model) error {
	var v vmChange
	r := &v.row
	return eachRow(ctx, conn, `SELECT id, name, account, zone_id, offering_id, offering, cpu, memory_mb, ha, vm_state,
		task_state, power_state, power_host, power_state_update_time, power_state_update_count, legacy_state, host_id,
		epoch, job_id, pending_jobs, allowed_actions, reason, created_at, updated_at, version FROM vms`,
		[]any{&r.ID, &r.Name, &r.Account, &r.ZoneID, &r.OfferingID, &r.Offering, &r.CPU, &r.MemoryMB, &r.HA,
			&r.VmState, &r.TaskState, &r.PowerState, &r.PowerHost, &r.PowerUpdateTime, &r.PowerUpdateCount, &r.LegacyState,
			&r.HostID, &r.Epoch, &r.JobID, &r.PendingJobs, &r.AllowedActions, &r.Reason, &r.CreatedAt, &r.UpdatedAt, &v.version},
		func() {
			row := v
			row.op = vmUpsert
			row.row.AllowedActions = slices.Clone(r.AllowedActions) // dest is scanned into again
			row.row.PowerUpdateTime, row.row.CreatedAt, row.row.UpdatedAt = utcPtr(r.PowerUpdateTime), utc(r.CreatedAt), utc(r.UpdatedAt)
			m.vms[r.ID] = row
		})
}

func readJobs(ctx context.Context, conn *pgx.Conn, m *Model) error {
	var j jobRow
	return eachRow(ctx, conn, `SELECT id, vm_id, account, type, origin, state, reason, detail, task_state,
		allowed_actions, created_at, updated_at, finished_at, version, error_code, caller_account, caller_key_id,
		caller_request_id FROM jobs`,
		[]any{&j.ID, &j.VmID, &j.Account, &j.Type, &j.Origin, &j.State, &j.Reason, &j.Detail, &j.TaskState,
			&j.AllowedActions, &j.CreatedAt, &j.UpdatedAt, &j.FinishedAt, &j.Version, &j.ErrorCode, &j.Caller.Account,
			&j.Caller.KeyID, &j.Caller.RequestID},
		func() {
			row := j
			row.AllowedActions = slices.Clone(j.AllowedActions)
			row.CreatedAt, row.UpdatedAt, row.FinishedAt = utc(j.CreatedAt), utc(j.UpdatedAt), utcPtr(j.FinishedAt)
			m.jobs[j.ID] = row
		})
}

func readSteps(ctx context.Context, conn *pgx.Conn, m *Model) error {
	var s stepRow
	return eachRow(ctx, conn, `SELECT job_id, seq, vm_id, task_state, step, text, obj, at, version FROM job_steps`,
		[]any{&s.JobID, &s.Seq, &s.VmID, &s.TaskState, &s.Step, &s.Text, &s.Obj, &s.At, &s.version},
		func() {
			row := s
			row.At = utc(s.At)
			m.steps[stepKey{s.JobID, s.Seq}] = row
		})
}

func readHosts(ctx context.Context, conn *pgx.Conn, m *Model) error {
	var (
		id, name, zone, pod, cluster, hyp, status, rs, reason string
		reservable                                            bool
		cpu, usedCPU                                          int32
		mem, version, usedMem, usageVersion                   int64
		cpuOver, memOver                                      float64
		tags                                                  []string
		ping                                                  *time.Time
		updated                                               time.Time
	)
	return eachRow(ctx, conn, `SELECT id, name, zone_id, pod_id, cluster_id, hypervisor, status, resource_state,
		reservable, cpu, memory_mb, cpu_overcommit, mem_overcommit, tags, last_ping_at, reason, updated_at, version,
		used_cpu, used_memory_mb, usage_version FROM hosts`,
		[]any{&id, &name, &zone, &pod, &cluster, &hyp, &status, &rs, &reservable, &cpu, &mem, &cpuOver, &memOver,
			&tags, &ping, &reason, &updated, &version, &usedCPU, &usedMem, &usageVersion},
		func() {
			m.stmts.hosts[id] = []any{id, name, zone, pod, cluster, hyp, status, rs, reservable, cpu, mem, cpuOver, memOver,
				slices.Clone(tags), utcPtr(ping), reason, utc(updated), version, usedCPU, usedMem, usageVersion}
			m.stmts.hostIDs = append(m.stmts.hostIDs, id)
		})
}

func readAllocations(ctx context.Context, conn *pgx.Conn, m *Model) error {
	var (
		vm, host, zone, account, request string
		cpu                              int32
		mem, version                     int64
		at                               time.Time
	)
	return eachRow(ctx, conn, `SELECT vm_id, host_id, zone_id, account, cpu, memory_mb, request_id, at, version FROM allocations`,
		[]any{&vm, &host, &zone, &account, &cpu, &mem, &request, &at, &version},
		func() {
			k := [2]string{vm, host}
			m.stmts.allocs[k] = []any{vm, host, zone, account, cpu, mem, request, utc(at), version}
			m.stmts.allocKeys = append(m.stmts.allocKeys, k)
		})
}

func readAlerts(ctx context.Context, conn *pgx.Conn, m *Model) error {
	var (
		id, kind, vm, host, account, job, msg, zone string
		at                                          time.Time
		version                                     int64
	)
	return eachRow(ctx, conn, `SELECT id, kind, vm_id, host_id, account, job_id, message, at, version, zone_id FROM alerts`,
		[]any{&id, &kind, &vm, &host, &account, &job, &msg, &at, &version, &zone},
		func() {
			m.stmts.alerts = append(m.stmts.alerts, []any{id, kind, vm, host, account, job, msg, utc(at), version, zone})
			m.stmts.alertSeen[id] = true
		})
}
