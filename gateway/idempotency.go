package gateway

import (
	"container/list"
	"context"
	"crypto/sha256"
	"sync"
	"time"
)

// idempotencyStore remembers, per (account, Idempotency-Key), the request's
// fingerprint and the job it produced, so that a retried request returns the
// same job instead of issuing a second command.
//
// This slice keeps it in memory, bounded (least recently stored evicted
// first) and with a TTL: it covers client retries against one gateway
// process. A gateway restart, or a retry that lands on another gateway
// instance, forgets the key; a durable store shared by the gateways
// (Postgres) is a later issue.
type idempotencyStore struct {
	ttl time.Duration
	max int

	mu      sync.Mutex
	entries map[idemKey]*list.Element
	order   *list.List // of *idemEntry, oldest at the front
}

type idemKey struct{ account, key string }

type idemEntry struct {
	key         idemKey
	fingerprint [32]byte
	storedAt    time.Time
	// done is closed when the first request finished; job and status are
	// then set (status 0: it failed and the key is free again).
	done   chan struct{}
	job    Job
	status int
}

func newIdempotencyStore(ttl time.Duration, max int) *idempotencyStore {
	return &idempotencyStore{ttl: ttl, max: max, entries: map[idemKey]*list.Element{}, order: list.New()}
}

func fingerprint(method, path string, body []byte) [32]byte {
	h := sha256.New()
	h.Write([]byte(method))
	h.Write([]byte{0})
	h.Write([]byte(path))
	h.Write([]byte{0})
	h.Write(body)
	var fp [32]byte
	h.Sum(fp[:0])
	return fp
}

// idemOutcome is what begin found.
type idemOutcome int

const (
	idemNew      idemOutcome = iota // the caller does the work, then calls finish
	idemReplay                      // the same request was done: answer its job
	idemMismatch                    // the key was used for a different request
)

// begin claims key for a request with fingerprint fp. A concurrent request
// with the same key waits for the first one to finish.
func (s *idempotencyStore) begin(ctx context.Context, k idemKey, fp [32]byte, now time.Time) (idemOutcome, *idemEntry, error) {
	for {
		s.mu.Lock()
		s.expire(now)
		el, ok := s.entries[k]
		if !ok {
			e := &idemEntry{key: k, fingerprint: fp, storedAt: now, done: make(chan struct{})}
			s.entries[k] = s.order.PushBack(e)
			for s.order.Len() > s.max {
				s.remove(s.order.Front())
			}
			s.mu.Unlock()
			return idemNew, e, nil
		}
		e := el.Value.(*idemEntry)
		s.mu.Unlock()
		if e.fingerprint != fp {
			return idemMismatch, e, nil
		}
		select {
		case <-e.done:
		case <-ctx.Done():
			return 0, nil, ctx.Err()
		}
		if e.status != 0 {
			return idemReplay, e, nil
		}
		// The first request failed and released the key: try again.
	}
}

// finish records the job of a request begun with idemNew, or releases the
// key when status is 0 (the request failed, so a retry must do the work).
func (s *idempotencyStore) finish(e *idemEntry, job Job, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.job, e.status = job, status
	if status == 0 {
		if el, ok := s.entries[e.key]; ok && el.Value.(*idemEntry) == e {
			s.remove(el)
		}
	}
	close(e.done)
}

func (s *idempotencyStore) expire(now time.Time) {
	for el := s.order.Front(); el != nil; el = s.order.Front() {
		if now.Sub(el.Value.(*idemEntry).storedAt) < s.ttl {
			return
		}
		s.remove(el)
	}
}

func (s *idempotencyStore) remove(el *list.Element) {
	delete(s.entries, el.Value.(*idemEntry).key)
	s.order.Remove(el)
}
