package sim

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/schemas"
)

// entry is one record of a partition, encoded as the broker keeps it: a
// nil value is a tombstone.
type entry struct {
	key     string
	value   []byte
	headers map[string]string
	at      int64 // the record's timestamp, Unix milliseconds
}

// tp names a partition of a topic.
type tp struct {
	topic string
	part  int32
}

// memLog is the in-memory broker. It keeps exactly what the processors may
// count on: per-partition order, transactions whose records and consumer
// offsets become visible together or not at all (a read_committed consumer
// never sees an aborted or open transaction, so one that is still open is
// simply not in the log yet), and committed offsets per consumer group.
// Records produced outside transactions are appended one at a time, in the
// order their producer's per-partition queue delivers them.
type memLog struct {
	parts map[tp][]entry
	// versions counts the appends to each topic: a reader that saw a
	// topic at a version has nothing new to read until it changes.
	versions map[string]uint64
	offsets  map[string]map[tp]int64 // group → partition → next offset
	counts   map[string]int32
	// hashed remembers the partition of each key by partition count:
	// franz-go's partitioner seeds a random source per topic it is asked
	// for, which would cost more than the whole step.
	hasher kgo.TopicPartitioner
	hashed map[int32]map[string]int32
}

func newMemLog() *memLog {
	l := &memLog{parts: map[tp][]entry{}, versions: map[string]uint64{}, offsets: map[string]map[tp]int64{},
		counts: map[string]int32{}, hasher: kgo.StickyKeyPartitioner(nil).ForTopic(""), hashed: map[int32]map[string]int32{}}
	for _, t := range schemas.Topics {
		l.counts[t.Name] = t.PartitionsOf()
	}
	return l
}

// partitionOf hashes a key as every vmplane producer does (Kafka's
// murmur2), so a record lands where the real partitioner would put it.
func (l *memLog) partitionOf(topic, key string) int32 {
	n := l.counts[topic]
	if n <= 1 || key == "" {
		// An unkeyed record goes to a random partition in Kafka; every
		// vmplane record has a key, and the world stays deterministic.
		return 0
	}
	m := l.hashed[n]
	if m == nil {
		m = map[string]int32{}
		l.hashed[n] = m
	}
	p, ok := m[key]
	if !ok {
		p = int32(l.hasher.Partition(&kgo.Record{Key: []byte(key)}, int(n)))
		m[key] = p
	}
	return p
}

// partitions returns the partition count of a topic.
func (l *memLog) partitions(topic string) int32 { return l.counts[topic] }

// read returns the record at offset o of a partition, if there is one.
func (l *memLog) read(p tp, o int64) (entry, bool) {
	es := l.parts[p]
	if o < 0 || o >= int64(len(es)) {
		return entry{}, false
	}
	return es[o], true
}

// end is the offset the next record of the partition gets.
func (l *memLog) end(p tp) int64 { return int64(len(l.parts[p])) }

// committed returns a group's committed offset of a partition (0 when it
// committed none: the group reads from the start).
func (l *memLog) committed(group string, p tp) int64 { return l.offsets[group][p] }

// appendOne appends a record produced outside a transaction.
func (l *memLog) appendOne(p tp, e entry) {
	if _, ok := l.counts[p.topic]; !ok {
		panic(fmt.Sprintf("sim: no topic %s", p.topic))
	}
	l.parts[p] = append(l.parts[p], e)
	l.versions[p.topic]++
}

// version is the count of appends to a topic so far.
func (l *memLog) version(topic string) uint64 { return l.versions[topic] }

// commitOffsets commits a group's offsets outside a transaction (an
// agent's auto-commit).
func (l *memLog) commitOffsets(group string, offs map[tp]int64) {
	g := l.offsets[group]
	if g == nil {
		g = map[tp]int64{}
		l.offsets[group] = g
	}
	for p, o := range offs {
		g[p] = o
	}
}

// txn is a transaction being built: nothing of it is in the log until
// commit.
type txn struct {
	group   string
	records []txnRecord
	offsets map[tp]int64
}

type txnRecord struct {
	p tp
	e entry
}

// commit makes a transaction's records and offsets visible at once.
func (l *memLog) commit(t *txn) {
	for _, r := range t.records {
		l.appendOne(r.p, r.e)
	}
	l.commitOffsets(t.group, t.offsets)
}
