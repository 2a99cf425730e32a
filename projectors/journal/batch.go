package journal

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// batch is what has been read since the last commit: the rows to insert and,
// per partition, the offset to commit once they are in.
type batch struct {
	jobs    []jobRow
	events  []eventRow
	next    map[int32]kgo.EpochOffset
	records int
	started time.Time
}

func newBatch() batch { return batch{next: map[int32]kgo.EpochOffset{}} }

func (b *batch) rows() int { return len(b.jobs) + len(b.events) }

// add takes a record; a dead-lettered one (ok false) brings no rows but its
// offset, so it is committed with the batch.
func (b *batch) add(kr *kgo.Record, job *jobRow, ev eventRow, ok bool) {
	if b.records == 0 {
		b.started = time.Now()
	}
	b.records++
	b.next[kr.Partition] = kgo.EpochOffset{Epoch: kr.LeaderEpoch, Offset: kr.Offset + 1}
	if !ok {
		return
	}
	if job != nil {
		b.jobs = append(b.jobs, *job)
	}
	b.events = append(b.events, ev)
}

// drop removes the rows and offsets of the given partitions.
func (b *batch) drop(partitions []int32) {
	if len(partitions) == 0 {
		return
	}
	gone := func(p int32) bool { return slices.Contains(partitions, p) }
	b.jobs = slices.DeleteFunc(b.jobs, func(r jobRow) bool { return gone(r.Partition) })
	b.events = slices.DeleteFunc(b.events, func(r eventRow) bool { return gone(r.Partition) })
	for _, p := range partitions {
		delete(b.next, p)
	}
	// records only says whether there is something to commit; a batch left
	// with offsets of kept partitions still needs its flush.
	b.records = len(b.next)
	if b.records == 0 {
		b.started = time.Time{}
	}
}
