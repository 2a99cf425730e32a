package placement

// A host's tallies count its allocations by account and by affinity group.
// A host holds a few dozen VMs at most, so a short list read in place is
// cheaper than a zone-wide map, whose lookups miss the cache on every host
// a planner scores or a group filters.

// tally is how many allocations of one account or group (by its id in the
// index) a host holds.
type tally struct{ id, n int32 }

// tallyAdd adds d to id's count in ts and returns ts; a count that reaches
// 0 is dropped.
func tallyAdd(ts []tally, id int32, d int) []tally {
	for k := range ts {
		if ts[k].id != id {
			continue
		}
		ts[k].n += int32(d)
		if ts[k].n == 0 {
			ts[k] = ts[len(ts)-1]
			ts = ts[:len(ts)-1]
		}
		return ts
	}
	if d == 0 {
		return ts
	}
	return append(ts, tally{id, int32(d)})
}

// tallyOf is id's count in ts.
func tallyOf(ts []tally, id int32) int {
	for _, t := range ts {
		if t.id == id {
			return int(t.n)
		}
	}
	return 0
}
