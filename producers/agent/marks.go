package agent

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// marks lets the poll loop go on while commands run: a slow one (a live
// migration of minutes) no longer holds back every other command of the
// agent, nor the abort of itself. Each polled record is added in offset
// order and finished once answered (or skipped); a record is marked for
// the client's next commit once it and every earlier record of its
// partition are finished, so that a restart never skips a command that
// was not answered.
type marks struct {
	mark func(...*kgo.Record)
	mu   sync.Mutex
	// parts holds each partition's records polled and not yet marked, in
	// offset order, with whether each is finished.
	parts map[partition][]pending
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
	return &marks{mark: mark, parts: map[partition][]pending{}}
}

// add takes r in (from the poll loop, in offset order) and returns the
// function that finishes it, to be called once.
func (m *marks) add(r *kgo.Record) (finish func()) {
	p := partition{r.Topic, r.Partition}
	m.mu.Lock()
	m.parts[p] = append(m.parts[p], pending{rec: r})
	m.mu.Unlock()
	return func() { m.finish(p, r.Offset) }
}

func (m *marks) finish(p partition, offset int64) {
	m.mu.Lock()
	q := m.parts[p]
	var last *kgo.Record
	for i := range q {
		if q[i].rec.Offset == offset {
			q[i].done = true
			break
		}
	}
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
