package agent

import (
	"sync"

	"github.com/vmplane/vmplane/schemas"
)

// answerCache keeps the last answers of one host by command id, so that a
// command delivered twice (a producer retry upstream, a replay after an
// uncommitted batch) is answered again with the first answer instead of
// being executed twice. It is bounded: the oldest answer is forgotten first.
type answerCache struct {
	limit int

	mu   sync.Mutex
	m    map[string]schemas.Record
	ring []string
	next int
}

func (c *answerCache) get(commandID string) (schemas.Record, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.m[commandID]
	return r, ok
}

func (c *answerCache) put(commandID string, r schemas.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		// Allocated on first use: most of thousands of simulated hosts
		// never receive a command.
		c.m = make(map[string]schemas.Record)
	}
	if _, ok := c.m[commandID]; ok {
		c.m[commandID] = r
		return
	}
	if len(c.ring) < c.limit {
		c.ring = append(c.ring, commandID)
	} else {
		delete(c.m, c.ring[c.next])
		c.ring[c.next] = commandID
		c.next = (c.next + 1) % c.limit
	}
	c.m[commandID] = r
}
