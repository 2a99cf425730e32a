package kafka

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// PositionReader reads partitions of one topic, read_committed, each from a
// start offset up to an end offset (exclusive), and knows where it stands:
// a partition is read when its position — the offset after the last batch
// the broker returned — reaches its end. A record-driven reader ("stop when
// the record at end-1 arrives") hangs whenever that offset is never
// delivered: a transaction aborted without a marker (a broker that reloads
// its log aborts the transactions left open and writes none), a marker
// compacted away, the records of any aborted transaction. The position
// passes them all, since every batch, kept or filtered, moves it.
//
// It sends its own Fetch requests to each partition's leader and decodes
// them with kgo.ProcessFetchPartition, which filters aborted transactions
// and control records and returns the next offset. It is for bounded
// reads of a known prefix (a processor's changelog restore), not for
// following a topic.
type PositionReader struct {
	cl    *kgo.Client
	adm   *kadm.Client
	topic string
	pos   map[int32]int64
	end   map[int32]int64

	topicID [16]byte
	leaders map[int32]int32 // partition → broker; nil: ask the metadata
	// maxBytes is what a Fetch asks of each partition, four times that
	// in all: answers of a few MiB let a reader's caller work on one
	// while the broker assembles the next (a processor's restore).
	maxBytes int32
	decomp   kgo.Decompressor
}

// NewPositionReader reads topic's partitions from[p] up to to[p] through cl.
// A partition whose start is not below its end is read already.
func NewPositionReader(cl *kgo.Client, topic string, from, to map[int32]int64) *PositionReader {
	r := &PositionReader{cl: cl, adm: kadm.NewClient(cl), topic: topic, pos: map[int32]int64{}, end: map[int32]int64{},
		maxBytes: 1 << 20, decomp: kgo.DefaultDecompressor()}
	for p, e := range to {
		if s := from[p]; s < e {
			r.pos[p], r.end[p] = s, e
		}
	}
	return r
}

// Done reports whether every partition's position has reached its end.
func (r *PositionReader) Done() bool { return len(r.end) == 0 }

// Left describes the partitions not read to their end, as
// "partition 2 at 353 of 356", in partition order.
func (r *PositionReader) Left() string {
	parts := make([]int32, 0, len(r.end))
	for p := range r.end {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = fmt.Sprintf("partition %d at %d of %d", p, r.pos[p], r.end[p])
	}
	return strings.Join(out, ", ")
}

// Fetch asks each leader once for the partitions left and returns the
// committed data records below the ends, in offset order per partition. It
// reports whether any position moved. A retryable broker error (leader
// moved, broker restarting) is no error: the next Fetch asks the metadata
// again.
func (r *PositionReader) Fetch(ctx context.Context) ([]*kgo.Record, bool, error) {
	if r.Done() {
		return nil, false, nil
	}
	if r.leaders == nil {
		if err := r.lookup(ctx); err != nil {
			return nil, false, err
		}
	}
	byLeader := map[int32][]int32{}
	for p := range r.end {
		l, ok := r.leaders[p]
		if !ok {
			r.leaders = nil // no leader now (a broker restarting)
			return nil, false, pause(ctx)
		}
		byLeader[l] = append(byLeader[l], p)
	}
	var recs []*kgo.Record
	moved := false
	for leader, parts := range byLeader {
		got, m, err := r.fetchFrom(ctx, leader, parts)
		if err != nil {
			return recs, moved, err
		}
		recs = append(recs, got...)
		moved = moved || m
	}
	return recs, moved, nil
}

// lookup reads the topic's id and partition leaders.
func (r *PositionReader) lookup(ctx context.Context) error {
	md, err := r.adm.Metadata(ctx, r.topic)
	if err != nil {
		return fmt.Errorf("metadata of %s: %w", r.topic, err)
	}
	t, ok := md.Topics[r.topic]
	if !ok || t.Err != nil {
		return fmt.Errorf("metadata of %s: %v", r.topic, t.Err)
	}
	r.topicID = t.ID
	r.leaders = map[int32]int32{}
	for _, p := range t.Partitions {
		if p.Err == nil && p.Leader >= 0 {
			r.leaders[p.Partition] = p.Leader
		}
	}
	return nil
}

// fetchFrom sends one Fetch for parts to leader and applies the answer.
func (r *PositionReader) fetchFrom(ctx context.Context, leader int32, parts []int32) ([]*kgo.Record, bool, error) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 500
	req.MinBytes = 1
	req.MaxBytes = r.maxBytes * 4
	req.IsolationLevel = 1 // read_committed: nothing past the last stable offset
	req.SessionEpoch = -1  // no fetch session: every request names its partitions
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = r.topic, r.topicID
	for _, p := range parts {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, r.pos[p], r.maxBytes
		rp.CurrentLeaderEpoch, rp.LogStartOffset = -1, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	kresp, err := r.cl.Broker(int(leader)).Request(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		r.leaders = nil // the broker may be gone: ask again next time
		return nil, false, pause(ctx)
	}
	resp := kresp.(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		if kerr.IsRetriable(err) {
			r.leaders = nil
			return nil, false, pause(ctx)
		}
		return nil, false, fmt.Errorf("fetch %s: %w", r.topic, err)
	}
	var recs []*kgo.Record
	moved, anyBatches := false, false
	var empty []*kmsg.FetchResponseTopicPartition
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			rp := &resp.Topics[i].Partitions[j]
			got, m, err := r.apply(ctx, rp)
			if err != nil {
				return recs, moved, err
			}
			recs = append(recs, got...)
			moved = moved || m
			if len(rp.RecordBatches) > 0 {
				anyBatches = true
			} else if rp.ErrorCode == 0 {
				empty = append(empty, rp)
			}
		}
	}
	if !anyBatches {
		// The broker had nothing between a position and the last stable
		// offset it reports: what is left below the end does not exist
		// (removed by compaction or retention). Only judged when no
		// partition of the answer had data, since a full answer may leave
		// later partitions empty.
		for _, rp := range empty {
			if end, ok := r.end[rp.Partition]; ok && rp.LastStableOffset >= end {
				r.pos[rp.Partition] = end
				delete(r.end, rp.Partition)
				moved = true
			}
		}
	}
	return recs, moved, nil
}

// apply takes one partition of a Fetch answer.
func (r *PositionReader) apply(ctx context.Context, rp *kmsg.FetchResponseTopicPartition) ([]*kgo.Record, bool, error) {
	p := rp.Partition
	end, ok := r.end[p]
	if !ok {
		return nil, false, nil
	}
	switch err := kerr.ErrorForCode(rp.ErrorCode); {
	case err == nil:
	case errors.Is(err, kerr.OffsetOutOfRange):
		// The log starts later than the position (retention, or a
		// compaction that removed the head): go on from its start.
		start, lerr := r.startOf(ctx, p)
		if lerr != nil {
			return nil, false, lerr
		}
		if start <= r.pos[p] {
			return nil, false, fmt.Errorf("%s/%d: offset %d out of range with the log starting at %d", r.topic, p, r.pos[p], start)
		}
		r.pos[p] = start
		if start >= end {
			delete(r.end, p)
		}
		return nil, true, nil
	case kerr.IsRetriable(err):
		r.leaders = nil
		return nil, false, pause(ctx)
	default:
		return nil, false, fmt.Errorf("fetch %s/%d at %d: %w", r.topic, p, r.pos[p], err)
	}
	if rp.HighWatermark >= 0 && rp.HighWatermark < end {
		// The log is shorter than it was when the end was listed (an
		// unclean leader election, a broker that lost unsynced writes):
		// what is gone cannot be waited for.
		end = rp.HighWatermark
		r.end[p] = end
		if r.pos[p] >= end {
			delete(r.end, p)
			return nil, true, nil
		}
	}
	from := r.pos[p]
	fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
		Offset: from, IsolationLevel: kgo.ReadCommitted(), Topic: r.topic, Partition: p,
	}, rp, r.decomp, nil)
	if fp.Err != nil && len(fp.Records) == 0 {
		return nil, false, fmt.Errorf("decode %s/%d at %d: %w", r.topic, p, from, fp.Err)
	}
	var recs []*kgo.Record
	for _, kr := range fp.Records {
		if kr.Offset >= from && kr.Offset < end {
			recs = append(recs, kr)
		}
	}
	if next <= from {
		if len(rp.RecordBatches) > 0 && r.maxBytes < 256<<20 {
			r.maxBytes *= 2 // a batch larger than asked for came cut
		}
		return recs, false, nil
	}
	r.pos[p] = next
	if next >= end {
		delete(r.end, p)
	}
	return recs, true, nil
}

// startOf lists a partition's log start offset.
func (r *PositionReader) startOf(ctx context.Context, p int32) (int64, error) {
	starts, err := r.adm.ListStartOffsets(ctx, r.topic)
	if err != nil {
		return 0, fmt.Errorf("list start offsets of %s: %w", r.topic, err)
	}
	o, ok := starts.Lookup(r.topic, p)
	if !ok || o.Err != nil {
		return 0, fmt.Errorf("no start offset for %s/%d: %v", r.topic, p, o.Err)
	}
	return o.Offset, nil
}

// pause waits a little before a retry after a retryable error, so that a
// caller looping on Fetch does not spin while a broker restarts.
func pause(ctx context.Context) error {
	t := time.NewTimer(200 * time.Millisecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
