package telemetry

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// deadLetters is the client vmplane_dead_letters reads dlq.v1's offsets
// through: the last one registered, since a role restarted in the same
// process registers its new client.
var deadLetters struct {
	sync.Mutex
	adm   *kadm.Client
	topic string
}

// RegisterDeadLetters makes vmplane_dead_letters read the start and end
// offsets of topic, dlq.v1's name on the cluster (with the install's topic
// prefix), through cl at each scrape: two ListOffsets requests, however
// many dead letters there are, and right across restarts and instances,
// where a counter of this process's dead letters is neither.
func RegisterDeadLetters(cl *kgo.Client, topic string) {
	deadLetters.Lock()
	deadLetters.adm, deadLetters.topic = kadm.NewClient(cl), topic
	deadLetters.Unlock()
	Default.GaugeFunc(deadLettersName, dlqHelp, nil, collectDeadLetters)
}

func collectDeadLetters(emit func(float64, ...string)) {
	deadLetters.Lock()
	adm, topic := deadLetters.adm, deadLetters.topic
	deadLetters.Unlock()
	if adm == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if n, ok := CountDeadLetters(ctx, adm, topic); ok {
		emit(float64(n))
	}
}

// CountDeadLetters returns the offsets the dead-letter topic (dlq.v1 under
// its name on the cluster) holds, end minus start over its partitions;
// false when they cannot be read, and the scrape then has no sample rather
// than a wrong one.
func CountDeadLetters(ctx context.Context, adm *kadm.Client, topic string) (int64, bool) {
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return 0, false
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, false
	}
	var n int64
	ok := true
	ends.Each(func(e kadm.ListedOffset) {
		s, found := starts.Lookup(e.Topic, e.Partition)
		if e.Err != nil || !found || s.Err != nil {
			ok = false
			return
		}
		n += max(e.Offset-s.Offset, 0)
	})
	return n, ok && len(ends) > 0
}
