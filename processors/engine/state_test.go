package engine

import (
	"slices"
	"testing"
	"unsafe"
)

// The heap returns entries in time order, and due skips the entries that
// are no longer their key's schedule.
func TestTimerHeapOrderAndStaleEntries(t *testing.T) {
	var h timerHeap
	for _, at := range []int64{50, 10, 40, 30, 20, 10, 60} {
		h.push(timerEntry{at: at, key: "k", part: int32(at / 10)})
	}
	var got []int64
	for len(h.h) > 0 {
		got = append(got, h.pop().at)
	}
	if want := []int64{10, 10, 20, 30, 40, 50, 60}; !slices.Equal(got, want) {
		t.Fatalf("pop order %v, want %v", got, want)
	}

	// Live schedule: a at 20, b at 30; a's earlier entry at 10 is stale,
	// and c's entry is pushed twice with the same time.
	sched := map[string]int64{"a": 20, "b": 30, "c": 25}
	for _, e := range []timerEntry{{10, "a", 0}, {20, "a", 0}, {30, "b", 1}, {25, "c", 2}, {25, "c", 2}} {
		h.push(e)
	}
	claim := func(e timerEntry) bool {
		if sched[e.key] != e.at {
			return false
		}
		delete(sched, e.key)
		return true
	}
	if at, ok := h.peek(func(e timerEntry) bool { return sched[e.key] == e.at }); !ok || at != 20 {
		t.Fatalf("peek = %d %v, want 20 (the stale 10 dropped)", at, ok)
	}
	due := h.due(25, claim, nil)
	var keys []string
	for _, e := range due {
		keys = append(keys, e.key)
	}
	if want := []string{"a", "c"}; !slices.Equal(keys, want) {
		t.Fatalf("due at 25: %v, want %v (each key once)", keys, want)
	}
	if at, ok := h.peek(func(e timerEntry) bool { return sched[e.key] == e.at }); !ok || at != 30 {
		t.Fatalf("peek after due = %d %v, want 30", at, ok)
	}
}

// Dropping a partition forgets its keys only, and the count of keys with
// state follows puts, removals and drops.
func TestStorePartitions(t *testing.T) {
	var st store[*int]
	one := new(int)
	put := func(part int32, key string, has bool) {
		old, _ := st.get(part, key)
		var sl slot[*int]
		sl.setHas(has)
		if has {
			sl.s = one
		}
		st.put(part, key, old, sl)
	}
	put(0, "a", true)
	put(0, "b", true)
	put(3, "c", true)
	put(3, "d", false) // stepped to no state, slot kept until the changelog pass
	put(0, "a", true)  // no new key
	if st.n != 3 {
		t.Fatalf("n = %d, want 3", st.n)
	}
	st.drop(0)
	if _, ok := st.get(0, "a"); ok || st.n != 1 {
		t.Fatalf("after drop(0): a present %v, n = %d, want absent and 1", ok, st.n)
	}
	if sl, ok := st.get(3, "c"); !ok || sl.s != one {
		t.Fatal("partition 3 lost its key c")
	}
	st.remove(3, "c")
	st.remove(3, "d")
	st.drop(7) // never held: nothing happens
	if st.n != 0 || len(st.parts[3]) != 0 {
		t.Fatalf("after removals: n = %d, keys %d, want 0", st.n, len(st.parts[3]))
	}
}

// A slot's batch and "has state" flag share one word and never disturb
// each other, and a pointer state's slot stays three words.
func TestSlotMark(t *testing.T) {
	if n := unsafe.Sizeof(slot[*int]{}); n != 24 {
		t.Fatalf("slot[*int] is %d bytes, want 24", n)
	}
	for _, tc := range []struct {
		batch uint64
		has   bool
	}{{0, false}, {0, true}, {1, true}, {7, false}, {1<<63 - 1, true}} {
		var sl slot[*int]
		sl.setHas(!tc.has)
		sl.setBatch(tc.batch + 1)
		sl.setHas(tc.has)
		sl.setBatch(tc.batch)
		if sl.batch() != tc.batch || sl.has() != tc.has {
			t.Errorf("set (%d, %v), got (%d, %v)", tc.batch, tc.has, sl.batch(), sl.has())
		}
	}
}
