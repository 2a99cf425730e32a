package gatewaytest

import (
	"context"
	"time"

	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

var _ gateway.AccountReader = (*ReadModel)(nil)

// PutAccount stores an account.
func (m *ReadModel) PutAccount(a readmodel.Account) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.accounts == nil {
		m.accounts = map[string]readmodel.Account{}
	}
	m.accounts[a.ID] = a
}

// ProjectAccounts plays the projector for accounts.v1: set it as a
// Recorder's OnPublish so that accounts and keys the gateway issues take
// effect.
func (m *ReadModel) ProjectAccounts(rec schemas.Record) {
	switch v := rec.Value.(type) {
	case *schemas.AccountCreated:
		m.PutAccount(readmodel.Account{ID: v.AccountID, Name: v.Name, CreatedAt: time.UnixMilli(v.At)})
	case *schemas.ApiKeyIssued:
		k := readmodel.APIKey{KeyID: v.KeyID, AccountID: v.AccountID, Role: v.Role, Hash: v.Hash}
		if v.ExpiresAt != 0 {
			t := time.UnixMilli(v.ExpiresAt)
			k.ExpiresAt = &t
		}
		m.PutAPIKey(k)
	case *schemas.ApiKeyRevoked:
		m.mu.Lock()
		if k, ok := m.keys[v.KeyID]; ok {
			k.Revoked = true
			m.keys[v.KeyID] = k
		}
		m.mu.Unlock()
	}
}

// Account returns the account id, or readmodel.ErrNotFound.
func (m *ReadModel) Account(_ context.Context, id string) (readmodel.Account, error) {
	if err := TextError(id); err != nil {
		return readmodel.Account{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.accounts[id]
	if !ok {
		return readmodel.Account{}, readmodel.ErrNotFound
	}
	return a, nil
}

// Accounts lists a page of the accounts, by id.
func (m *ReadModel) Accounts(_ context.Context, p readmodel.Page) ([]readmodel.Account, error) {
	if err := TextError(p.After); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return page(m.accounts, p, func(readmodel.Account) bool { return true }), nil
}

// APIKeys lists a page of an account's keys, by id, without their hashes.
func (m *ReadModel) APIKeys(_ context.Context, account string, p readmodel.Page) ([]readmodel.APIKeyInfo, error) {
	if err := TextError(account, p.After); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	keys := page(m.keys, p, func(k readmodel.APIKey) bool { return k.AccountID == account })
	out := make([]readmodel.APIKeyInfo, len(keys))
	for i, k := range keys {
		out[i] = readmodel.APIKeyInfo{KeyID: k.KeyID, AccountID: k.AccountID, Role: k.Role, ExpiresAt: k.ExpiresAt, Revoked: k.Revoked}
	}
	return out, nil
}
