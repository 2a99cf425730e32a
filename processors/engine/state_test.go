package engine

import (
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/vmplane/vmplane/schemas"
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

// A state that holds its own key lends it to the map: the key the caller
// made is not kept.
func TestStoreKeepsTheStatesKey(t *testing.T) {
	var st store[*schemas.VmRecord]
	s := &schemas.VmRecord{VmID: "vm-1"}
	key := string([]byte("vm-1"))
	var sl slot[*schemas.VmRecord]
	sl.s = s
	sl.setHas(true)
	st.put(0, key, slot[*schemas.VmRecord]{}, sl)
	st.put(0, string([]byte("vm-1")), sl, sl)
	for k := range st.parts[0] {
		if unsafe.StringData(k) != unsafe.StringData(s.VmID) {
			t.Fatalf("the map keeps its own copy of key %q", k)
		}
	}
	if got, ok := st.get(0, "vm-1"); !ok || got.s != s {
		t.Fatal("the state is not found by its key")
	}
}

// A slot's entry index and "has state" flag share one word and never
// disturb each other, and a pointer state's slot stays three words.
func TestSlotMark(t *testing.T) {
	if n := unsafe.Sizeof(slot[*int]{}); n != 24 {
		t.Fatalf("slot[*int] is %d bytes, want 24", n)
	}
	if e := (slot[*int]{}).entry(); e != -1 {
		t.Fatalf("a new slot's entry is %d, want -1", e)
	}
	for _, tc := range []struct {
		entry int
		has   bool
	}{{0, false}, {0, true}, {1, true}, {7, false}, {1<<62 - 2, true}} {
		var sl slot[*int]
		sl.setHas(!tc.has)
		sl.setEntry(tc.entry + 1)
		sl.setHas(tc.has)
		sl.setEntry(tc.entry)
		if sl.entry() != tc.entry || sl.has() != tc.has {
			t.Errorf("set (%d, %v), got (%d, %v)", tc.entry, tc.has, sl.entry(), sl.has())
		}
	}
}

// noWake is a machine whose states never need a Tick; only Wake is called.
type noWake struct{ Machine[*int] }

func (noWake) Wake(*int) time.Time { return time.Time{} }

// A batch lists each key it steps once, with its latest state, whether
// the key was stepped again, stepped to no state, or holds an index a
// previous batch left in its slot that now names another key.
func TestBatchListsEachKeyOnceWithItsLatestState(t *testing.T) {
	p := &Processor[*int]{m: noWake{}}
	one, two, three := new(int), new(int), new(int)
	step := func(part int32, key string, s *int) {
		sl, _ := p.st.get(part, key)
		p.setState(part, key, sl, s)
	}
	list := func() map[string]touchedKey[*int] {
		out := map[string]touchedKey[*int]{}
		for _, tk := range p.touched {
			if _, dup := out[tk.key]; dup {
				t.Fatalf("key %s listed twice: %+v", tk.key, p.touched)
			}
			out[tk.key] = tk
		}
		return out
	}
	step(0, "a", one)
	step(0, "b", one)
	step(0, "a", two)
	step(1, "c", one)
	step(1, "c", nil)
	got := list()
	if len(got) != 3 || got["a"].s != two || !got["a"].has || got["a"].had || !got["b"].has || got["c"].has || got["c"].had {
		t.Fatalf("first batch lists %+v", p.touched)
	}

	// The next batch: "b" first, so that entry 0, which "a" still names
	// in its slot, is now b's.
	p.touched = p.touched[:0]
	step(0, "b", three)
	step(0, "a", three)
	step(0, "b", two)
	got = list()
	if len(got) != 2 || got["a"].s != three || !got["a"].had || got["b"].s != two || !got["b"].had {
		t.Fatalf("second batch lists %+v", p.touched)
	}
}
