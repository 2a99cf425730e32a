package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"net/http"
	"sync"
	"time"

	"github.com/vmplane/vmplane/readmodel"
)

// Idempotency-Key handling, for every POST, PUT and DELETE: the first
// request with a key is served and its 2xx response stored for its caller
// (the API key that sent it, not its account: another key of the account
// never sees it); a retry with the same key and the same method, path and
// body gets the stored response (the same job) without doing the work
// again; the same key with a different request is a 422. A response that is
// not a success releases the key, so a retry does the work once the cause
// is gone. The route's role check runs before (server.go), so a stored
// answer is never replayed to a caller that may not make the request, and
// a route whose answer holds a secret stores it without the secret.
//
// The store is readmodel.Idempotency in a running gateway (shared by every
// instance, durable across restarts); memoryIdempotency when none is
// configured (tests, a single process).

// IdempotencyStore remembers Idempotency-Keys per caller: the gateway
// passes its API key ("account/key id"), so that one key's stored answers
// are never another's. Claim either claims the key for a new request
// (claimed true, with a fresh Token) or returns what is stored. An entry
// older than ttl is forgotten; a claim in flight for longer than stale (its
// gateway died) is taken over by a request with the same fingerprint. A
// store keeps the body it is given: the caller takes secrets out first.
type IdempotencyStore interface {
	Claim(ctx context.Context, caller, key string, fingerprint []byte, now time.Time, ttl, stale time.Duration) (readmodel.IdempotentRequest, bool, error)
	Complete(ctx context.Context, caller, key, token string, status int, location string, body []byte) error
	Release(ctx context.Context, caller, key, token string) error
}

const (
	// An Idempotency-Key is 1 to 255 printable ASCII characters: it is kept
	// in Postgres as text, which takes no NUL, and logged.
	maxIdempotencyKey = 255
	// idemStale is how long a claim may stay in flight before a retry of the
	// same request takes it over: its gateway died between claim and answer.
	idemStale = time.Minute
	// idemWait bounds how long a retry waits for the same request in flight.
	idemWait = 15 * time.Second
)

func fingerprint(method, path string, body []byte) []byte {
	h := sha256.New()
	h.Write([]byte(method))
	h.Write([]byte{0})
	h.Write([]byte(path))
	h.Write([]byte{0})
	h.Write(body)
	return h.Sum(nil)
}

// idempotent wraps a mutating route. redact, when not nil, turns the
// answer into what may be kept: it is what a retry gets.
func (s *Server) idempotent(next http.Handler, redact func([]byte) []byte) http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		key := r.Header.Get("Idempotency-Key")
		if key == "" || r.Method == http.MethodGet || r.Method == http.MethodHead {
			next.ServeHTTP(w, r)
			return nil
		}
		if err := checkIdempotencyKey(key); err != nil {
			return err
		}
		body, err := s.readBody(w, r)
		if err != nil {
			return err
		}
		r.Body = readCloser{bytes.NewReader(body)}
		caller := callerOf(principalOf(r.Context()))
		fp := fingerprint(r.Method, r.URL.Path, body)
		ctx, cancel := context.WithTimeout(r.Context(), idemWait)
		defer cancel()
		var claim readmodel.IdempotentRequest
		for {
			got, claimed, err := s.idem.Claim(ctx, caller, key, fp, s.now(), s.cfg.IdempotencyTTL, idemStale)
			if err != nil {
				return err
			}
			if !bytes.Equal(got.Fingerprint, fp) {
				e := errorf(http.StatusUnprocessableEntity, codeIdempotency, "Idempotency-Key %q was used with a different request", key)
				e.Details = map[string]any{"header": "Idempotency-Key"}
				return e
			}
			if claimed {
				claim = got
				break
			}
			if got.Status != 0 {
				replay(w, got)
				return nil
			}
			select {
			case <-ctx.Done():
				if r.Context().Err() != nil {
					return r.Context().Err()
				}
				return errorf(http.StatusConflict, codeIdempotencyInFlight, "a request with Idempotency-Key %q is still in progress; retry later", key)
			case <-time.After(50 * time.Millisecond):
			}
		}
		rec := &recordingWriter{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		// The request's own context may be gone (client left): the answer
		// must still be stored or the key released.
		bg := context.WithoutCancel(r.Context())
		if rec.status >= 200 && rec.status < 300 {
			kept := rec.body.Bytes()
			if redact != nil {
				kept = redact(kept)
			}
			err = s.idem.Complete(bg, caller, key, claim.Token, rec.status, rec.Header().Get("Location"), kept)
		} else {
			err = s.idem.Release(bg, caller, key, claim.Token)
		}
		if err != nil {
			s.log.Error("idempotency store", "request_id", requestID(r.Context()), "err", err)
		}
		return nil
	})
}

// callerOf is whom a stored answer belongs to: the API key, within its
// account. Account names and key ids hold no "/", so the pair is one
// unambiguous string.
func callerOf(p principal) string { return p.Account + "/" + p.KeyID }

// checkIdempotencyKey refuses a key that is empty, too long, or holds
// anything but printable ASCII (a NUL, a control character, a byte that
// is not UTF-8): it could not be stored, compared or logged as sent.
func checkIdempotencyKey(key string) error {
	bad := func(format string, args ...any) error {
		e := errorf(http.StatusUnprocessableEntity, codeValidation, format, args...)
		e.Details = map[string]any{"header": "Idempotency-Key"}
		return e
	}
	if len(key) > maxIdempotencyKey {
		return bad("Idempotency-Key longer than %d characters", maxIdempotencyKey)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x20 || c > 0x7e {
			return bad("Idempotency-Key must be printable ASCII characters (such as a UUID); byte %d is 0x%02x", i, c)
		}
	}
	return nil
}

func replay(w http.ResponseWriter, got readmodel.IdempotentRequest) {
	if got.Location != "" {
		w.Header().Set("Location", got.Location)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Idempotent-Replayed", "true")
	w.WriteHeader(got.Status)
	_, _ = w.Write(got.Body)
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

// recordingWriter passes the response through and keeps a copy.
type recordingWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (w *recordingWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recordingWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.body.Write(b)
	return w.ResponseWriter.Write(b)
}

func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// memoryIdempotency is the in-process store: bounded, with the same rules
// as the Postgres one. It forgets everything at a restart.
type memoryIdempotency struct {
	max int

	mu      sync.Mutex
	entries map[[2]string]readmodel.IdempotentRequest
	order   [][2]string // insertion order, for the bound
}

func newMemoryIdempotency(max int) *memoryIdempotency {
	return &memoryIdempotency{max: max, entries: map[[2]string]readmodel.IdempotentRequest{}}
}

func (m *memoryIdempotency) Claim(_ context.Context, caller, key string, fp []byte, now time.Time, ttl, stale time.Duration) (readmodel.IdempotentRequest, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{caller, key}
	got, ok := m.entries[k]
	expired := ok && got.ClaimedAt.Before(now.Add(-ttl))
	takeover := ok && got.Status == 0 && got.ClaimedAt.Before(now.Add(-stale)) && bytes.Equal(got.Fingerprint, fp)
	if ok && !expired && !takeover {
		return got, false, nil
	}
	e := readmodel.IdempotentRequest{Fingerprint: fp, Token: readmodel.NewToken(), ClaimedAt: now}
	if !ok {
		m.order = append(m.order, k)
	}
	m.entries[k] = e
	for len(m.entries) > m.max && len(m.order) > 0 {
		delete(m.entries, m.order[0])
		m.order = m.order[1:]
	}
	return e, true, nil
}

func (m *memoryIdempotency) Complete(_ context.Context, caller, key, token string, status int, location string, body []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{caller, key}
	if e, ok := m.entries[k]; ok && e.Token == token {
		e.Status, e.Location, e.Body = status, location, bytes.Clone(body)
		m.entries[k] = e
	}
	return nil
}

func (m *memoryIdempotency) Release(_ context.Context, caller, key, token string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{caller, key}
	if e, ok := m.entries[k]; ok && e.Token == token && e.Status == 0 {
		delete(m.entries, k)
	}
	return nil
}
