package crashloop

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
)

type tp struct {
	topic string
	part  int32
}

func (p tp) String() string { return fmt.Sprintf("%s/%d", p.topic, p.part) }

// lastStable lists the last stable offset of every partition of topics.
func lastStable(ctx context.Context, cl *kgo.Client, topics ...string) (map[tp]int64, error) {
	listed, err := kafka.ListOffsets(ctx, kadm.NewClient(cl).ListCommittedOffsets, topics...)
	if err != nil {
		return nil, err
	}
	out := map[tp]int64{}
	listed.Each(func(o kadm.ListedOffset) {
		if o.Err == nil && o.Partition >= 0 {
			out[tp{o.Topic, o.Partition}] = o.Offset
		}
	})
	return out, nil
}

// readStats says how a read ended: partitions whose last delivered record
// lies below their end were ended by silence, their tail being
// transaction markers or aborted records, which a read_committed consumer
// never gets.
type readStats struct {
	records int
	silent  []string // "vm.events.v1/3 last 120 of 122"
}

// readLog hands each committed record of topics from the start up to the
// last stable offsets listed when it begins, read_committed, to each.
func readLog(ctx context.Context, kcfg kafka.Config, admin *kgo.Client, topics []string, each func(*kgo.Record)) (readStats, error) {
	ends, err := lastStable(ctx, admin, topics...)
	if err != nil {
		return readStats{}, err
	}
	from := map[tp]int64{}
	for p, e := range ends {
		if e > 0 {
			from[p] = 0
		}
	}
	return readRange(ctx, kcfg, from, ends, each)
}

// readRange reads each partition of from, read_committed, from its offset
// up to (not including) its end. A partition is read when a record at or
// past end-1 comes, or when nothing below the ends has come for
// quietFor: a read_committed fetch skips markers and aborted records, so
// the last offsets of a partition may never be delivered.
func readRange(ctx context.Context, kcfg kafka.Config, from, ends map[tp]int64, each func(*kgo.Record)) (readStats, error) {
	const quietFor = 3 * time.Second
	offsets := map[string]map[int32]kgo.Offset{}
	left := map[tp]int64{} // partition → last offset delivered (-1 none)
	for p, o := range from {
		if o >= ends[p] {
			continue
		}
		if offsets[p.topic] == nil {
			offsets[p.topic] = map[int32]kgo.Offset{}
		}
		offsets[p.topic][p.part] = kgo.NewOffset().At(o)
		left[p] = o - 1
	}
	var st readStats
	if len(left) == 0 {
		return st, nil
	}
	cl, err := kgo.NewClient(kcfg.Opts(kgo.ConsumePartitions(offsets), kgo.FetchMaxWait(300*time.Millisecond))...)
	if err != nil {
		return st, err
	}
	defer cl.Close()
	quietSince := time.Now()
	for len(left) > 0 {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			return st, fmt.Errorf("read not finished: %s", leftText(left, ends))
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				ferr = errors.Join(ferr, fmt.Errorf("fetch %s/%d: %w", t, p, err))
			}
		})
		if ferr != nil {
			return st, ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			p := tp{r.Topic, r.Partition}
			last, reading := left[p]
			if !reading {
				return
			}
			if r.Offset >= ends[p] {
				delete(left, p)
				return
			}
			quietSince = time.Now()
			st.records++
			each(r)
			if r.Offset+1 >= ends[p] {
				delete(left, p)
			} else if r.Offset > last {
				left[p] = r.Offset
			}
		})
		if time.Since(quietSince) >= quietFor {
			for p, last := range left {
				st.silent = append(st.silent, fmt.Sprintf("%s last delivered %d of end %d", p, last, ends[p]))
			}
			sort.Strings(st.silent)
			break
		}
	}
	return st, nil
}

func leftText(left, ends map[tp]int64) string {
	var parts []string
	for p, last := range left {
		parts = append(parts, fmt.Sprintf("%s at %d of %d", p, last+1, ends[p]))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
