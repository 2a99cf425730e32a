package schemas

import (
	"hash/maphash"
	"sync/atomic"
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
// copy, equal to the old. What it holds is bounded (internSlots strings of
// at most maxInterned bytes); readers in several goroutines share it
// through atomic loads and stores.

// internSlots is the table's size: room for ten thousand hosts' ids
// with few collisions.
const internSlots = 1 << 16

// maxInterned is the longest string interned; longer ones are copied
// into the record as other strings are.
const maxInterned = 64

var (
	internSeed  = maphash.MakeSeed()
	internTable [internSlots]atomic.Pointer[string]
)

// intern returns a string equal to b, the table's copy when it has one.
func intern(b []byte) string {
	if len(b) > maxInterned {
		return string(b)
	}
	pair := internTable[maphash.Bytes(internSeed, b)&(internSlots-2):][:2]
	for i := range pair {
		if p := pair[i].Load(); p != nil && *p == string(b) {
			return *p
		}
	}
	s := string(b)
	pair[1].Store(pair[0].Load())
	pair[0].Store(&s)
	return s
}

// Interned long maps. A map[string]int64 field tagged intern:"true" (a
// VM's report sequences by host) mostly holds one entry, the same one for
// every VM of a host after a round of reports: the decoder reads such a
// one-entry map as the one the table below holds for that entry, shared
// by every record decoded with it, where a map of its own would cost each
// of 500,000 restored VMs about 250 bytes. A shared map is never written
// into: whoever changes the field's value makes a new map (processors/vm
// does, and shares its own the same way, reportseq.go). Maps of more
// entries are the record's own.
//
// The table is a cache as the strings' is: each entry has a pair of slots,
// which hold the two latest maps of its hash that missed; a map that lost
// its slot stays with the records that hold it, and the next record with
// its entry gets a new one.

// internMapSlots is the long-map table's size: room for ten thousand
// hosts' latest entries with few collisions (at 16,384 slots, one slot per
// hash, a 500,000-VM restore made a new map every few VMs: 11 to 14 B more
// per VM). Keys longer than maxInterned make maps of their own, so the
// table holds at most about 20 MiB of maps.
const internMapSlots = 1 << 16

// sharedLongMap is a table slot's map and its one entry.
type sharedLongMap struct {
	key string
	val int64
	m   map[string]int64
}

var internMaps [internMapSlots]atomic.Pointer[sharedLongMap]

// internLongMap returns a map of the one entry k: v, the table's when it
// has one. Callers must not write into it.
func internLongMap(k []byte, v int64) map[string]int64 {
	if len(k) > maxInterned {
		return map[string]int64{string(k): v}
	}
	h := maphash.Bytes(internSeed, k) ^ uint64(v)*0x9e3779b97f4a7c15
	pair := internMaps[h&(internMapSlots-2):][:2]
	for i := range pair {
		if p := pair[i].Load(); p != nil && p.val == v && p.key == string(k) {
			return p.m
		}
	}
	key := intern(k)
	m := map[string]int64{key: v}
	pair[1].Store(pair[0].Load())
	pair[0].Store(&sharedLongMap{key: key, val: v, m: m})
	return m
}
