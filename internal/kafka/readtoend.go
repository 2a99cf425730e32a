package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ReadToEnd hands each record of topics, from the start (read_committed),
// to each, until it has read up to the end offsets the topics had when it
// began. Transaction markers count: it reads them and hands them on as
// control records, which each must skip. When ctx ends first it says which
// partitions were not read to their end; what was read by then has been
// handed on. topics are logical names, and so are the records' (c.Prefix
// is applied to what the client reads). It is for tools and tests that look back over a log (a
// benchmark's record times, a test's timeline), never for a processor.
func ReadToEnd(ctx context.Context, c Config, topics []string, each func(*kgo.Record) error) error {
	cl, err := kgo.NewClient(c.Opts(kgo.ConsumeTopics(c.Topics(topics...)...), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.KeepControlRecords())...)
	if err != nil {
		return err
	}
	defer cl.Close()
	left, err := endOffsets(ctx, kadm.NewClient(cl), c.Topics(topics...))
	if err != nil {
		return err
	}
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
			kr.Topic = c.Logical(kr.Topic)
			if err := each(kr); err != nil {
				return err
			}
		}
	}
	return nil
}

// endOffsets lists the non-empty partitions of topics ("topic/partition")
// with their end offsets.
func endOffsets(ctx context.Context, adm *kadm.Client, topics []string) (map[string]int64, error) {
	ends, err := ListOffsets(ctx, adm.ListEndOffsets, topics...)
	if err != nil {
		return nil, err
	}
	left := map[string]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			left[fmt.Sprintf("%s/%d", o.Topic, o.Partition)] = o.Offset
		}
	})
	return left, nil
}
