package engine

// timerHeap orders keys by wake time (Unix nanoseconds). The key's slot in
// the store holds its one live wake time; entries whose time no longer
// matches it (rescheduled, ticked, deleted, partition dropped) are stale
// and skipped when they reach the top, so a steady stream of records for a
// key with an unchanged wake time adds nothing, and the schedule needs no
// map of its own. The heap is typed (no container/heap): a push boxes
// nothing.
type timerHeap struct{ h []timerEntry }

type timerEntry struct {
	at   int64
	key  string
	part int32
}

// live says whether an entry is still the key's schedule.
type live func(e timerEntry) bool

func (t *timerHeap) push(e timerEntry) {
	t.h = append(t.h, e)
	h := t.h
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if h[parent].at <= h[i].at {
			break
		}
		h[parent], h[i] = h[i], h[parent]
		i = parent
	}
}

func (t *timerHeap) pop() timerEntry {
	h := t.h
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h[last] = timerEntry{} // the key string is no longer held
	h = h[:last]
	for i := 0; ; {
		l, r, min := 2*i+1, 2*i+2, i
		if l < len(h) && h[l].at < h[min].at {
			min = l
		}
		if r < len(h) && h[r].at < h[min].at {
			min = r
		}
		if min == i {
			break
		}
		h[i], h[min] = h[min], h[i]
		i = min
	}
	t.h = h
	return top
}

// peek returns the earliest live wake time, dropping stale entries.
func (t *timerHeap) peek(ok live) (int64, bool) {
	for len(t.h) > 0 {
		if ok(t.h[0]) {
			return t.h[0].at, true
		}
		t.pop()
	}
	return 0, false
}

// due appends to out the live entries whose time has come (at ≤ now),
// each key once: the caller clears the key's schedule before asking ok
// about its next entry.
func (t *timerHeap) due(now int64, ok live, out []timerEntry) []timerEntry {
	for len(t.h) > 0 && t.h[0].at <= now {
		e := t.pop()
		if ok(e) {
			out = append(out, e)
		}
	}
	return out
}
