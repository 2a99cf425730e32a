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
	adm     *kadm.Client
	sources []LagSource
}

// RegisterLag adds sources to the kafka_consumergroup_lag gauge of
// Default, read through cl (the first client registered is kept).
func RegisterLag(cl *kgo.Client, sources ...LagSource) {
	lag.Lock()
	if lag.adm == nil {
		lag.adm = kadm.NewClient(cl)
	}
	lag.sources = append(lag.sources, sources...)
	lag.Unlock()
	Default.GaugeFunc("kafka_consumergroup_lag",
		"Records a consumer group has yet to process, per group, topic and partition (end offset minus the group's position).",
		[]string{"consumergroup", "topic", "partition"}, collectLag)
}

func collectLag(emit func(float64, ...string)) {
	lag.Lock()
	adm, sources := lag.adm, append([]LagSource(nil), lag.sources...)
	lag.Unlock()
	if adm == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, l := range ComputeLag(ctx, adm, sources) {
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
