package postgres

import (
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vmplane/vmplane/schemas"
)

// The hot tables (vms, jobs, job_steps) are written set-based from arrays
// with unnest; every upsert is gated on version so an older record never
// overwrites a newer one.

const sqlVmsUpsert = `
INSERT INTO vms (id, name, account, zone_id, offering_id, offering, cpu, memory_mb, ha, vm_state, task_state,
	power_state, power_host, power_state_update_time, power_state_update_count, legacy_state, host_id, epoch,
	job_id, pending_jobs, allowed_actions, reason, created_at, updated_at, version)
SELECT id, name, account, zone_id, offering_id, offering, cpu, memory_mb, ha, vm_state, task_state,
	power_state, power_host, power_time, power_count, legacy_state, host_id, epoch,
	job_id, pending_jobs, string_to_array(actions, ','), reason, created_at, updated_at, version
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int[], $8::bigint[],
	$9::bool[], $10::text[], $11::text[], $12::text[], $13::text[], $14::timestamptz[], $15::int[], $16::text[],
	$17::text[], $18::bigint[], $19::text[], $20::int[], $21::text[], $22::text[], $23::timestamptz[],
	$24::timestamptz[], $25::bigint[])
	AS u(id, name, account, zone_id, offering_id, offering, cpu, memory_mb, ha, vm_state, task_state,
	power_state, power_host, power_time, power_count, legacy_state, host_id, epoch, job_id, pending_jobs,
	actions, reason, created_at, updated_at, version)
ON CONFLICT (id) DO UPDATE SET
	name = excluded.name, account = excluded.account, zone_id = excluded.zone_id,
	offering_id = excluded.offering_id, offering = excluded.offering, cpu = excluded.cpu,
	memory_mb = excluded.memory_mb, ha = excluded.ha, vm_state = excluded.vm_state,
	task_state = excluded.task_state, power_state = excluded.power_state, power_host = excluded.power_host,
	power_state_update_time = excluded.power_state_update_time,
	power_state_update_count = excluded.power_state_update_count, legacy_state = excluded.legacy_state,
	host_id = excluded.host_id, epoch = excluded.epoch, job_id = excluded.job_id,
	pending_jobs = excluded.pending_jobs, allowed_actions = excluded.allowed_actions, reason = excluded.reason,
	created_at = excluded.created_at, updated_at = excluded.updated_at, version = excluded.version
WHERE vms.version < excluded.version`

const sqlVmsPower = `
UPDATE vms SET power_state = u.power_state, power_host = u.power_host, power_state_update_count = u.cnt,
	power_state_update_time = u.at, version = u.version
FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::timestamptz[], $6::bigint[])
	AS u(id, power_state, power_host, cnt, at, version)
WHERE vms.id = u.id AND vms.version < u.version`

const sqlVmsDelete = `
DELETE FROM vms USING unnest($1::text[], $2::bigint[]) AS u(id, version)
WHERE vms.id = u.id AND vms.version < u.version`

// jobArgs are the unnest columns of sqlJobs. The caller's three columns
// are NULL together when the batch says nothing of who asked.
const jobArgs = `unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
	$8::text[], $9::text[], $10::text[], $11::timestamptz[], $12::timestamptz[], $13::timestamptz[], $14::bigint[],
	$15::text[], $16::text[], $17::text[], $18::text[])
	AS u(id, vm_id, account, type, origin, state, reason, detail, task_state, actions, created_at, updated_at,
	finished_at, version, error_code, caller_account, caller_key_id, caller_request_id)`

// sqlJobs writes a batch's jobs in one statement. The update changes the
// jobs that exist, keeping what the batch left NULL; the insert makes the
// others, and only those. As a second statement over every job of the
// batch, the insert conflicted with each existing job, and a conflict
// locks its row (a WAL record, a dirtied page) even when the DO UPDATE
// does nothing: at 500 deploys/s, 1,512 inserts for 119 new rows.
// The insert's DO UPDATE only matters when another projector instance
// inserted the command's row (version -1) after the statement's snapshot:
// the event row then wins, but for the command's caller when the events
// name none. A job the update skipped for a newer version conflicts and
// stays as it is.
const sqlJobs = `
WITH u AS MATERIALIZED (SELECT * FROM ` + jobArgs + `),
updated AS (
UPDATE jobs SET vm_id = u.vm_id, account = u.account, type = u.type, origin = u.origin, state = u.state,
	reason = coalesce(u.reason, jobs.reason), detail = coalesce(u.detail, jobs.detail),
	task_state = coalesce(u.task_state, jobs.task_state),
	allowed_actions = coalesce(string_to_array(u.actions, ','), jobs.allowed_actions),
	created_at = least(jobs.created_at, u.created_at), updated_at = u.updated_at,
	finished_at = coalesce(u.finished_at, jobs.finished_at), version = u.version,
	error_code = coalesce(u.error_code, jobs.error_code),
	caller_account = coalesce(u.caller_account, jobs.caller_account),
	caller_key_id = coalesce(u.caller_key_id, jobs.caller_key_id),
	caller_request_id = coalesce(u.caller_request_id, jobs.caller_request_id)
FROM u
WHERE jobs.id = u.id AND jobs.version < u.version
RETURNING jobs.id)
INSERT INTO jobs (id, vm_id, account, type, origin, state, reason, detail, task_state, allowed_actions,
	created_at, updated_at, finished_at, version, error_code, caller_account, caller_key_id, caller_request_id)
SELECT id, vm_id, account, type, origin, state, coalesce(reason, ''), coalesce(detail, ''),
	coalesce(task_state, ''), coalesce(string_to_array(actions, ','), '{}'), created_at, updated_at,
	finished_at, version, coalesce(error_code, ''), coalesce(caller_account, ''), coalesce(caller_key_id, ''),
	coalesce(caller_request_id, '')
FROM u
WHERE NOT EXISTS (SELECT FROM updated WHERE updated.id = u.id)
ON CONFLICT (id) DO UPDATE SET vm_id = excluded.vm_id, account = excluded.account, type = excluded.type,
	origin = excluded.origin, state = excluded.state, reason = excluded.reason, detail = excluded.detail,
	task_state = excluded.task_state, allowed_actions = excluded.allowed_actions,
	created_at = least(jobs.created_at, excluded.created_at), updated_at = excluded.updated_at,
	finished_at = excluded.finished_at, version = excluded.version, error_code = excluded.error_code,
	caller_account = CASE WHEN excluded.caller_account = '' THEN jobs.caller_account ELSE excluded.caller_account END,
	caller_key_id = CASE WHEN excluded.caller_account = '' THEN jobs.caller_key_id ELSE excluded.caller_key_id END,
	caller_request_id = CASE WHEN excluded.caller_account = '' THEN jobs.caller_request_id ELSE excluded.caller_request_id END
WHERE jobs.version < 0`

// sqlCustomPlans and sqlCachedPlans switch the statements between them to
// plans made for their arguments (queueJoin).
const (
	sqlCustomPlans = `SET LOCAL plan_cache_mode = force_custom_plan`
	sqlCachedPlans = `SET LOCAL plan_cache_mode = auto`
)

// queueJoin queues a statement that joins a table with its arguments
// (UPDATE … FROM unnest, DELETE … USING unnest) to be planned for those
// arguments. A prepared statement's generic plan is kept however the table
// grows: one made while the table was small (a new read model) scans the
// whole table on every batch from then on, where a plan made for a batch's
// few keys looks them up by key once the table is large enough to need it.
// The other statements find their rows through ON CONFLICT, by key always,
// and keep their cached plans.
func queueJoin(b *pgx.Batch, sql string, args ...any) {
	b.Queue(sqlCustomPlans)
	b.Queue(sql, args...)
	b.Queue(sqlCachedPlans)
}

// sqlJobsFromCommands makes a pending job visible as soon as the gateway's
// command is in the log; any job event overwrites it. The command and the
// job's events are on two topics read in no fixed order, so created_at is
// the earliest of the two whichever lands first, and the command's caller
// fills a row whose events named none (written before the field).
const sqlJobsFromCommands = `
INSERT INTO jobs (id, vm_id, account, type, origin, state, created_at, updated_at, version,
	caller_account, caller_key_id, caller_request_id)
SELECT id, vm_id, account, type, origin, 'pending', at, at, -1, caller_account, caller_key_id, caller_request_id
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[], $7::text[], $8::text[], $9::text[])
	AS u(id, vm_id, account, type, origin, at, caller_account, caller_key_id, caller_request_id)
ON CONFLICT (id) DO UPDATE SET created_at = least(jobs.created_at, excluded.created_at),
	caller_account = CASE WHEN jobs.caller_account = '' THEN excluded.caller_account ELSE jobs.caller_account END,
	caller_key_id = CASE WHEN jobs.caller_account = '' THEN excluded.caller_key_id ELSE jobs.caller_key_id END,
	caller_request_id = CASE WHEN jobs.caller_account = '' THEN excluded.caller_request_id ELSE jobs.caller_request_id END
WHERE excluded.created_at < jobs.created_at OR jobs.caller_account = '' AND excluded.caller_account <> ''`

const sqlJobSteps = `
INSERT INTO job_steps (job_id, seq, vm_id, task_state, step, text, obj, at, version)
SELECT * FROM unnest($1::text[], $2::int[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
	$8::timestamptz[], $9::bigint[])
ON CONFLICT (job_id, seq) DO NOTHING`

// sqlAlert inserts a batch's alerts, which stand in changes.stmts one
// row each (id, kind, vm_id, host_id, account, job_id, message, at,
// version, zone_id): queue gathers them into one statement. An alert is
// written once, by its first record. A reconnect storm raises one per VM
// that changed while away: as 50,000 single-row statements they kept the
// projector behind the VM processor (bench -only storm, caught up 3.2–3.3 s
// against 2.8–2.9 s in one statement per batch).
const sqlAlert = `
INSERT INTO alerts (id, kind, vm_id, host_id, account, job_id, message, at, version, zone_id)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
	$8::timestamptz[], $9::bigint[], $10::text[])
ON CONFLICT (id) DO NOTHING`

// sqlAlertAck keeps an alert's first acknowledgement.
const sqlAlertAck = `
INSERT INTO alert_acks (alert_id, by, at, version) VALUES ($1, $2, $3, $4)
ON CONFLICT (alert_id) DO NOTHING`

const sqlHostStatus = `
INSERT INTO hosts (id, name, zone_id, pod_id, cluster_id, hypervisor, status, resource_state, reservable, cpu,
	memory_mb, cpu_overcommit, mem_overcommit, tags, last_ping_at, reason, updated_at, version)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
ON CONFLICT (id) DO UPDATE SET name = excluded.name, zone_id = excluded.zone_id, pod_id = excluded.pod_id,
	cluster_id = excluded.cluster_id, hypervisor = excluded.hypervisor, status = excluded.status,
	resource_state = excluded.resource_state, reservable = excluded.reservable, cpu = excluded.cpu,
	memory_mb = excluded.memory_mb, cpu_overcommit = excluded.cpu_overcommit,
	mem_overcommit = excluded.mem_overcommit, tags = excluded.tags, last_ping_at = excluded.last_ping_at,
	reason = excluded.reason, updated_at = excluded.updated_at, version = excluded.version
WHERE hosts.version < excluded.version`

// sqlHostUsage records the placement ledger's usage; a capacity event may
// come before the host's first status, so it can create the row.
const sqlHostUsage = `
INSERT INTO hosts (id, zone_id, used_cpu, used_memory_mb, updated_at, usage_version)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (id) DO UPDATE SET used_cpu = excluded.used_cpu, used_memory_mb = excluded.used_memory_mb,
	usage_version = excluded.usage_version
WHERE hosts.usage_version < excluded.usage_version`

const sqlAllocation = `
INSERT INTO allocations (vm_id, host_id, zone_id, account, cpu, memory_mb, request_id, at, version)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (vm_id, host_id) DO UPDATE SET zone_id = excluded.zone_id, account = excluded.account,
	cpu = excluded.cpu, memory_mb = excluded.memory_mb, request_id = excluded.request_id, at = excluded.at,
	version = excluded.version
WHERE allocations.version < excluded.version`

const sqlAllocationRelease = `DELETE FROM allocations WHERE vm_id = $1 AND host_id = $2 AND version < $3`

const sqlHostReserved = `
INSERT INTO host_reservations (host_id, zone_id, planner, resource_usage, account, reason, at, version)
VALUES ($1, $2, $3, $4, $5, '', $6, $7)
ON CONFLICT (host_id) DO UPDATE SET zone_id = excluded.zone_id, planner = excluded.planner,
	resource_usage = excluded.resource_usage, account = excluded.account, reason = '', at = excluded.at,
	version = excluded.version
WHERE host_reservations.version < excluded.version`

const sqlHostReservationReleased = `
INSERT INTO host_reservations (host_id, zone_id, planner, resource_usage, account, reason, at, version)
VALUES ($1, $2, '', '', '', $3, $4, $5)
ON CONFLICT (host_id) DO UPDATE SET planner = '', resource_usage = '', account = '', reason = excluded.reason,
	at = excluded.at, version = excluded.version
WHERE host_reservations.version < excluded.version`

const sqlOffering = `
INSERT INTO offerings (id, name, cpu, memory_mb, ha, deployment_planner, host_tags, created_at, version, planner_mode,
	storage_tags)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
ON CONFLICT (id) DO UPDATE SET name = excluded.name, cpu = excluded.cpu, memory_mb = excluded.memory_mb,
	ha = excluded.ha, deployment_planner = excluded.deployment_planner, host_tags = excluded.host_tags,
	planner_mode = excluded.planner_mode, storage_tags = excluded.storage_tags,
	created_at = excluded.created_at, version = excluded.version
WHERE offerings.version < excluded.version`

const sqlOfferingDelete = `DELETE FROM offerings WHERE id = $1 AND version < $2`

const sqlSetting = `
INSERT INTO settings (name, scope, scope_id, value, set_by, set_at, version) VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (name, scope, scope_id) DO UPDATE SET value = excluded.value, set_by = excluded.set_by,
	set_at = excluded.set_at, version = excluded.version
WHERE settings.version < excluded.version`

const sqlSettingDelete = `DELETE FROM settings WHERE name = $1 AND scope = $2 AND scope_id = $3 AND version < $4`

const sqlSnapshot = `
INSERT INTO snapshots (vm_id, name, account, job_id, taken_at, version) VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (vm_id, name) DO UPDATE SET account = excluded.account, job_id = excluded.job_id,
	taken_at = excluded.taken_at, version = excluded.version
WHERE snapshots.version < excluded.version`

const sqlSnapshotDelete = `DELETE FROM snapshots WHERE vm_id = $1 AND name = $2 AND version < $3`

const sqlSnapshotsExpunged = `DELETE FROM snapshots WHERE vm_id = $1 AND version < $2`

const sqlAccount = `
INSERT INTO accounts (id, name, created_at, version) VALUES ($1, $2, $3, $4)
ON CONFLICT (id) DO UPDATE SET name = excluded.name, version = excluded.version
WHERE accounts.version < excluded.version`

const sqlAPIKey = `
INSERT INTO api_keys (key_id, account_id, role, hash, expires_at, created_at, version)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (key_id) DO UPDATE SET account_id = excluded.account_id, role = excluded.role,
	hash = excluded.hash, expires_at = excluded.expires_at, version = excluded.version
WHERE api_keys.version < excluded.version`

const sqlAPIKeyRevoke = `UPDATE api_keys SET revoked = true, version = $2 WHERE key_id = $1 AND version < $2`

const sqlOffsets = `
INSERT INTO consumer_offsets ("group", topic, "partition", next_offset)
SELECT $1, topic, p, next FROM unnest($2::text[], $3::int[], $4::bigint[]) AS u(topic, p, next)
ON CONFLICT ("group", topic, "partition") DO UPDATE SET next_offset = excluded.next_offset
WHERE consumer_offsets.next_offset < excluded.next_offset`

// queue adds the batch's writes to b in an order that keeps the semantics of
// the log: job rows from events before the command placeholders (which then
// do nothing), the low-volume statements in log order, the alerts (which no
// other statement reads or writes) together, and last the gateways'
// accepted rows of what the batch projected (accepted.go).
func (c *changes) queue(b *pgx.Batch) {
	var up, pw, del vmColumns
	for _, id := range c.vmOrder {
		v := c.vms[id]
		switch v.op {
		case vmUpsert:
			up.add(v)
		case vmPower:
			pw.add(v)
		case vmDelete:
			del.add(v)
		}
	}
	if len(up.id) > 0 {
		b.Queue(sqlVmsUpsert, up.id, up.name, up.account, up.zone, up.offeringID, up.offering, up.cpu, up.mem,
			up.ha, up.vmState, up.taskState, up.powerState, up.powerHost, up.powerTime, up.powerCount,
			up.legacy, up.host, up.epoch, up.job, up.pending, up.actions, up.reason, up.created, up.updated,
			up.version)
	}
	if len(pw.id) > 0 {
		queueJoin(b, sqlVmsPower, pw.id, pw.powerState, pw.powerHost, pw.powerCount, pw.powerTime, pw.version)
	}
	if len(del.id) > 0 {
		queueJoin(b, sqlVmsDelete, del.id, del.version)
	}

	if len(c.jobIDs) > 0 {
		var j jobColumns
		for _, id := range c.jobIDs {
			j.add(c.jobs[id])
		}
		args := []any{j.id, j.vm, j.account, j.typ, j.origin, j.state, j.reason, j.detail, j.taskState,
			j.actions, j.created, j.updated, j.finished, j.version, j.errorCode, j.callerAccount, j.callerKey, j.callerRequest}
		queueJoin(b, sqlJobs, args...)
	}
	if len(c.newIDs) > 0 {
		var id, vm, account, typ, origin, callerAccount, callerKey, callerRequest []string
		var at []time.Time
		for _, k := range c.newIDs {
			n := c.newJobs[k]
			id, vm, account = append(id, n.ID), append(vm, n.VmID), append(account, n.Account)
			typ, origin, at = append(typ, n.Type), append(origin, n.Origin), append(at, n.CreatedAt)
			cl := n.callerOr(schemas.Caller{})
			callerAccount, callerKey, callerRequest = append(callerAccount, cl.Account), append(callerKey, cl.KeyID), append(callerRequest, cl.RequestID)
		}
		b.Queue(sqlJobsFromCommands, id, vm, account, typ, origin, at, callerAccount, callerKey, callerRequest)
	}
	if len(c.steps) > 0 {
		n := len(c.steps)
		job, vm, ts, step, text, obj := make([]string, n), make([]string, n), make([]string, n),
			make([]string, n), make([]string, n), make([]string, n)
		seq, at, ver := make([]int32, n), make([]time.Time, n), make([]int64, n)
		for i, s := range c.steps {
			job[i], seq[i], vm[i], ts[i], step[i], text[i], obj[i], at[i], ver[i] =
				s.JobID, s.Seq, s.VmID, s.TaskState, s.Step, s.Text, s.Obj, s.At, s.version
		}
		b.Queue(sqlJobSteps, job, seq, vm, ts, step, text, obj, at, ver)
	}
	var alerts alertColumns
	for _, s := range c.stmts {
		if s.sql == sqlAlert {
			alerts.add(s.args)
			continue
		}
		b.Queue(s.sql, s.args...)
	}
	if len(alerts.id) > 0 {
		b.Queue(sqlAlert, alerts.id, alerts.kind, alerts.vm, alerts.host, alerts.account, alerts.job, alerts.message,
			alerts.at, alerts.version, alerts.zone)
	}
	if kinds, ids := c.projected(); len(ids) > 0 {
		queueJoin(b, sqlAcceptedProjected, kinds, ids)
	}
}

type vmColumns struct {
	id, name, account, zone, offeringID, offering           []string
	cpu, powerCount, pending                                []int32
	mem, epoch, version                                     []int64
	ha                                                      []bool
	vmState, taskState, powerState, powerHost, legacy, host []string
	job, actions, reason                                    []string
	powerTime                                               []*time.Time
	created, updated                                        []time.Time
}

func (c *vmColumns) add(v *vmChange) {
	r := v.row
	c.id, c.name, c.account, c.zone = append(c.id, r.ID), append(c.name, r.Name), append(c.account, r.Account), append(c.zone, r.ZoneID)
	c.offeringID, c.offering = append(c.offeringID, r.OfferingID), append(c.offering, r.Offering)
	c.cpu, c.powerCount, c.pending = append(c.cpu, r.CPU), append(c.powerCount, r.PowerUpdateCount), append(c.pending, r.PendingJobs)
	c.mem, c.epoch, c.version = append(c.mem, r.MemoryMB), append(c.epoch, r.Epoch), append(c.version, v.version)
	c.ha = append(c.ha, r.HA)
	c.vmState, c.taskState = append(c.vmState, r.VmState), append(c.taskState, r.TaskState)
	c.powerState, c.powerHost = append(c.powerState, r.PowerState), append(c.powerHost, r.PowerHost)
	c.legacy, c.host, c.job = append(c.legacy, r.LegacyState), append(c.host, r.HostID), append(c.job, r.JobID)
	c.actions, c.reason = append(c.actions, joinActions(r.AllowedActions)), append(c.reason, r.Reason)
	c.powerTime = append(c.powerTime, r.PowerUpdateTime)
	c.created, c.updated = append(c.created, r.CreatedAt), append(c.updated, r.UpdatedAt)
}

type jobColumns struct {
	id, vm, account, typ, origin, state     []string
	reason, detail, taskState, actions      []*string
	created, updated                        []time.Time
	finished                                []*time.Time
	version                                 []int64
	errorCode                               []*string
	callerAccount, callerKey, callerRequest []*string
}

func (c *jobColumns) add(j *jobChange) {
	c.id, c.vm, c.account = append(c.id, j.ID), append(c.vm, j.VmID), append(c.account, j.Account)
	c.typ, c.origin, c.state = append(c.typ, j.Type), append(c.origin, j.Origin), append(c.state, j.State)
	c.reason, c.detail, c.taskState = append(c.reason, j.Reason), append(c.detail, j.Detail), append(c.taskState, j.TaskState)
	var actions *string
	if j.AllowedActions != nil {
		actions = ptr(joinActions(j.AllowedActions))
	}
	c.actions = append(c.actions, actions)
	c.created, c.updated, c.finished = append(c.created, j.CreatedAt), append(c.updated, j.UpdatedAt), append(c.finished, j.FinishedAt)
	c.version = append(c.version, j.version)
	c.errorCode = append(c.errorCode, j.ErrorCode)
	var account, key, request *string
	if cl := j.Caller; cl != nil {
		account, key, request = &cl.Account, &cl.KeyID, &cl.RequestID
	}
	c.callerAccount, c.callerKey, c.callerRequest = append(c.callerAccount, account), append(c.callerKey, key), append(c.callerRequest, request)
}

// alertColumns are a batch's alerts as sqlAlert's arrays, in log order:
// of an alert raised twice, the insert keeps the first row (the second
// conflicts with it, in the same statement or a later one).
type alertColumns struct {
	id, kind, vm, host, account, job, message, zone []string
	at                                              []time.Time
	version                                         []int64
}

// add takes one alert's row, sqlAlert's columns in order.
func (c *alertColumns) add(a []any) {
	c.id, c.kind, c.vm, c.host = append(c.id, a[0].(string)), append(c.kind, a[1].(string)), append(c.vm, a[2].(string)), append(c.host, a[3].(string))
	c.account, c.job, c.message = append(c.account, a[4].(string)), append(c.job, a[5].(string)), append(c.message, a[6].(string))
	c.at, c.version, c.zone = append(c.at, a[7].(time.Time)), append(c.version, a[8].(int64)), append(c.zone, a[9].(string))
}
