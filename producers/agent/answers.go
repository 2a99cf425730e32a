package agent

import (
	"context"
	"sync"

	"github.com/vmplane/vmplane/schemas"
)

// answerCache keeps the last answers of one host by command id, so that a
// command delivered twice (a producer retry upstream, a replay after an
// uncommitted batch) is answered again with the first answer instead of
// being executed twice. It is bounded: the oldest answer is forgotten first.
// With a data directory the answers file (answerlog.go) makes the caches
// survive a restart.
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

// entries returns the remembered answers, oldest first: the order in which
// putting them into an empty cache of the same limit keeps them all.
func (c *answerCache) entries() []schemas.Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]schemas.Record, 0, len(c.ring))
	for i := range c.ring {
		// Once the ring is full, next is the oldest slot.
		id := c.ring[(c.next+i)%len(c.ring)]
		out = append(out, c.m[id])
	}
	return out
}

// openAnswers reads the answers file into the hosts' caches and starts
// appending to it. Answers of hosts the driver no longer serves are
// dropped.
func (a *Agent) openAnswers(ctx context.Context) (*answerLog, error) {
	l, kept, err := openAnswerLog(ctx, a.cfg.DataDir, a.cfg.ID, a.log)
	if err != nil {
		return nil, err
	}
	n := 0
	for _, k := range kept {
		if h, ok := a.hosts[k.Answer.HostID]; ok {
			h.answers.put(k.Answer.CommandID, k.record())
			n++
		}
	}
	if err := l.start(a.liveAnswers); err != nil {
		return nil, err
	}
	a.log.Info("answers file read", "path", l.path, "answers", n)
	return l, nil
}

// liveAnswers is every answer the caches remember, each host's oldest
// first, for a rewrite of the answers file.
func (a *Agent) liveAnswers() []keptAnswer {
	var out []keptAnswer
	for _, id := range a.order {
		for _, r := range a.hosts[id].answers.entries() {
			if k, ok := keptOf(r); ok {
				out = append(out, k)
			}
		}
	}
	return out
}
