package readmodel

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// IdempotentRequest is what an idempotency store holds for one
// (caller, Idempotency-Key): the request's fingerprint and, once the first
// request finished, its response.
type IdempotentRequest struct {
	Fingerprint []byte
	// Token identifies the claim of the request in flight; Complete and
	// Release only act on the claim they hold.
	Token     string
	Status    int // 0 while in flight
	Location  string
	Body      []byte
	ClaimedAt time.Time
}

// Idempotency is the Postgres store of Idempotency-Keys: shared by every
// gateway instance and durable across their restarts.
type Idempotency struct {
	pool *pgxpool.Pool
}

// NewIdempotency returns the store on dsn's database (migrated by
// projectors/postgres.Migrate).
func NewIdempotency(ctx context.Context, dsn string) (*Idempotency, error) {
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("idempotency pool: %w", err)
	}
	return &Idempotency{pool: pool}, nil
}

// Close closes the pool.
func (s *Idempotency) Close() { s.pool.Close() }

// NewToken returns a random claim token.
func NewToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

// Claim inserts the claim, or replaces an expired entry or a stale claim of
// the same request, in one statement: two gateways racing for one key are
// serialized by the primary key. The table's column "account" holds the
// caller (0004_idempotency.sql predates keying by API key).
func (s *Idempotency) Claim(ctx context.Context, caller, key string, fp []byte, now time.Time, ttl, stale time.Duration) (IdempotentRequest, bool, error) {
	token := NewToken()
	var got string
	err := s.pool.QueryRow(ctx, `
INSERT INTO idempotency_keys (account, key, fingerprint, token, claimed_at) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (account, key) DO UPDATE SET fingerprint = excluded.fingerprint, token = excluded.token,
	status = 0, location = '', body = NULL, claimed_at = excluded.claimed_at
WHERE idempotency_keys.claimed_at < $6
   OR (idempotency_keys.status = 0 AND idempotency_keys.claimed_at < $7 AND idempotency_keys.fingerprint = excluded.fingerprint)
RETURNING token`, caller, key, fp, token, now, now.Add(-ttl), now.Add(-stale)).Scan(&got)
	if err == nil {
		return IdempotentRequest{Fingerprint: fp, Token: got, ClaimedAt: now}, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return IdempotentRequest{}, false, fmt.Errorf("claim idempotency key: %w", err)
	}
	var r IdempotentRequest
	err = s.pool.QueryRow(ctx, `SELECT fingerprint, token, status, location, body, claimed_at FROM idempotency_keys
		WHERE account = $1 AND key = $2`, caller, key).Scan(&r.Fingerprint, &r.Token, &r.Status, &r.Location, &r.Body, &r.ClaimedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		// Released between the two statements: claim again.
		return s.Claim(ctx, caller, key, fp, now, ttl, stale)
	}
	if err != nil {
		return IdempotentRequest{}, false, fmt.Errorf("read idempotency key: %w", err)
	}
	return r, false, nil
}

// Complete stores the response of the claim token holds.
func (s *Idempotency) Complete(ctx context.Context, caller, key, token string, status int, location string, body []byte) error {
	_, err := s.pool.Exec(ctx, `UPDATE idempotency_keys SET status = $4, location = $5, body = $6
		WHERE account = $1 AND key = $2 AND token = $3`, caller, key, token, status, location, body)
	if err != nil {
		return fmt.Errorf("complete idempotency key: %w", err)
	}
	return nil
}

// Release forgets the claim token holds, so that a retry does the work.
func (s *Idempotency) Release(ctx context.Context, caller, key, token string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE account = $1 AND key = $2 AND token = $3 AND status = 0`, caller, key, token)
	if err != nil {
		return fmt.Errorf("release idempotency key: %w", err)
	}
	return nil
}

// Sweep deletes entries older than ttl, and those of the time when entries
// were kept per account (a caller without "/"): no request can replay them
// any more, and the answer of a key's creation was then kept with the key.
func (s *Idempotency) Sweep(ctx context.Context, now time.Time, ttl time.Duration) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE claimed_at < $1 OR strpos(account, '/') = 0`, now.Add(-ttl)); err != nil {
		return fmt.Errorf("sweep idempotency keys: %w", err)
	}
	return nil
}
