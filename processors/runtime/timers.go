package runtime

import (
	"container/heap"
	"time"
)

// timerHeap orders keys by wake time. A key has at most one live entry:
// sched holds its scheduled time, and entries whose time no longer matches
// are skipped when popped (a steady stream of records for a key with an
// unchanged wake time adds nothing).
type timerHeap struct {
	h     timerEntries
	sched map[string]time.Time
}

type timerEntry struct {
	at  time.Time
	key string
}

type timerEntries []timerEntry

func (t timerEntries) Len() int           { return len(t) }
func (t timerEntries) Less(i, j int) bool { return t[i].at.Before(t[j].at) }
func (t timerEntries) Swap(i, j int)      { t[i], t[j] = t[j], t[i] }
func (t *timerEntries) Push(x any)        { *t = append(*t, x.(timerEntry)) }
func (t *timerEntries) Pop() any {
	old := *t
	e := old[len(old)-1]
	*t = old[:len(old)-1]
	return e
}

func (t *timerHeap) push(at time.Time, key string) {
	if t.sched == nil {
		t.sched = map[string]time.Time{}
	}
	if cur, ok := t.sched[key]; ok && cur.Equal(at) {
		return
	}
	t.sched[key] = at
	heap.Push(&t.h, timerEntry{at, key})
}

// forget drops a key's schedule (its state is gone).
func (t *timerHeap) forget(key string) { delete(t.sched, key) }

func (t *timerHeap) peek() (time.Time, bool) {
	for len(t.h) > 0 {
		if cur, ok := t.sched[t.h[0].key]; ok && cur.Equal(t.h[0].at) {
			return t.h[0].at, true
		}
		heap.Pop(&t.h)
	}
	return time.Time{}, false
}

// due pops the keys whose time has come, each once.
func (t *timerHeap) due(now time.Time) []string {
	var out []string
	for len(t.h) > 0 && !t.h[0].at.After(now) {
		e := heap.Pop(&t.h).(timerEntry)
		if cur, ok := t.sched[e.key]; ok && cur.Equal(e.at) {
			delete(t.sched, e.key)
			out = append(out, e.key)
		}
	}
	return out
}
