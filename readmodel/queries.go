package readmodel

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Reader reads the read models over a connection pool.
type Reader struct {
	pool *pgxpool.Pool
}

// DefaultPageLimit and MaxPageLimit bound Page.Limit.
const (
	DefaultPageLimit = 100
	MaxPageLimit     = 1000
)

// NewReader opens a pool on dsn and checks that the database answers. It
// does not migrate: call projectors/postgres.Migrate first.
func NewReader(ctx context.Context, dsn string) (*Reader, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("reader pool: %w", err)
	}
	// Every connection the pool may use is opened up front and kept: a
	// burst of requests then finds them ready, where opening one (a new
	// server process, its caches, the statements prepared again) under
	// load held the burst up by tens of milliseconds.
	cfg.MinConns = cfg.MaxConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("reader pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("reader ping: %w", err)
	}
	return &Reader{pool: pool}, nil
}

// Close closes the pool.
func (r *Reader) Close() { r.pool.Close() }

// Ready reports whether the database answers.
func (r *Reader) Ready(ctx context.Context) error {
	if err := r.pool.Ping(ctx); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	return nil
}

func limitOf(p Page) int {
	switch {
	case p.Limit <= 0:
		return DefaultPageLimit
	case p.Limit > MaxPageLimit:
		return MaxPageLimit
	}
	return p.Limit
}

const vmColumnsSQL = `v.id, v.name, v.account, v.zone_id, v.offering, v.offering_id, v.cpu, v.memory_mb, v.vm_state,
	v.task_state, v.power_state, v.legacy_state, v.host_id, v.allowed_actions, v.ha, v.job_id, v.epoch, v.version,
	v.created_at, v.updated_at, coalesce(h.status, ''), greatest(v.power_state_update_time, h.last_ping_at)`

// vmFromSQL joins each VM with its host's status: the power state of a VM
// whose host is not Up is only what was last seen.
const vmFromSQL = ` FROM vms v LEFT JOIN hosts h ON h.id = v.host_id AND v.host_id <> ''`

func scanVM(row pgx.Row) (VM, error) {
	var v VM
	err := row.Scan(&v.ID, &v.Name, &v.Account, &v.ZoneID, &v.Offering, &v.OfferingID, &v.CPU, &v.MemoryMB,
		&v.VmState, &v.TaskState, &v.PowerState, &v.LegacyState, &v.HostID, &v.AllowedActions, &v.HA, &v.JobID,
		&v.Epoch, &v.Version, &v.CreatedAt, &v.UpdatedAt, &v.HostStatus, &v.PowerSeenAt)
	return v, err
}

// VM returns one VM.
func (r *Reader) VM(ctx context.Context, id string) (VM, error) {
	v, err := scanVM(r.pool.QueryRow(ctx, `SELECT `+vmColumnsSQL+vmFromSQL+` WHERE v.id = $1`, id))
	return v, one("vm "+id, err)
}

// FilterVMs lists VMs by id after p.After, narrowed by account, vm_state
// and host where set.
func (r *Reader) FilterVMs(ctx context.Context, f VMFilter, p Page) ([]VM, error) {
	rows, err := r.pool.Query(ctx, `SELECT `+vmColumnsSQL+vmFromSQL+`
		WHERE v.id > $1 AND ($2 = '' OR v.account = $2) AND ($3 = '' OR v.vm_state = $3) AND ($4 = '' OR v.host_id = $4)
		ORDER BY v.id LIMIT $5`, p.After, f.Account, f.VmState, f.HostID, limitOf(p))
	if err != nil {
		return nil, fmt.Errorf("filter vms: %w", err)
	}
	return collect(rows, scanVM, "filter vms")
}

const jobColumnsSQL = `id, vm_id, account, type, state, reason, detail, task_state, origin, allowed_actions,
	created_at, updated_at, finished_at, error_code, caller_account, caller_key_id, caller_request_id`

func scanJob(row pgx.Row) (Job, error) {
	var j Job
	err := row.Scan(&j.ID, &j.VmID, &j.Account, &j.Type, &j.State, &j.Reason, &j.Detail, &j.TaskState, &j.Origin,
		&j.AllowedActions, &j.CreatedAt, &j.UpdatedAt, &j.FinishedAt, &j.ErrorCode, &j.CallerAccount, &j.CallerKeyID,
		&j.CallerRequestID)
	return j, err
}

// Job returns one job.
func (r *Reader) Job(ctx context.Context, id string) (Job, error) {
	j, err := scanJob(r.pool.QueryRow(ctx, `SELECT `+jobColumnsSQL+` FROM jobs WHERE id = $1`, id))
	return j, one("job "+id, err)
}

// Jobs lists jobs by id, filtered by f's fields that are not "". The key
// filter has no index of its own (migration 0012): within an account it
// reads that account's jobs, across accounts it walks jobs by id until the
// page is full.
func (r *Reader) Jobs(ctx context.Context, f JobFilter, p Page) ([]Job, error) {
	rows, err := r.pool.Query(ctx, `SELECT `+jobColumnsSQL+` FROM jobs
		WHERE id > $1 AND ($2 = '' OR account = $2) AND ($3 = '' OR vm_id = $3) AND ($4 = '' OR state = $4)
			AND ($6 = '' OR caller_key_id = $6)
		ORDER BY id LIMIT $5`, p.After, f.Account, f.VmID, f.State, limitOf(p), f.KeyID)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return collect(rows, scanJob, "list jobs")
}

// JobSteps returns a job's steps in order; none for an unknown job.
func (r *Reader) JobSteps(ctx context.Context, jobID string) ([]JobStep, error) {
	rows, err := r.pool.Query(ctx, `SELECT job_id, seq, task_state, step, text, obj, at FROM job_steps
		WHERE job_id = $1 ORDER BY seq`, jobID)
	if err != nil {
		return nil, fmt.Errorf("job steps of %s: %w", jobID, err)
	}
	return collect(rows, scanStep, "job steps of "+jobID)
}

func scanStep(row pgx.Row) (JobStep, error) {
	var s JobStep
	err := row.Scan(&s.JobID, &s.Seq, &s.TaskState, &s.Step, &s.Text, &s.Obj, &s.At)
	return s, err
}

// JobsByID returns the jobs of ids the read model has, by id.
func (r *Reader) JobsByID(ctx context.Context, ids []string) ([]Job, error) {
	rows, err := r.pool.Query(ctx, `SELECT `+jobColumnsSQL+` FROM jobs WHERE id = ANY($1) ORDER BY id`, ids)
	if err != nil {
		return nil, fmt.Errorf("jobs by id: %w", err)
	}
	return collect(rows, scanJob, "jobs by id")
}

// hostColumnsSQL counts a host's VMs from vms (indexed by host_id): the
// VMs the host runs or last ran, until they are deleted.
const hostColumnsSQL = `id, name, zone_id, pod_id, cluster_id, hypervisor, status, resource_state, reservable,
	cpu, memory_mb, used_cpu, used_memory_mb, cpu_overcommit, mem_overcommit, last_ping_at, updated_at, tags,
	(SELECT count(*) FROM vms WHERE vms.host_id = hosts.id AND vms.vm_state NOT IN ('Deleted', 'Expunged'))`

func scanHost(row pgx.Row) (Host, error) {
	var h Host
	err := row.Scan(&h.ID, &h.Name, &h.ZoneID, &h.PodID, &h.ClusterID, &h.Hypervisor, &h.Status, &h.ResourceState,
		&h.Reservable, &h.CPU, &h.MemoryMB, &h.UsedCPU, &h.UsedMemoryMB, &h.CPUOvercommit, &h.MemOvercommit,
		&h.LastPingAt, &h.UpdatedAt, &h.Tags, &h.VMCount)
	return h, err
}

// Host returns one host.
func (r *Reader) Host(ctx context.Context, id string) (Host, error) {
	h, err := scanHost(r.pool.QueryRow(ctx, `SELECT `+hostColumnsSQL+` FROM hosts WHERE id = $1`, id))
	return h, one("host "+id, err)
}

// Hosts lists hosts by id.
func (r *Reader) Hosts(ctx context.Context, p Page) ([]Host, error) {
	rows, err := r.pool.Query(ctx, `SELECT `+hostColumnsSQL+` FROM hosts WHERE id > $1 ORDER BY id LIMIT $2`,
		p.After, limitOf(p))
	if err != nil {
		return nil, fmt.Errorf("list hosts: %w", err)
	}
	return collect(rows, scanHost, "list hosts")
}

const offeringColumnsSQL = `id, name, cpu, memory_mb, ha, deployment_planner, host_tags, created_at, planner_mode, storage_tags`

func scanOffering(row pgx.Row) (Offering, error) {
	var o Offering
	err := row.Scan(&o.ID, &o.Name, &o.CPU, &o.MemoryMB, &o.HA, &o.DeploymentPlanner, &o.HostTags, &o.CreatedAt, &o.PlannerMode, &o.StorageTags)
	return o, err
}

// Offering returns the offering with this id or, failing that, this name.
func (r *Reader) Offering(ctx context.Context, idOrName string) (Offering, error) {
	o, err := scanOffering(r.pool.QueryRow(ctx, `SELECT `+offeringColumnsSQL+` FROM offerings
		WHERE id = $1 OR name = $1 ORDER BY id = $1 DESC, id LIMIT 1`, idOrName))
	return o, one("offering "+idOrName, err)
}

// Offerings lists every offering by name.
func (r *Reader) Offerings(ctx context.Context) ([]Offering, error) {
	rows, err := r.pool.Query(ctx, `SELECT `+offeringColumnsSQL+` FROM offerings ORDER BY name, id`)
	if err != nil {
		return nil, fmt.Errorf("list offerings: %w", err)
	}
	return collect(rows, scanOffering, "list offerings")
}

// APIKey returns one API key, revoked or not: the caller decides.
func (r *Reader) APIKey(ctx context.Context, keyID string) (APIKey, error) {
	var k APIKey
	err := r.pool.QueryRow(ctx, `SELECT key_id, account_id, role, hash, expires_at, revoked FROM api_keys
		WHERE key_id = $1`, keyID).Scan(&k.KeyID, &k.AccountID, &k.Role, &k.Hash, &k.ExpiresAt, &k.Revoked)
	return k, one("api key "+keyID, err)
}

func one(what string, err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", what, err)
	}
	return nil
}

func collect[T any](rows pgx.Rows, scan func(pgx.Row) (T, error), what string) ([]T, error) {
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}
