package gatewaytest

import (
	"bytes"
	"context"
	"sync"
	"time"

	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/readmodel"
)

// Idempotency is an in-memory gateway.IdempotencyStore that lets a test
// read what the gateway kept. It forgets nothing (no ttl, no takeover of a
// stale claim): a test's requests are few and quick.
type Idempotency struct {
	mu      sync.Mutex
	entries map[[2]string]readmodel.IdempotentRequest
}

var _ gateway.IdempotencyStore = (*Idempotency)(nil)

// Claim returns the entry of caller's key, claiming it for fp when there is none.
func (s *Idempotency) Claim(_ context.Context, caller, key string, fp []byte, now time.Time, _, _ time.Duration) (readmodel.IdempotentRequest, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.entries == nil {
		s.entries = map[[2]string]readmodel.IdempotentRequest{}
	}
	if got, ok := s.entries[[2]string{caller, key}]; ok {
		return got, false, nil
	}
	e := readmodel.IdempotentRequest{Fingerprint: fp, Token: readmodel.NewToken(), ClaimedAt: now}
	s.entries[[2]string{caller, key}] = e
	return e, true, nil
}

// Complete stores the answer of the request that holds the claim token.
func (s *Idempotency) Complete(_ context.Context, caller, key, token string, status int, location string, body []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.entries[[2]string{caller, key}]; ok && e.Token == token {
		e.Status, e.Location, e.Body = status, location, bytes.Clone(body)
		s.entries[[2]string{caller, key}] = e
	}
	return nil
}

// Release drops the claim that token holds while it has no answer yet.
func (s *Idempotency) Release(_ context.Context, caller, key, token string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.entries[[2]string{caller, key}]; ok && e.Token == token && e.Status == 0 {
		delete(s.entries, [2]string{caller, key})
	}
	return nil
}

// Kept returns every stored answer's caller and body, by caller and key.
func (s *Idempotency) Kept() map[[2]string][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[[2]string][]byte, len(s.entries))
	for k, e := range s.entries {
		out[k] = bytes.Clone(e.Body)
	}
	return out
}
