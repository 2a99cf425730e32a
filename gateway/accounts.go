package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

// Accounts and their API keys. An admin creates accounts and issues and
// revokes keys; a user may read its own account and list its keys. Keys are
// written to accounts.v1 as a hash only; the key itself is in the response
// to its creation and nowhere else.

// secretShownOnce is the Note of a replayed key creation.
const secretShownOnce = "replayed answer (Idempotency-Key): the key itself is shown only in the first answer and is not kept; if it was lost, revoke this key and issue another"

// withoutSecret is what the idempotency store keeps of the answer to a
// key's creation: the key's id and attributes, never the key.
func withoutSecret(body []byte) []byte {
	var k api.APIKey
	if err := json.Unmarshal(body, &k); err != nil {
		// Not the answer this route writes: keep nothing of it.
		return mustJSON(api.APIKey{Note: secretShownOnce})
	}
	k.Key, k.Note = "", secretShownOnce
	return mustJSON(k)
}

// minKeyLife is the shortest life a key may be issued with: one that ends
// before a client can use it is a mistake.
const minKeyLife = time.Minute

// projectionWait bounds how long account writes wait to be readable, so
// that a key works on the request after the one that issued it.
const projectionWait = 10 * time.Second

func (s *Server) accounts() (AccountReader, error) {
	ar, ok := s.rm.(AccountReader)
	if !ok {
		return nil, errorf(http.StatusServiceUnavailable, codeUnavailable, "this gateway's read model holds no accounts")
	}
	return ar, nil
}

func fieldError(field, format string, args ...any) *apiError {
	e := errorf(http.StatusUnprocessableEntity, codeValidation, format, args...)
	e.Details = map[string]any{"field": field}
	return e
}

// parseAccount decodes and validates a POST /v1/accounts body.
func parseAccount(body []byte) (api.AccountRequest, error) {
	var req api.AccountRequest
	if err := decodeStrict(body, &req); err != nil {
		return req, err
	}
	if !validName(req.ID) {
		return req, fieldError("id", "field \"id\" must be 1 to %d characters of a-z, 0-9 and -", maxNameLen)
	}
	if len(req.Name) > 255 {
		return req, fieldError("name", "field \"name\" is longer than 255 characters")
	}
	if req.Name == "" {
		req.Name = req.ID
	}
	return req, nil
}

// parseKey decodes and validates a POST /v1/accounts/{id}/keys body.
func parseKey(body []byte, now time.Time) (role string, expires *time.Time, err error) {
	var req api.KeyRequest
	if len(body) > 0 {
		if err := decodeStrict(body, &req); err != nil {
			return "", nil, err
		}
	}
	role = req.Role
	if role == "" {
		role = RoleUser
	}
	if role != RoleUser && role != RoleAdmin {
		return "", nil, fieldError("role", "field \"role\" must be \"user\" or \"admin\", not %q", req.Role)
	}
	switch {
	case req.ExpiresIn != "" && req.ExpiresAt != "":
		return "", nil, fieldError("expires_in", "give \"expires_in\" or \"expires_at\", not both")
	case req.ExpiresIn != "":
		d, err := time.ParseDuration(req.ExpiresIn)
		if err != nil || d < minKeyLife {
			return "", nil, fieldError("expires_in", "field \"expires_in\" must be a duration of at least %v such as 720h, not %q", minKeyLife, req.ExpiresIn)
		}
		t := now.Add(d).UTC().Truncate(time.Millisecond)
		expires = &t
	case req.ExpiresAt != "":
		t, err := time.Parse(time.RFC3339, req.ExpiresAt)
		if err != nil || t.Before(now.Add(minKeyLife)) {
			return "", nil, fieldError("expires_at", "field \"expires_at\" must be an RFC 3339 time at least %v from now, not %q", minKeyLife, req.ExpiresAt)
		}
		t = t.UTC().Truncate(time.Millisecond)
		expires = &t
	}
	return role, expires, nil
}

// createAccount is POST /v1/accounts (admin).
func (s *Server) createAccount(w http.ResponseWriter, r *http.Request) error {
	ar, err := s.accounts()
	if err != nil {
		return err
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	req, err := parseAccount(body)
	if err != nil {
		return err
	}
	ctx := r.Context()
	if _, err := ar.Account(ctx, req.ID); err == nil {
		e := errorf(http.StatusConflict, codeConflict, "account %s already exists", req.ID)
		e.Details = map[string]any{"field": "id"}
		return e
	} else if !errors.Is(err, readmodel.ErrNotFound) {
		return fmt.Errorf("read account %s: %w", req.ID, err)
	}
	now := s.now().UTC()
	if err := s.publish(ctx, schemas.Record{Topic: schemas.TopicAccounts, Key: req.ID,
		Value: &schemas.AccountCreated{AccountID: req.ID, Name: req.Name, At: now.UnixMilli(), Caller: commandCaller(ctx)}}); err != nil {
		return err
	}
	out := api.Account{ID: req.ID, Name: req.Name, CreatedAt: now}
	w.Header().Set("Location", "/v1/accounts/"+req.ID)
	status := http.StatusCreated
	if !s.awaitProjection(ctx, func(ctx context.Context) bool { _, err := ar.Account(ctx, req.ID); return err == nil }) {
		status = http.StatusAccepted
	}
	writeJSON(w, status, out)
	return nil
}

// listAccounts is GET /v1/accounts (admin).
func (s *Server) listAccounts(w http.ResponseWriter, r *http.Request) error {
	ar, err := s.accounts()
	if err != nil {
		return err
	}
	page, err := pageOf(r)
	if err != nil {
		return err
	}
	rows, err := ar.Accounts(r.Context(), page.ask())
	if err != nil {
		return fmt.Errorf("list accounts: %w", err)
	}
	rows, next := cutPage(page, rows, func(a readmodel.Account) string { return a.ID })
	out := api.List[api.Account]{Items: make([]api.Account, len(rows)), Next: next}
	for i, a := range rows {
		out.Items[i] = api.Account{ID: a.ID, Name: a.Name, CreatedAt: a.CreatedAt.UTC()}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// getAccount is GET /v1/accounts/{id}: an admin any, a user its own.
func (s *Server) getAccount(w http.ResponseWriter, r *http.Request) error {
	a, err := s.visibleAccount(r.Context(), mux.Vars(r)["id"])
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.Account{ID: a.ID, Name: a.Name, CreatedAt: a.CreatedAt.UTC()})
	return nil
}

// visibleAccount reads an account the caller may see; another's is a 404.
func (s *Server) visibleAccount(ctx context.Context, id string) (readmodel.Account, error) {
	ar, err := s.accounts()
	if err != nil {
		return readmodel.Account{}, err
	}
	if !principalOf(ctx).owns(id) {
		return readmodel.Account{}, notFound("account", id)
	}
	a, err := ar.Account(ctx, id)
	if errors.Is(err, readmodel.ErrNotFound) {
		return readmodel.Account{}, notFound("account", id)
	}
	if err != nil {
		return readmodel.Account{}, fmt.Errorf("read account %s: %w", id, err)
	}
	return a, nil
}

// createKey is POST /v1/accounts/{id}/keys (admin): the answer holds the
// key, once.
func (s *Server) createKey(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	acct, err := s.visibleAccount(ctx, mux.Vars(r)["id"])
	if err != nil {
		return err
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	now := s.now().UTC()
	role, expires, err := parseKey(body, now)
	if err != nil {
		return err
	}
	key, keyID, hash, err := NewAPIKey()
	if err != nil {
		return err
	}
	ev := &schemas.ApiKeyIssued{KeyID: keyID, AccountID: acct.ID, Role: role, Hash: hash, At: now.UnixMilli(), Caller: commandCaller(ctx)}
	if expires != nil {
		ev.ExpiresAt = expires.UnixMilli()
	}
	if err := s.publish(ctx, schemas.Record{Topic: schemas.TopicAccounts, Key: acct.ID, Value: ev}); err != nil {
		return err
	}
	status := http.StatusCreated
	if !s.awaitProjection(ctx, func(ctx context.Context) bool { _, err := s.rm.APIKey(ctx, keyID); return err == nil }) {
		status = http.StatusAccepted
	}
	s.keys.forget(keyID)
	w.Header().Set("Location", "/v1/accounts/"+acct.ID+"/keys/"+keyID)
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, status, api.APIKey{ID: keyID, Account: acct.ID, Role: role, ExpiresAt: expires, CreatedAt: now, Key: key})
	return nil
}

// listKeys is GET /v1/accounts/{id}/keys: an admin any account's, a user
// its own account's. Hashes are never shown.
func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	acct, err := s.visibleAccount(ctx, mux.Vars(r)["id"])
	if err != nil {
		return err
	}
	page, err := pageOf(r)
	if err != nil {
		return err
	}
	ar, _ := s.accounts()
	rows, err := ar.APIKeys(ctx, acct.ID, page.ask())
	if err != nil {
		return fmt.Errorf("list keys of %s: %w", acct.ID, err)
	}
	rows, next := cutPage(page, rows, func(k readmodel.APIKeyInfo) string { return k.KeyID })
	out := api.List[api.APIKey]{Items: make([]api.APIKey, len(rows)), Next: next}
	for i, k := range rows {
		out.Items[i] = api.APIKey{ID: k.KeyID, Account: k.AccountID, Role: k.Role, ExpiresAt: utcPtr(k.ExpiresAt), Revoked: k.Revoked, CreatedAt: k.CreatedAt.UTC()}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// getKey is GET /v1/accounts/{id}/keys/{key}: one key, as listKeys shows
// it (an admin any account's, a user its own account's).
func (s *Server) getKey(w http.ResponseWriter, r *http.Request) error {
	k, err := s.routeKey(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.APIKey{ID: k.KeyID, Account: k.AccountID, Role: k.Role, ExpiresAt: utcPtr(k.ExpiresAt), Revoked: k.Revoked})
	return nil
}

// routeKey reads the key {key} of the account {id} of the route, when the
// caller may see the account; another account's key is a 404.
func (s *Server) routeKey(r *http.Request) (readmodel.APIKey, error) {
	ctx, vars := r.Context(), mux.Vars(r)
	acct, err := s.visibleAccount(ctx, vars["id"])
	if err != nil {
		return readmodel.APIKey{}, err
	}
	keyID := vars["key"]
	k, err := s.rm.APIKey(ctx, keyID)
	if errors.Is(err, readmodel.ErrNotFound) || err == nil && k.AccountID != acct.ID {
		return readmodel.APIKey{}, notFound("API key", keyID)
	}
	if err != nil {
		return readmodel.APIKey{}, fmt.Errorf("read api key %s: %w", keyID, err)
	}
	return k, nil
}

// revokeKey is DELETE /v1/accounts/{id}/keys/{key} (admin). It answers 204
// once the key no longer authenticates (or 202 if the projection lags).
func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	k, err := s.routeKey(r)
	if err != nil {
		return err
	}
	if !k.Revoked {
		if err := s.publish(ctx, schemas.Record{Topic: schemas.TopicAccounts, Key: k.AccountID,
			Value: &schemas.ApiKeyRevoked{KeyID: k.KeyID, AccountID: k.AccountID, At: s.now().UnixMilli(), Caller: commandCaller(ctx)}}); err != nil {
			return err
		}
		// This instance refuses the key from now on; the others once their
		// cached row (KeyCacheTTL) is read again.
		s.keys.forget(k.KeyID)
		defer s.keys.forget(k.KeyID)
		if !s.awaitProjection(ctx, func(ctx context.Context) bool { k, err := s.rm.APIKey(ctx, k.KeyID); return err == nil && k.Revoked }) {
			w.WriteHeader(http.StatusAccepted)
			return nil
		}
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// publish writes records other than VM commands (accounts, host commands,
// alert acknowledgements), answering a 503 when the log cannot take them.
func (s *Server) publish(ctx context.Context, recs ...schemas.Record) error {
	if err := s.pub.Publish(ctx, recs...); err != nil {
		s.log.Error("publish", "request_id", requestID(ctx), "err", err)
		return errorf(http.StatusServiceUnavailable, codeUnavailable, "the request could not be written to the log; retry (request %s)", requestID(ctx))
	}
	return nil
}

// awaitProjection polls done until it holds or projectionWait passes.
func (s *Server) awaitProjection(ctx context.Context, done func(context.Context) bool) bool {
	deadline := time.Now().Add(projectionWait)
	for {
		if done(ctx) {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(s.cfg.PollEvery):
		}
	}
}
