package telemetry

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// LagSource is one consumer group whose lag /metrics reports.
type LagSource struct {
	Group string
	// Positions, when set, returns the group's next offsets per topic and
	// partition: for a consumer that stores its positions beside its rows
	// (the Postgres projector) rather than in Kafka. Nil reads the group's
	// committed offsets with kadm.
	Positions func(context.Context) (map[string]map[int32]int64, error)
	// Topics are the topics of a Positions source, for the end offsets.
	Topics []string
}

// lag collects kafka_consumergroup_lag for every registered source of this
// process, at scrape time, with one admin client.
var lag struct {
	sync.Mutex
	cl      *kgo.Client
	adm     *kadm.Client
	sources []LagSource
}

// RegisterLag adds sources to the kafka_consumergroup_lag gauge of
// Default, read through cl (the first client registered is kept).
func RegisterLag(cl *kgo.Client, sources ...LagSource) {
	lag.Lock()
	if lag.adm == nil {
		lag.cl, lag.adm = cl, kadm.NewClient(cl)
	}
	lag.sources = append(lag.sources, sources...)
	lag.Unlock()
	Default.GaugeFunc(lagName, lagHelp, lagLabels, collectLag)
}

func collectLag(emit func(float64, ...string)) {
	lag.Lock()
	cl, adm, sources := lag.cl, lag.adm, append([]LagSource(nil), lag.sources...)
	lag.Unlock()
	if adm == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, l := range ExcludeMarkers(ctx, cl, ComputeLag(ctx, adm, sources)) {
		emit(float64(l.Lag), l.Group, l.Topic, strconv.Itoa(int(l.Partition)))
	}
}

// PartitionLag is the lag of one group on one partition.
type PartitionLag struct {
	Group     string
	Topic     string
	Partition int32
	Lag       int64
}

// ComputeLag returns the lag of every source's partitions; sources whose
// offsets cannot be read are left out (a scrape never fails on them).
func ComputeLag(ctx context.Context, adm *kadm.Client, sources []LagSource) []PartitionLag {
	var out []PartitionLag
	var kafkaGroups []string
	for _, s := range sources {
		if s.Positions == nil {
			kafkaGroups = append(kafkaGroups, s.Group)
		}
	}
	if len(kafkaGroups) > 0 {
		lags, err := adm.Lag(ctx, kafkaGroups...)
		if err == nil {
			for _, g := range lags.Sorted() {
				for _, m := range g.Lag.Sorted() {
					if m.Err == nil && m.Lag >= 0 {
						out = append(out, PartitionLag{g.Group, m.Topic, m.Partition, m.Lag})
					}
				}
			}
		}
	}
	for _, s := range sources {
		if s.Positions == nil {
			continue
		}
		ends, err := adm.ListEndOffsets(ctx, s.Topics...)
		if err != nil {
			continue
		}
		pos, err := s.Positions(ctx)
		if err != nil {
			continue
		}
		ends.Each(func(o kadm.ListedOffset) {
			if o.Err != nil {
				return
			}
			next, ok := pos[o.Topic][o.Partition]
			if !ok {
				// Never applied here: everything up to the end is behind,
				// unless the partition is empty.
				next = 0
			}
			out = append(out, PartitionLag{s.Group, o.Topic, o.Partition, max(o.Offset-next, 0)})
		})
	}
	return out
}

// ExcludeMarkers corrects small lags for transaction markers. A partition
// written by transactions ends with a commit marker, which takes an offset
// but is never delivered; a transactional consumer commits the offset after
// its last record, so at rest the end is one past its position and the raw
// lag reads 1 (kafka-consumer-groups shows the same). For lags up to
// markerCheck it reads the committed records left and reports their count.
func ExcludeMarkers(ctx context.Context, cl *kgo.Client, lags []PartitionLag) []PartitionLag {
	checked, topics := markerPartitions(lags)
	if len(checked) == 0 || cl == nil {
		return lags
	}
	ends, err := endOffsets(ctx, cl, checked, topics)
	if err != nil {
		return lags
	}
	records, err := committedOffsets(ctx, cl, readStarts(lags, ends), ends)
	if err != nil {
		return lags
	}
	return recount(lags, ends, records)
}

// markerCheck is the largest lag ExcludeMarkers looks into.
const markerCheck = 64

// topicPartition names a partition.
type topicPartition struct {
	topic string
	part  int32
}

// mayBeMarkers reports whether l is small enough to be looked into.
func mayBeMarkers(l PartitionLag) bool { return l.Lag > 0 && l.Lag <= markerCheck }

// markerPartitions returns the partitions whose lag is looked into, and
// their topics.
func markerPartitions(lags []PartitionLag) (map[topicPartition]bool, []string) {
	checked := map[topicPartition]bool{}
	var topics []string
	seen := map[string]bool{}
	for _, l := range lags {
		if !mayBeMarkers(l) {
			continue
		}
		// A partition that several groups read is read once, from the
		// lowest of their positions (readStarts).
		checked[topicPartition{l.Topic, l.Partition}] = true
		if !seen[l.Topic] {
			seen[l.Topic] = true
			topics = append(topics, l.Topic)
		}
	}
	return checked, topics
}

// endOffsets returns the end offset of each checked partition that has one.
func endOffsets(ctx context.Context, cl *kgo.Client, checked map[topicPartition]bool, topics []string) (map[topicPartition]int64, error) {
	listed, err := kadm.NewClient(cl).ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, err
	}
	ends := map[topicPartition]int64{}
	listed.Each(func(o kadm.ListedOffset) {
		if k := (topicPartition{o.Topic, o.Partition}); checked[k] && o.Err == nil {
			ends[k] = o.Offset
		}
	})
	return ends, nil
}

// readStarts returns where the read of each partition starts: the position
// of a lag is its partition's end minus the lag, and the lowest position
// over groups is where the read starts.
func readStarts(lags []PartitionLag, ends map[topicPartition]int64) map[string]map[int32]kgo.Offset {
	start := map[topicPartition]int64{}
	for _, l := range lags {
		k := topicPartition{l.Topic, l.Partition}
		end, ok := ends[k]
		if !ok || !mayBeMarkers(l) {
			continue
		}
		pos := end - l.Lag
		if s, ok := start[k]; !ok || pos < s {
			start[k] = pos
		}
	}
	offsets := map[string]map[int32]kgo.Offset{}
	for k, s := range start {
		if offsets[k.topic] == nil {
			offsets[k.topic] = map[int32]kgo.Offset{}
		}
		offsets[k.topic][k.part] = kgo.NewOffset().At(s)
	}
	return offsets
}

// committedOffsets reads the committed records from offsets until the
// fetches run dry, and returns the offsets of those before their
// partition's end.
func committedOffsets(ctx context.Context, cl *kgo.Client, offsets map[string]map[int32]kgo.Offset, ends map[topicPartition]int64) (map[topicPartition][]int64, error) {
	rd, err := kgo.NewClient(append(cl.Opts(), kgo.ConsumePartitions(offsets), kgo.FetchIsolationLevel(kgo.ReadCommitted()))...)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	records := map[topicPartition][]int64{}
	for {
		pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		fs := rd.PollFetches(pctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			n++
			k := topicPartition{r.Topic, r.Partition}
			if r.Offset < ends[k] {
				records[k] = append(records[k], r.Offset)
			}
		})
		if n == 0 || ctx.Err() != nil {
			return records, nil
		}
	}
}

// recount returns lags with each lag looked into replaced by the count of
// committed records after its position.
func recount(lags []PartitionLag, ends map[topicPartition]int64, records map[topicPartition][]int64) []PartitionLag {
	out := make([]PartitionLag, len(lags))
	for i, l := range lags {
		out[i] = l
		k := topicPartition{l.Topic, l.Partition}
		end, ok := ends[k]
		if !ok || !mayBeMarkers(l) {
			continue
		}
		pos, left := end-l.Lag, int64(0)
		for _, o := range records[k] {
			if o >= pos {
				left++
			}
		}
		out[i].Lag = left
	}
	return out
}
