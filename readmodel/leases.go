package readmodel

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
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
