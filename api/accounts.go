package api

import "time"

// Account is the JSON of an account.
type Account struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at,omitzero"`
}

// APIKey is the JSON of an API key. Key is set only in the answer to its
// creation. A retry of that creation with the same Idempotency-Key answers
// the same key without Key, and Note says why: the key is shown once and
// kept nowhere, so a client that lost it revokes the key and issues another.
type APIKey struct {
	ID        string     `json:"id"`
	Account   string     `json:"account"`
	Role      string     `json:"role"`
	ExpiresAt *time.Time `json:"expires_at"`
	Revoked   bool       `json:"revoked"`
	CreatedAt time.Time  `json:"created_at,omitzero"`
	Key       string     `json:"key,omitempty"`
	Note      string     `json:"note,omitempty"`
}

// AccountRequest is the body of POST /v1/accounts.
type AccountRequest struct {
	ID   string `json:"id" required:"true"`
	Name string `json:"name,omitempty"`
}

// KeyRequest is the body of POST /v1/accounts/{id}/keys: the role (user
// unless said) and an optional expiry, as a duration from now or a time.
type KeyRequest struct {
	Role      string `json:"role,omitempty"`
	ExpiresIn string `json:"expires_in,omitempty"`
	ExpiresAt string `json:"expires_at,omitempty"`
}
