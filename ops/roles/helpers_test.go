package roles

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/processors/runtime"
)

// client is a plain Kafka client for a test, closed when it ends.
func client(t *testing.T, kcfg kafka.Config) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kcfg.Opts()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// startProcessors runs processors of the given kinds until the test ends.
func startProcessors(t *testing.T, o Options, set Settings, clock runtime.Clock, kinds ...string) {
	t.Helper()
	for _, kind := range kinds {
		p, err := NewProcessor(kind, o, set, clock)
		if err != nil {
			t.Fatal(err)
		}
		go p.Run(t.Context())
	}
}

// readToEnd hands each record of topics, from the start, to each, until it
// has read up to the end offsets the topics had when it began (transaction
// markers count: it reads them and passes them on only as control
// records, which each must skip). When ctx ends first it says which
// partitions were not read to their end; what was read by then has been
// handed on.
func readToEnd(ctx context.Context, kcfg kafka.Config, topics []string, each func(*kgo.Record) error) error {
	cl, err := kgo.NewClient(kcfg.Opts(kgo.ConsumeTopics(topics...), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.KeepControlRecords())...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topics...)
	if err != nil {
		return err
	}
	left := map[string]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			left[fmt.Sprintf("%s/%d", o.Topic, o.Partition)] = o.Offset
		}
	})
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("%v not read to their end: partitions %v left", topics, left)
		}
		for _, kr := range fs.Records() {
			tp := fmt.Sprintf("%s/%d", kr.Topic, kr.Partition)
			if end, ok := left[tp]; ok && kr.Offset+1 >= end {
				delete(left, tp)
			}
			if err := each(kr); err != nil {
				return err
			}
		}
	}
	return nil
}
