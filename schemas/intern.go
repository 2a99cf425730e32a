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
