package schemas

import (
	"hash/maphash"
	"sync/atomic"
	"unsafe"
)

// Interned strings. A field tagged intern:"true" holds one of few values
// that many records share: a zone, an account, an offering's name, a
// host, pod or cluster id, a state name. The decoder reads such a string
// as the one copy the table below holds, instead of copying its bytes
// into each record: the VM processor keeps 500,000 VmRecords in memory,
// which would otherwise hold the same host ids and state names 500,000
// times over (bench -only storm, heap per VM).
//
// The table is a cache, never a registry: each value has a pair of slots,
// which hold the two latest values of its hash that missed, so three that
// collide take turns, and a value that lost its slot is read as a new
// copy, equal to the old. What it holds is bounded: internSlots entries,
// each a string of at most maxInterned bytes and at most two one-entry
// maps (below), about 40 MiB when every entry holds both; readers in
// several goroutines share it through atomic loads and stores.

// internSlots is the table's size: room for ten thousand hosts' ids
// with few collisions.
const internSlots = 1 << 16

// maxInterned is the longest string interned; longer ones are copied
// into the record as other strings are.
const maxInterned = 64

var (
	internSeed  = maphash.MakeSeed()
	internTable [internSlots]atomic.Pointer[internEntry]
)

// internEntry is a table slot's string, with the one-entry long maps
// whose key it is (below). A string of up to 48 bytes (a UUID is 36) lies
// in the entry itself, so that a look-up reads one object rather than an
// entry and then the string's bytes (BenchmarkRestore, nine alternated
// pairs, 2026-11-27: 116.1 -> 111.4 ms mean, lower in 6).
type internEntry struct {
	s    string
	maps [2]atomic.Pointer[sharedLongMap]
	buf  [48]byte
}

// intern returns a string equal to b, the table's copy when it has one.
func intern(b []byte) string {
	if len(b) > maxInterned {
		return string(b)
	}
	return internOf(b).s
}

// internOf returns the table's entry of b (at most maxInterned bytes),
// made now when the table has none.
func internOf(b []byte) *internEntry {
	pair := internTable[maphash.Bytes(internSeed, b)&(internSlots-2):][:2]
	for i := range pair {
		if e := pair[i].Load(); e != nil && e.s == string(b) {
			return e
		}
	}
	e := &internEntry{}
	if len(b) <= len(e.buf) {
		e.s = unsafe.String(&e.buf[0], copy(e.buf[:], b))
	} else {
		e.s = string(b)
	}
	pair[1].Store(pair[0].Load())
	pair[0].Store(e)
	return e
}

// Interned long maps. A map[string]int64 field tagged intern:"true" (a
// VM's report sequences by host) mostly holds one entry, the same one for
// every VM of a host after a round of reports: the decoder reads such a
// one-entry map as the one its key's table entry holds for that value,
// shared by every record decoded with it, where a map of its own would
// cost each of 500,000 restored VMs about 250 bytes. A shared map is never
// written into: whoever changes the field's value makes a new map
// (processors/vm does, and shares its own the same way, reportseq.go).
// Maps of more entries are the record's own.
//
// A key's entry keeps the maps of its two latest values that missed, so
// that records a round apart do not keep replacing each other's; a map
// that lost its place stays with the records that hold it, and the next
// record with its value gets a new one. The maps hang off the key's string
// entry, not a table of their own: a VmRecord interns its host (host_id,
// power_host) just before its report_seq, so the entry is in the cache
// when the map is looked up. (With a table of its own, at 65,536 slots, a
// look-up was two cache misses: 220 ns of a 100,000-state restore's 1.1 µs
// decode per record, BenchmarkRestore, 2026-11-27.)

// sharedLongMap is one of an entry's maps and the value of its entry.
type sharedLongMap struct {
	val int64
	m   map[string]int64
}

// internLongMap returns a map of the one entry k: v, the table's when it
// has one. Callers must not write into it.
func internLongMap(k []byte, v int64) map[string]int64 {
	if len(k) > maxInterned {
		return map[string]int64{string(k): v}
	}
	e := internOf(k)
	for i := range e.maps {
		if p := e.maps[i].Load(); p != nil && p.val == v {
			return p.m
		}
	}
	m := map[string]int64{e.s: v}
	e.maps[1].Store(e.maps[0].Load())
	e.maps[0].Store(&sharedLongMap{val: v, m: m})
	return m
}
