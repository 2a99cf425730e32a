package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/vmplane/vmplane/projectors/postgres"
)

// Roles of an API key.
const (
	RoleAdmin = "admin"
	RoleUser  = "user"
)

// principal is who a request acts as.
type principal struct {
	KeyID   string
	Account string
	Role    string
}

func (p principal) admin() bool { return p.Role == RoleAdmin }

// scope is the account filter of the read model: "" (every account) for an
// admin, the key's account for a user.
func (p principal) scope() string {
	if p.admin() {
		return ""
	}
	return p.Account
}

// owns says whether p may see a row of account. A user asking for another
// account's row gets a 404, never a 403, so ids of others cannot be probed.
func (p principal) owns(account string) bool { return p.admin() || p.Account == account }

type principalKey struct{}

func principalOf(ctx context.Context) principal {
	p, _ := ctx.Value(principalKey{}).(principal)
	return p
}

// authenticate checks the Bearer API key against the read model's api_keys.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		p, err := s.principal(r)
		if err != nil {
			return err
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
		return nil
	})
}

func (s *Server) principal(r *http.Request) (principal, error) {
	unauthorized := func(msg string) (principal, error) {
		return principal{}, errorf(http.StatusUnauthorized, codeUnauthorized, "%s", msg)
	}
	scheme, key, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return unauthorized("missing Authorization: Bearer <api key>")
	}
	keyID, ok := ParseAPIKey(strings.TrimSpace(key))
	if !ok {
		return unauthorized("malformed API key")
	}
	row, err := s.keys.get(r.Context(), keyID, s.now(), s.rm.APIKey)
	if errors.Is(err, postgres.ErrNotFound) {
		return unauthorized("invalid API key")
	}
	if err != nil {
		return principal{}, fmt.Errorf("read api key %s: %w", keyID, err)
	}
	// The same answer for an unknown key and a wrong secret.
	if !hashMatches(strings.TrimSpace(key), row.Hash) {
		return unauthorized("invalid API key")
	}
	if row.Revoked {
		return unauthorized("API key revoked")
	}
	if row.ExpiresAt != nil && !s.now().Before(*row.ExpiresAt) {
		return unauthorized("API key expired")
	}
	if row.Role != RoleAdmin && row.Role != RoleUser {
		return principal{}, errorf(http.StatusForbidden, codeForbidden, "API key has no known role")
	}
	return principal{KeyID: keyID, Account: row.AccountID, Role: row.Role}, nil
}

// adminOnly answers 403 to a user key.
func (s *Server) adminOnly(h func(http.ResponseWriter, *http.Request) error) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		if !principalOf(r.Context()).admin() {
			return errorf(http.StatusForbidden, codeForbidden, "admin role required")
		}
		return h(w, r)
	}
}
