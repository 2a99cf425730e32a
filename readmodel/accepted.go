package readmodel

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Kinds of accepted resources.
const (
	AcceptedVM    = "vm"
	AcceptedJob   = "job"
	AcceptedLease = "lease"
)

// AcceptedRow is a resource a gateway handed out in a 202 before the
// projector has it: its kind (AcceptedVM, AcceptedJob, AcceptedLease), id,
// owning account, and Body, its first state as the gateway encodes it
// (JSON).
type AcceptedRow struct {
	Kind, ID, Account string
	Body              []byte
	At                time.Time
}

// Accepted is the Postgres store of accepted resources (accepted_resources,
// migration 0011), shared by every gateway instance and durable across
// their restarts. The gateways write it; the projector deletes a row in
// the transaction that writes the resource's own row, so that a lookup
// that finds neither row finds no resource.
type Accepted struct {
	pool *pgxpool.Pool
}

// NewAccepted returns the store on dsn's database (migrated by
// projectors/postgres.Migrate).
//
// Its commits do not wait for the WAL flush: every POST writes a row
// before its command goes to the log, and a flush per request put a disk
// sync on each action's path. A row only answers lookups until the
// projector has the resource; one lost by a crash of the Postgres server
// (not of a gateway) leaves a 202's id unknown until the projector reads
// its command from the log, which keeps it.
func NewAccepted(ctx context.Context, dsn string) (*Accepted, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("accepted resources pool: %w", err)
	}
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("accepted resources pool: %w", err)
	}
	return &Accepted{pool: pool}, nil
}

// Close closes the pool.
func (s *Accepted) Close() { s.pool.Close() }

// Put records rows in one statement. A row already there is kept: its id
// was handed out first.
func (s *Accepted) Put(ctx context.Context, rows ...AcceptedRow) error {
	if len(rows) == 0 {
		return nil
	}
	kinds, ids, accounts := make([]string, len(rows)), make([]string, len(rows)), make([]string, len(rows))
	bodies, ats := make([][]byte, len(rows)), make([]time.Time, len(rows))
	for i, r := range rows {
		kinds[i], ids[i], accounts[i], bodies[i], ats[i] = r.Kind, r.ID, r.Account, r.Body, r.At
	}
	_, err := s.pool.Exec(ctx, `
INSERT INTO accepted_resources (kind, id, account, body, accepted_at)
SELECT kind, id, account, body, at FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[], $5::timestamptz[])
	AS u(kind, id, account, body, at)
ON CONFLICT (kind, id) DO NOTHING`, kinds, ids, accounts, bodies, ats)
	if err != nil {
		return fmt.Errorf("record accepted resources: %w", err)
	}
	return nil
}

// Get returns the accepted resource of kind and id, or ErrNotFound: never
// accepted, or projected since.
func (s *Accepted) Get(ctx context.Context, kind, id string) (AcceptedRow, error) {
	r := AcceptedRow{Kind: kind, ID: id}
	err := s.pool.QueryRow(ctx, `SELECT account, body, accepted_at FROM accepted_resources WHERE kind = $1 AND id = $2`,
		kind, id).Scan(&r.Account, &r.Body, &r.At)
	if errors.Is(err, pgx.ErrNoRows) {
		return AcceptedRow{}, ErrNotFound
	}
	if err != nil {
		return AcceptedRow{}, fmt.Errorf("read accepted %s %s: %w", kind, id, err)
	}
	return r, nil
}

// Sweep deletes the rows older than ttl: their commands never reached the
// log, or the projector is more than ttl behind.
func (s *Accepted) Sweep(ctx context.Context, now time.Time, ttl time.Duration) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM accepted_resources WHERE accepted_at < $1`, now.Add(-ttl)); err != nil {
		return fmt.Errorf("sweep accepted resources: %w", err)
	}
	return nil
}
