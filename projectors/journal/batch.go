package journal

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/schemas"
)

// rows are the rows of the four tables a batch inserts.
type rows struct {
	jobs   []jobRow
	events []eventRow
	hosts  []hostRow
	leases []leaseRow
}

func (r *rows) len() int { return len(r.jobs) + len(r.events) + len(r.hosts) + len(r.leases) }

// recordRows are the rows one record brings (those it has); none for a
// dead letter. They are values, not a row allocated per record.
type recordRows struct {
	job                                 jobRow
	event                               eventRow
	host                                hostRow
	lease                               leaseRow
	hasJob, hasEvent, hasHost, hasLease bool
}

// batch is what has been read since the last commit: the rows to insert and,
// per topic and partition, the offset to commit once they are in.
type batch struct {
	rows
	next    map[string]map[int32]kgo.EpochOffset
	records int
	started time.Time
}

func newBatch() batch { return batch{next: map[string]map[int32]kgo.EpochOffset{}} }

// reset empties the batch after its flush but keeps its row slices: a
// batch of tens of thousands of rows would otherwise regrow them, copying
// every row several times, for each flush. Their old rows are cleared so no
// payload outlives its batch.
func (b *batch) reset() {
	clear(b.jobs)
	clear(b.events)
	clear(b.hosts)
	clear(b.leases)
	b.rows = rows{jobs: b.jobs[:0], events: b.events[:0], hosts: b.hosts[:0], leases: b.leases[:0]}
	b.next = map[string]map[int32]kgo.EpochOffset{}
	b.records = 0
	b.started = time.Time{}
}

// grow makes room for the rows of krs at most, by their topics, so that a
// large poll grows the row slices once instead of doubling them repeatedly.
func (b *batch) grow(krs []*kgo.Record) {
	var vm, hosts, leases int
	for _, kr := range krs {
		switch kr.Topic {
		case schemas.TopicHostStatus:
			hosts++
		case schemas.TopicLeaseEvents:
			leases++
		default:
			vm++
		}
	}
	b.jobs = slices.Grow(b.jobs, vm)
	b.events = slices.Grow(b.events, vm)
	b.hosts = slices.Grow(b.hosts, hosts)
	b.leases = slices.Grow(b.leases, leases)
}

// add takes a record and its rows; a dead-lettered record brings no rows but
// its offset, so it is committed with the batch.
func (b *batch) add(kr *kgo.Record, rr *recordRows) {
	if b.records == 0 {
		b.started = time.Now()
	}
	b.records++
	if b.next[kr.Topic] == nil {
		b.next[kr.Topic] = map[int32]kgo.EpochOffset{}
	}
	b.next[kr.Topic][kr.Partition] = kgo.EpochOffset{Epoch: kr.LeaderEpoch, Offset: kr.Offset + 1}
	if rr.hasJob {
		b.jobs = append(b.jobs, rr.job)
	}
	if rr.hasEvent {
		b.events = append(b.events, rr.event)
	}
	if rr.hasHost {
		b.hosts = append(b.hosts, rr.host)
	}
	if rr.hasLease {
		b.leases = append(b.leases, rr.lease)
	}
}

// takeBack puts an older batch, read before this one and put off in
// flight, in front of it: its rows first, its offsets where this batch has
// none of the partition (this batch's are further).
func (b *batch) takeBack(older *batch) {
	b.jobs = append(older.jobs, b.jobs...)
	b.events = append(older.events, b.events...)
	b.hosts = append(older.hosts, b.hosts...)
	b.leases = append(older.leases, b.leases...)
	for topic, parts := range older.next {
		if b.next[topic] == nil {
			b.next[topic] = map[int32]kgo.EpochOffset{}
		}
		for p, o := range parts {
			if _, ok := b.next[topic][p]; !ok {
				b.next[topic][p] = o
			}
		}
	}
	b.records += older.records
	if !older.started.IsZero() {
		b.started = older.started
	}
}

// drop removes the rows and offsets of the given partitions, by topic.
func (b *batch) drop(gone map[string][]int32) {
	if len(gone) == 0 {
		return
	}
	out := func(topic string, p int32) bool { return slices.Contains(gone[topic], p) }
	b.jobs = slices.DeleteFunc(b.jobs, func(r jobRow) bool { return out(r.Topic, r.Partition) })
	b.events = slices.DeleteFunc(b.events, func(r eventRow) bool { return out(r.Topic, r.Partition) })
	b.hosts = slices.DeleteFunc(b.hosts, func(r hostRow) bool { return out(r.Topic, r.Partition) })
	b.leases = slices.DeleteFunc(b.leases, func(r leaseRow) bool { return out(r.Topic, r.Partition) })
	for topic, parts := range gone {
		for _, p := range parts {
			delete(b.next[topic], p)
		}
		if len(b.next[topic]) == 0 {
			delete(b.next, topic)
		}
	}
	// records only says whether there is something to commit; a batch left
	// with offsets of kept partitions still needs its flush.
	b.records = 0
	for _, parts := range b.next {
		b.records += len(parts)
	}
	if b.records == 0 {
		b.started = time.Time{}
	}
}
