package vm

// Shared report sequence maps. Nearly every VM has heard from one host
// only, and the agent numbers its report rounds per host, so every VM of a
// host gets the same sequence in a round: the report_seq a same-state
// report leaves such a VM with, {host: seq}, is one value for all of them.
// The quick path hands them one shared map per host and round instead of a
// new map per VM and report, which takes two of the three allocations out
// of the common report and, in a reconnect storm, hundreds of thousands of
// small maps out of what the GC scans.
//
// Sharing is sound because a state's map is never written once the state
// is returned: the general path writes only into its deep copy (clone), and
// the quick path replaces the map instead of writing into it. The values a
// VM sees are exactly those of a map of its own.
//
// The maps are the one thing a Machine keeps between calls, and they take
// no lock: a Machine belongs to one processor, whose runtime calls Step
// from its single poll loop, one record after another over all its
// partitions, so two Steps of one Machine never run at once. Processors
// that run side by side each build their own Machine (ops/roles does).

// maxSharedHosts bounds the hosts kept; past it a VM gets a map of its own,
// as before.
const maxSharedHosts = 1 << 16

// seqMaps holds, per host, the single-host maps of its latest two rounds.
type seqMaps struct {
	hosts map[string]*hostSeqs
}

// hostSeqs keeps two rounds so that partitions a round apart (one still
// stepping round n while another steps n+1) do not keep replacing the map.
type hostSeqs struct {
	cur, prev seqMap
}

type seqMap struct {
	seq int64
	m   map[string]int64
}

// single returns a map holding only host: seq, shared with every other
// caller asking for the same pair. The caller must never write into it.
func (c *seqMaps) single(host string, seq int64) map[string]int64 {
	h := c.hosts[host]
	if h == nil {
		if len(c.hosts) >= maxSharedHosts {
			return map[string]int64{host: seq}
		}
		if c.hosts == nil {
			c.hosts = make(map[string]*hostSeqs)
		}
		h = &hostSeqs{}
		c.hosts[host] = h
	}
	switch {
	case h.cur.m != nil && h.cur.seq == seq:
		return h.cur.m
	case h.prev.m != nil && h.prev.seq == seq:
		return h.prev.m
	}
	m := map[string]int64{host: seq}
	if h.cur.m == nil || seq > h.cur.seq {
		h.prev, h.cur = h.cur, seqMap{seq, m}
	} else {
		h.prev = seqMap{seq, m}
	}
	return m
}
