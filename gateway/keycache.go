package gateway

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/vmplane/vmplane/readmodel"
)

// keyCache keeps API key rows read from the read model for a short time, so
// that a client's burst of requests costs one read of its key instead of one
// per request. A key the read model does not have is kept too, apart, so
// that made-up keys never push real ones out: a client repeating a made-up
// key costs one read a ttl, not one a request. The cost is a window of
// ttl after a revocation reaches the read model during which another
// gateway instance still accepts the key; the instance that revoked it
// forgets it at once.
type keyCache struct {
	ttl time.Duration
	max int

	mu      sync.Mutex
	rows    map[string]cachedKey
	unknown map[string]cachedKey // keys the read model does not have
}

type cachedKey struct {
	row readmodel.APIKey
	at  time.Time
}

func newKeyCache(ttl time.Duration, max int) *keyCache {
	return &keyCache{ttl: ttl, max: max, rows: map[string]cachedKey{}, unknown: map[string]cachedKey{}}
}

// fresh returns keyID's entry of m when it was read less than ttl ago.
func (c *keyCache) fresh(m map[string]cachedKey, keyID string, now time.Time) (cachedKey, bool) {
	if c.ttl <= 0 {
		return cachedKey{}, false
	}
	c.mu.Lock()
	e, ok := m[keyID]
	c.mu.Unlock()
	return e, ok && now.Sub(e.at) < c.ttl && !now.Before(e.at)
}

// seenFor is how long a key the read model had counts as seen by this
// instance, for the gate of principal.
const seenFor = 10 * time.Minute

// seen says whether this instance read keyID's row (a key the read model
// has) in the last seenFor, fresh or not. A client address that spent its
// 401s is still served for such keys, so that tenants behind the same
// proxy or NAT as a client flooding made-up keys keep working.
func (c *keyCache) seen(keyID string, now time.Time) bool {
	c.mu.Lock()
	e, ok := c.rows[keyID]
	c.mu.Unlock()
	return ok && now.Sub(e.at) < seenFor && !now.Before(e.at)
}

// get returns the row of keyID (readmodel.ErrNotFound for a key the read
// model does not have), from the cache when it was read less than ttl
// ago, else through read.
func (c *keyCache) get(ctx context.Context, keyID string, now time.Time, read func(context.Context, string) (readmodel.APIKey, error)) (readmodel.APIKey, error) {
	if e, ok := c.fresh(c.rows, keyID, now); ok {
		return e.row, nil
	}
	if _, ok := c.fresh(c.unknown, keyID, now); ok {
		return readmodel.APIKey{}, readmodel.ErrNotFound
	}
	row, err := read(ctx, keyID)
	if c.ttl <= 0 {
		return row, err
	}
	switch {
	case err == nil:
		c.put(c.rows, keyID, cachedKey{row: row, at: now}, now)
	case errors.Is(err, readmodel.ErrNotFound):
		c.put(c.unknown, keyID, cachedKey{at: now}, now)
	}
	return row, err
}

// put stores e in m, first dropping the stale entries when m is full, and
// everything when they were not enough.
func (c *keyCache) put(m map[string]cachedKey, keyID string, e cachedKey, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(m) >= c.max {
		for id, old := range m {
			if now.Sub(old.at) >= c.ttl {
				delete(m, id)
			}
		}
		if len(m) >= c.max {
			clear(m)
		}
	}
	m[keyID] = e
}

// forget drops keyID, so that this instance reads it again at its next use.
func (c *keyCache) forget(keyID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.rows, keyID)
	delete(c.unknown, keyID)
}
