package agent

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// marks lets the poll loop go on while commands run: a slow one (a live
// migration of minutes) no longer holds back every other command of the
// agent, nor the abort of itself. Each polled record is added in the
// order it was polled and finished once answered (or skipped); a record
// is marked for the client's next commit once it and every record polled
// before it from its partition are finished, so that a restart never
// skips a command that was not answered.
//
// A record polled twice (fetched again after the group lost the member)
// is two entries, each finished on its own, and each marked again: the
// group may have started again below a mark the broker never stored (a
// commit lost with a broker killed before it, or due after it), and only
// marks of the records delivered again take its offset past them. The
// client ignores a mark below the one it holds.
type marks struct {
	mark func(...*kgo.Record)
	mu   sync.Mutex
	// parts holds each partition's entries polled and not yet marked, in
	// poll order.
	parts map[partition][]*pending
}

type partition struct {
	topic string
	part  int32
}

type pending struct {
	rec  *kgo.Record
	done bool
}

func newMarks(mark func(...*kgo.Record)) *marks {
	return &marks{mark: mark, parts: map[partition][]*pending{}}
}

// add takes r in (from the poll loop, in poll order) and returns the
// function that finishes it, to be called once.
func (m *marks) add(r *kgo.Record) (finish func()) {
	p := partition{r.Topic, r.Partition}
	e := &pending{rec: r}
	m.mu.Lock()
	m.parts[p] = append(m.parts[p], e)
	m.mu.Unlock()
	return func() { m.finish(p, e) }
}

func (m *marks) finish(p partition, e *pending) {
	m.mu.Lock()
	e.done = true
	q := m.parts[p]
	var last *kgo.Record
	n := 0
	for n < len(q) && q[n].done {
		last = q[n].rec
		n++
	}
	if n == len(q) {
		delete(m.parts, p)
	} else {
		m.parts[p] = q[n:]
	}
	m.mu.Unlock()
	if last != nil {
		m.mark(last)
	}
}
