package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/vmplane/vmplane/internal/telemetry"
	"github.com/vmplane/vmplane/readmodel"
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
// A 401 names the scheme (WWW-Authenticate: Bearer).
func (s *Server) authenticate(next http.Handler) http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		p, err := s.principal(r)
		if err != nil {
			var ae *apiError
			if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="vmplane"`)
			}
			return err
		}
		telemetry.SetKey(r.Context(), p.KeyID) // the request's log lines name the caller's key
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
		return nil
	})
}

// principal finds who r acts as. Each request answered 401 costs a token
// of its client address's bucket; once the bucket is empty, the address's
// requests are answered 429, and those with a key this instance has not
// seen lately are answered so before any read of the read model: made-up
// keys cannot make the gateway read Postgres at will, while keys in use
// behind the same address (a proxy, a NAT) go on working. Valid keys cost
// nothing.
func (s *Server) principal(r *http.Request) (principal, error) {
	now := s.now()
	addr := clientAddress(r)
	unauthorized := func(msg string) (principal, error) {
		if ok, wait := s.anon.take(addr, now); !ok {
			return principal{}, s.tooManyFailures(wait)
		}
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
	if !s.keys.seen(keyID, now) {
		if ok, wait := s.anon.allows(addr, now); !ok {
			return principal{}, s.tooManyFailures(wait)
		}
	}
	row, err := s.keys.get(r.Context(), keyID, now, s.rm.APIKey)
	if errors.Is(err, readmodel.ErrNotFound) {
		return unauthorized("invalid API key")
	}
	if err != nil {
		return principal{}, fmt.Errorf("read api key %s: %w", keyID, err)
	}
	// The same answer for an unknown key and a wrong secret.
	if !hashMatches(strings.TrimSpace(key), row.Hash) {
		return unauthorized("invalid API key")
	}
	if msg, ok := keyUsable(row, now); !ok {
		return unauthorized(msg)
	}
	if row.Role != RoleAdmin && row.Role != RoleUser {
		return principal{}, errorf(http.StatusForbidden, codeForbidden, "API key has no known role")
	}
	return principal{KeyID: keyID, Account: row.AccountID, Role: row.Role}, nil
}

// keyUsable says whether a key's row still lets it in at now, and if not,
// why.
func keyUsable(row readmodel.APIKey, now time.Time) (string, bool) {
	if row.Revoked {
		return "API key revoked", false
	}
	if row.ExpiresAt != nil && !now.Before(*row.ExpiresAt) {
		return "API key expired", false
	}
	return "", true
}

// stillValid reads keyID again (through the key cache, as authentication
// does) for a request that outlives its authentication: an event stream.
// It answers false with the reason once the key is revoked, expired or
// gone; a failed read keeps the stream, to be checked again at its next
// heartbeat.
func (s *Server) stillValid(ctx context.Context, keyID string) (string, bool) {
	now := s.now()
	row, err := s.keys.get(ctx, keyID, now, s.rm.APIKey)
	switch {
	case errors.Is(err, readmodel.ErrNotFound):
		return "API key no longer exists", false
	case err != nil:
		if ctx.Err() == nil {
			s.log.Warn("check api key of a stream", "request_id", requestID(ctx), "key_id", keyID, "err", err)
		}
		return "", true
	}
	return keyUsable(row, now)
}

// clientAddress is the connection's peer address without its port, an
// IPv6 one as its /64 (one host usually holds a whole /64). A
// forwarded-for header is the client's to write, so it is not trusted.
func clientAddress(r *http.Request) string {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	if a := ap.Addr().Unmap(); a.Is6() {
		return netip.PrefixFrom(a, 64).Masked().String()
	}
	return ap.Addr().Unmap().String()
}

func (s *Server) tooManyFailures(wait time.Duration) error {
	return tooMany(wait, fmt.Sprintf("too many requests without a valid API key from this address (%g a second)", s.anon.rate))
}

// adminOnly answers 403 to a user key.
func (s *Server) adminOnly(next http.Handler) http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		if !principalOf(r.Context()).admin() {
			return errorf(http.StatusForbidden, codeForbidden, "admin role required")
		}
		next.ServeHTTP(w, r)
		return nil
	})
}
