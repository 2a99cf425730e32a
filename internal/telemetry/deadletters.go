package telemetry

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/schemas"
)

// deadLetters is the client vmplane_dead_letters reads dlq.v1's offsets
// through: the last one registered, since a role restarted in the same
// process registers its new client.
var deadLetters struct {
	sync.Mutex
	adm *kadm.Client
}

// RegisterDeadLetters makes vmplane_dead_letters read dlq.v1's start and
// end offsets through cl at each scrape: two ListOffsets requests, however
// many dead letters there are, and right across restarts and instances,
// where a counter of this process's dead letters is neither.
func RegisterDeadLetters(cl *kgo.Client) {
	deadLetters.Lock()
	deadLetters.adm = kadm.NewClient(cl)
	deadLetters.Unlock()
	Default.GaugeFunc(deadLettersName, dlqHelp, nil, collectDeadLetters)
}

func collectDeadLetters(emit func(float64, ...string)) {
	deadLetters.Lock()
	adm := deadLetters.adm
	deadLetters.Unlock()
	if adm == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if n, ok := CountDeadLetters(ctx, adm); ok {
		emit(float64(n))
	}
}

// CountDeadLetters returns the offsets dlq.v1 holds (end minus start over
// its partitions); false when they cannot be read, and the scrape then
// has no sample rather than a wrong one.
func CountDeadLetters(ctx context.Context, adm *kadm.Client) (int64, bool) {
	starts, err := adm.ListStartOffsets(ctx, schemas.TopicDLQ)
	if err != nil {
		return 0, false
	}
	ends, err := adm.ListEndOffsets(ctx, schemas.TopicDLQ)
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
