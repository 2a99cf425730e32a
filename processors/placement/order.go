package placement

// clusterQueue gives the clusters that could hold one request in its
// planner's order, lazily. Most decisions end in the first cluster, so the
// first is found in one pass of comparisons; only when it has no
// acceptable host are the rest made a heap, from which each further
// cluster costs a few comparisons: a request that misses in many clusters
// (an anti-affinity group on most hosts) never pays for a full sort.
type clusterQueue struct {
	cs     []rankedCluster
	v      View
	a      *ask
	popped int
}

// rankedCluster is a candidate with its position in cluster id order: of
// two clusters the planner holds equal, the lower id goes first.
type rankedCluster struct {
	*clusterIndex
	rank int
}

// queue returns the clusters whose free capacity could hold the request
// (the others have no host that fits) in the planner's order.
func (ix *zoneIndex) queue(v View, a *ask) clusterQueue {
	cpu, mem := int64(a.req.Offering.CPU), a.req.Offering.MemoryMB
	cs := ix.candidates[:0]
	for k, c := range ix.byID {
		if c.FreeCPU >= cpu && c.FreeMemoryMB >= mem {
			cs = append(cs, rankedCluster{c, k})
		}
	}
	ix.candidates = cs[:0]
	return clusterQueue{cs: cs, v: v, a: a}
}

// less says whether x goes before y.
func (q *clusterQueue) less(x, y rankedCluster) bool {
	c := q.a.planner.CompareClusters(q.v, q.a.req, &x.Cluster, &y.Cluster)
	return c < 0 || c == 0 && x.rank < y.rank
}

// pop returns the next cluster, nil when none is left.
func (q *clusterQueue) pop() *clusterIndex {
	if len(q.cs) == 0 {
		return nil
	}
	q.popped++
	top := 0
	switch q.popped {
	case 1:
		for k := 1; k < len(q.cs); k++ {
			if q.less(q.cs[k], q.cs[top]) {
				top = k
			}
		}
	case 2:
		for k := len(q.cs)/2 - 1; k >= 0; k-- {
			q.down(k)
		}
	}
	c := q.cs[top].clusterIndex
	last := len(q.cs) - 1
	q.cs[top] = q.cs[last]
	q.cs = q.cs[:last]
	if q.popped > 1 {
		q.down(0)
	}
	return c
}

// down moves element k down the heap to its place.
func (q *clusterQueue) down(k int) {
	for {
		c := 2*k + 1
		if c >= len(q.cs) {
			return
		}
		if r := c + 1; r < len(q.cs) && q.less(q.cs[r], q.cs[c]) {
			c = r
		}
		if !q.less(q.cs[c], q.cs[k]) {
			return
		}
		q.cs[k], q.cs[c] = q.cs[c], q.cs[k]
		k = c
	}
}
