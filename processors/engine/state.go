package engine

// store holds the state of every key the processor owns, one map per input
// partition. A key lives in one map only, with everything the loop needs
// about it (state, scheduled wake, its entry in the batch's list): at
// 500,000 keys one map entry per key for the collector to scan and the
// loop to hash, rather than three (state, partition, timer schedule).
// Dropping a revoked partition forgets its map without visiting the other
// partitions' keys. Slots are values, not pointers: a pointer per key
// would add as many small objects to every collection.
type store[S any] struct {
	parts []map[string]slot[S] // by partition; nil when none held
	n     int                  // keys with state
	// stale holds, by partition, the keys of a Parted machine whose next
	// write is to write every part, with the parts it is to tombstone
	// first: keys restored whole or with parts left over (parts.go).
	stale []map[string][]string
}

// slot is one key's entry: 24 bytes beside its 16-byte key header for a
// pointer state. The "has state" flag rides in the low bit of the entry
// index rather than in a field of its own, which alignment would pad to
// 8 bytes: one map slot in six, ≈13 B per key at the map's usual load.
type slot[S any] struct {
	s S
	// mark is (i+1)<<1 | has. i is the key's index in the list of keys
	// the loop's batch touched (Processor.touched), 0 for never: an index
	// left by an earlier batch names another key there, or none, so the
	// list itself says whether it is this batch's (Processor.entry). has
	// says s is a state: a key stepped to "no state" keeps its slot until
	// the batch's changelog records are written.
	mark uint64
	// wake is the scheduled Tick time in Unix nanoseconds, 0 for none; a
	// timer heap entry with another time is stale.
	wake int64
}

func (sl slot[S]) has() bool { return sl.mark&1 != 0 }

// entry is the index the slot last took in a batch's list; -1 for none.
func (sl slot[S]) entry() int { return int(sl.mark>>1) - 1 }

func (sl *slot[S]) setEntry(i int) { sl.mark = uint64(i+1)<<1 | sl.mark&1 }

func (sl *slot[S]) setHas(has bool) {
	sl.mark &^= 1
	if has {
		sl.mark |= 1
	}
}

// get returns the slot of key in partition p (the zero slot if none).
func (t *store[S]) get(p int32, key string) (slot[S], bool) {
	if int(p) >= len(t.parts) || t.parts[p] == nil {
		return slot[S]{}, false
	}
	sl, ok := t.parts[p][key]
	return sl, ok
}

// put stores a key's slot, counting keys with state.
func (t *store[S]) put(p int32, key string, old, sl slot[S]) {
	for int(p) >= len(t.parts) {
		t.parts = append(t.parts, nil)
	}
	m := t.parts[p]
	if m == nil {
		m = map[string]slot[S]{}
		t.parts[p] = m
	}
	if sl.has() != old.has() {
		if sl.has() {
			t.n++
		} else {
			t.n--
		}
	}
	if k, ok := any(sl.s).(keyed); ok && sl.has() {
		if own := k.StateKey(); own == key {
			key = own
		}
	}
	m[key] = sl
}

// keyed is a state that holds its own key (a VmRecord its vm_id). A map
// stores the key it is given at every assignment, so put gives it the
// state's copy: the key then costs no allocation of its own, where the
// caller's string, made from a record's key bytes, would take 16 bytes
// per key (bench -only storm, heap per VM).
type keyed interface{ StateKey() string }

// remove deletes a key's slot.
func (t *store[S]) remove(p int32, key string) {
	if int(p) >= len(t.parts) || t.parts[p] == nil {
		return
	}
	if sl, ok := t.parts[p][key]; ok {
		if sl.has() {
			t.n--
		}
		delete(t.parts[p], key)
	}
}

// setStale lists a key's parts to tombstone before its next write writes
// every part (none: it writes every part all the same).
func (t *store[S]) setStale(p int32, key string, parts []string) {
	for int(p) >= len(t.stale) {
		t.stale = append(t.stale, nil)
	}
	if t.stale[p] == nil {
		t.stale[p] = map[string][]string{}
	}
	if parts == nil {
		parts = []string{}
	}
	t.stale[p][key] = parts
}

// takeStale returns and forgets what setStale listed for a key; rewrite
// says whether it listed anything.
func (t *store[S]) takeStale(p int32, key string) (parts []string, rewrite bool) {
	if int(p) >= len(t.stale) || t.stale[p] == nil {
		return nil, false
	}
	parts, rewrite = t.stale[p][key]
	delete(t.stale[p], key)
	return parts, rewrite
}

// keys calls fn with every key of partition p.
func (t *store[S]) keys(p int32, fn func(string)) {
	if int(p) < len(t.parts) {
		for k := range t.parts[p] {
			fn(k)
		}
	}
}

// drop forgets every key of partition p.
func (t *store[S]) drop(p int32) {
	if int(p) < len(t.stale) {
		t.stale[p] = nil
	}
	if int(p) >= len(t.parts) || t.parts[p] == nil {
		return
	}
	for _, sl := range t.parts[p] {
		if sl.has() {
			t.n--
		}
	}
	t.parts[p] = nil
}
