package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/vmplane/vmplane/projectors/postgres"
)

// keyCache keeps API key rows read from the read model for a short time, so
// that a client's burst of requests costs one read of its key instead of one
// per request. Only found rows are kept: a key not projected yet is read
// again on its next use. The cost is a window of ttl after a revocation
// reaches the read model during which another gateway instance still
// accepts the key; the instance that revoked it forgets it at once.
type keyCache struct {
	ttl time.Duration
	max int

	mu   sync.Mutex
	rows map[string]cachedKey
}

type cachedKey struct {
	row postgres.APIKey
	at  time.Time
}

func newKeyCache(ttl time.Duration, max int) *keyCache {
	return &keyCache{ttl: ttl, max: max, rows: map[string]cachedKey{}}
}

// get returns the row of keyID, from the cache when it was read less than
// ttl ago, else through read.
func (c *keyCache) get(ctx context.Context, keyID string, now time.Time, read func(context.Context, string) (postgres.APIKey, error)) (postgres.APIKey, error) {
	if c.ttl <= 0 {
		return read(ctx, keyID)
	}
	c.mu.Lock()
	e, ok := c.rows[keyID]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < c.ttl && !now.Before(e.at) {
		return e.row, nil
	}
	row, err := read(ctx, keyID)
	if err != nil {
		return row, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.rows) >= c.max {
		for id, e := range c.rows {
			if now.Sub(e.at) >= c.ttl {
				delete(c.rows, id)
			}
		}
		if len(c.rows) >= c.max {
			clear(c.rows)
		}
	}
	c.rows[keyID] = cachedKey{row: row, at: now}
	return row, nil
}

// forget drops keyID, so that this instance reads it again at its next use.
func (c *keyCache) forget(keyID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.rows, keyID)
}
