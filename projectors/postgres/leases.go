package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vmplane/vmplane/schemas"
)

// Lease is a row of the leases read model with its reservations.
type Lease struct {
	ID, ZoneID, Project, Name, Status string
	Degraded                          bool
	Start, End                        time.Time
	Reason                            string
	Reservations                      []LeaseReservation
	CreatedAt, UpdatedAt              time.Time
	Version                           int64
}

// LeaseReservation is a row of lease_reservations.
type LeaseReservation struct {
	ID, Status         string
	MinHosts, MaxHosts int32
	HostProperties     map[string]string
	Hosts              []string
	MissingResources   bool
	ResourcesChanged   bool
}

// LeaseEvent is one notification of a lease (lease_events).
type LeaseEvent struct {
	Seq       string // zone_id/version: the cursor of the list
	LeaseID   string
	Event     string
	Status    string
	Degraded  bool
	HostID    string
	Detail    string
	CommandID string
	At        time.Time
}

// LeaseReader is what the gateway reads about leases. Project "" lists
// every project (admin).
type LeaseReader interface {
	Lease(ctx context.Context, id string) (Lease, error)
	Leases(ctx context.Context, project string, p Page) ([]Lease, error)
	LeaseEvents(ctx context.Context, leaseID string, p Page) ([]LeaseEvent, error)
}

var _ LeaseReader = (*Reader)(nil)

// A notification with no status is a command's answer about a lease the
// zone does not have: an event row, never a lease row.
const sqlLease = `
INSERT INTO leases (id, zone_id, project, name, status, degraded, start_at, end_at, reason, created_at, updated_at, version)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10, $11)
ON CONFLICT (id) DO UPDATE SET zone_id = excluded.zone_id, project = excluded.project, name = excluded.name,
	status = excluded.status, degraded = excluded.degraded, start_at = excluded.start_at, end_at = excluded.end_at,
	reason = excluded.reason, updated_at = excluded.updated_at, version = excluded.version
WHERE leases.version < excluded.version`

const sqlLeaseReservation = `
INSERT INTO lease_reservations (id, lease_id, idx, status, min_hosts, max_hosts, host_properties, hosts,
	missing_resources, resources_changed, version)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
ON CONFLICT (id) DO UPDATE SET status = excluded.status, min_hosts = excluded.min_hosts,
	max_hosts = excluded.max_hosts, host_properties = excluded.host_properties, hosts = excluded.hosts,
	missing_resources = excluded.missing_resources, resources_changed = excluded.resources_changed,
	version = excluded.version
WHERE lease_reservations.version < excluded.version`

const sqlLeaseEvent = `
INSERT INTO lease_events (zone_id, version, lease_id, project, event, status, degraded, host_id, detail, command_id,
	reservations, at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
ON CONFLICT (zone_id, version, lease_id) DO NOTHING`

// leaseStmts folds one lease.events.v1 record into statements. Versions are
// offsets of the zone's one partition, so they order a zone's records.
func leaseStmts(v any, offset int64, ts time.Time) []stmt {
	switch v := v.(type) {
	case *schemas.LeaseStatusChanged:
		at := ms(v.At, ts)
		rs, _ := json.Marshal(v.Reservations)
		out := []stmt{{sqlLeaseEvent, []any{v.ZoneID, offset, v.LeaseID, v.Project, v.Event, v.Status, v.Degraded, "",
			v.Detail, v.CommandID, rs, at}}}
		if v.Status == "" {
			return out
		}
		out = append(out, stmt{sqlLease, []any{v.LeaseID, v.ZoneID, v.Project, v.Name, v.Status, v.Degraded,
			ms(v.Start, ts), ms(v.End, ts), v.Reason, at, offset}})
		for i, r := range v.Reservations {
			props, _ := json.Marshal(nonNilMap(r.HostProperties))
			out = append(out, stmt{sqlLeaseReservation, []any{r.ID, v.LeaseID, i, r.Status, r.MinHosts, r.MaxHosts,
				props, nonNil(r.Hosts), r.MissingResources, r.ResourcesChanged, offset}})
		}
		return out
	case *schemas.LeaseHostChanged:
		at := ms(v.At, ts)
		event := "host_unreservable"
		if v.Reservable {
			event = "host_reservable"
		}
		detail := fmt.Sprintf("host %s is %s/%s", v.HostID, v.Status, v.ResourceState)
		if v.Reason != "" {
			detail += ": " + v.Reason
		}
		leases := v.Leases
		if len(leases) == 0 {
			leases = []string{""}
		}
		var out []stmt
		for _, id := range leases {
			out = append(out, stmt{sqlLeaseEvent, []any{v.ZoneID, offset, id, "", event, "", false, v.HostID, detail, "",
				[]byte("[]"), at}})
		}
		return out
	}
	return nil
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

const leaseColumnsSQL = `id, zone_id, project, name, status, degraded, start_at, end_at, reason, created_at, updated_at, version`

func scanLease(row pgx.Row) (Lease, error) {
	var l Lease
	err := row.Scan(&l.ID, &l.ZoneID, &l.Project, &l.Name, &l.Status, &l.Degraded, &l.Start, &l.End, &l.Reason,
		&l.CreatedAt, &l.UpdatedAt, &l.Version)
	return l, err
}

// Lease returns one lease with its reservations.
func (r *Reader) Lease(ctx context.Context, id string) (Lease, error) {
	l, err := scanLease(r.pool.QueryRow(ctx, `SELECT `+leaseColumnsSQL+` FROM leases WHERE id = $1`, id))
	if err != nil {
		return l, one("lease "+id, err)
	}
	ls := []Lease{l}
	if err := r.fillReservations(ctx, ls); err != nil {
		return Lease{}, err
	}
	return ls[0], nil
}

// Leases lists leases by id after p.After; project "" lists every project.
func (r *Reader) Leases(ctx context.Context, project string, p Page) ([]Lease, error) {
	rows, err := r.pool.Query(ctx, `SELECT `+leaseColumnsSQL+` FROM leases
		WHERE id > $1 AND ($2 = '' OR project = $2) ORDER BY id LIMIT $3`, p.After, project, limitOf(p))
	if err != nil {
		return nil, fmt.Errorf("list leases: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Lease, error) { return scanLease(row) })
	if err != nil {
		return nil, fmt.Errorf("list leases: %w", err)
	}
	if err := r.fillReservations(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

func (r *Reader) fillReservations(ctx context.Context, ls []Lease) error {
	if len(ls) == 0 {
		return nil
	}
	ids := make([]string, len(ls))
	at := map[string]int{}
	for i, l := range ls {
		ids[i], at[l.ID] = l.ID, i
	}
	rows, err := r.pool.Query(ctx, `SELECT lease_id, id, status, min_hosts, max_hosts, host_properties, hosts,
		missing_resources, resources_changed FROM lease_reservations WHERE lease_id = ANY($1) ORDER BY lease_id, idx`, ids)
	if err != nil {
		return fmt.Errorf("read lease reservations: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var lid string
		var res LeaseReservation
		if err := rows.Scan(&lid, &res.ID, &res.Status, &res.MinHosts, &res.MaxHosts, &res.HostProperties, &res.Hosts,
			&res.MissingResources, &res.ResourcesChanged); err != nil {
			return fmt.Errorf("read lease reservations: %w", err)
		}
		ls[at[lid]].Reservations = append(ls[at[lid]].Reservations, res)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read lease reservations: %w", err)
	}
	return nil
}

// LeaseEvents lists a lease's notifications in log order; p.After is the
// Seq of the last one seen.
func (r *Reader) LeaseEvents(ctx context.Context, leaseID string, p Page) ([]LeaseEvent, error) {
	var after int64 = -1
	if p.After != "" {
		n, err := strconv.ParseInt(p.After, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("lease events cursor %q: %w", p.After, err)
		}
		after = n
	}
	rows, err := r.pool.Query(ctx, `SELECT version, lease_id, event, status, degraded, host_id, detail, command_id, at
		FROM lease_events WHERE lease_id = $1 AND version > $2 ORDER BY version LIMIT $3`, leaseID, after, limitOf(p))
	if err != nil {
		return nil, fmt.Errorf("list lease events %s: %w", leaseID, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (LeaseEvent, error) {
		var e LeaseEvent
		var v int64
		err := row.Scan(&v, &e.LeaseID, &e.Event, &e.Status, &e.Degraded, &e.HostID, &e.Detail, &e.CommandID, &e.At)
		e.Seq = strconv.FormatInt(v, 10)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("list lease events %s: %w", leaseID, err)
	}
	return out, nil
}
