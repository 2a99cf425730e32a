package readmodel

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Account is a row of the accounts read model.
type Account struct {
	ID        string
	Name      string
	CreatedAt time.Time
}

// APIKeyInfo is an API key as listed to an admin: never its hash.
type APIKeyInfo struct {
	KeyID     string
	AccountID string
	Role      string
	ExpiresAt *time.Time
	Revoked   bool
	CreatedAt time.Time
}

// Account returns one account.
func (r *Reader) Account(ctx context.Context, id string) (Account, error) {
	var a Account
	err := r.pool.QueryRow(ctx, `SELECT id, name, created_at FROM accounts WHERE id = $1`, id).Scan(&a.ID, &a.Name, &a.CreatedAt)
	return a, one("account "+id, err)
}

// Accounts lists accounts by id, after p.After.
func (r *Reader) Accounts(ctx context.Context, p Page) ([]Account, error) {
	rows, err := r.pool.Query(ctx, `SELECT id, name, created_at FROM accounts WHERE id > $1 ORDER BY id LIMIT $2`, p.After, limitOf(p))
	if err != nil {
		return nil, fmt.Errorf("list accounts: %w", err)
	}
	return collect(rows, func(row pgx.Row) (Account, error) {
		var a Account
		err := row.Scan(&a.ID, &a.Name, &a.CreatedAt)
		return a, err
	}, "list accounts")
}

// APIKeys lists the keys of account by key id, after p.After.
func (r *Reader) APIKeys(ctx context.Context, account string, p Page) ([]APIKeyInfo, error) {
	rows, err := r.pool.Query(ctx, `SELECT key_id, account_id, role, expires_at, revoked, created_at FROM api_keys
		WHERE account_id = $1 AND key_id > $2 ORDER BY key_id LIMIT $3`, account, p.After, limitOf(p))
	if err != nil {
		return nil, fmt.Errorf("list api keys of %s: %w", account, err)
	}
	return collect(rows, func(row pgx.Row) (APIKeyInfo, error) {
		var k APIKeyInfo
		err := row.Scan(&k.KeyID, &k.AccountID, &k.Role, &k.ExpiresAt, &k.Revoked, &k.CreatedAt)
		return k, err
	}, "list api keys")
}
