package runtime

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/schemas"
)

// restore reads the changelog partitions from the start up to their last
// stable offset and loads the latest state of every key. Control records
// are kept by the restore client so that the end of a partition, which is
// always a transaction marker, is seen.
func (p *Processor[S]) restore(ctx context.Context, cl *kgo.Client, parts []int32) (int, error) {
	lso, err := kadm.NewClient(cl).ListCommittedOffsets(ctx, p.cfg.Changelog)
	if err != nil {
		return 0, fmt.Errorf("list offsets of %s: %w", p.cfg.Changelog, err)
	}
	starts, err := kadm.NewClient(cl).ListStartOffsets(ctx, p.cfg.Changelog)
	if err != nil {
		return 0, fmt.Errorf("list start offsets of %s: %w", p.cfg.Changelog, err)
	}
	end := map[int32]int64{}
	offsets := map[int32]kgo.Offset{}
	for _, part := range parts {
		o, ok := lso.Lookup(p.cfg.Changelog, part)
		if !ok || o.Err != nil {
			return 0, fmt.Errorf("no end offset for %s/%d: %v", p.cfg.Changelog, part, o.Err)
		}
		s, _ := starts.Lookup(p.cfg.Changelog, part)
		if o.Offset > s.Offset {
			end[part] = o.Offset
			offsets[part] = kgo.NewOffset().AtStart()
		}
	}
	// A partition's keys are restored from scratch: whatever an earlier
	// owner period left of them is forgotten first.
	for _, part := range parts {
		p.st.drop(part)
	}
	if len(end) == 0 {
		return 0, nil
	}
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{p.cfg.Changelog: offsets})
	defer func() {
		ps := make([]int32, 0, len(offsets))
		for part := range offsets {
			ps = append(ps, part)
		}
		cl.RemoveConsumePartitions(map[string][]int32{p.cfg.Changelog: ps})
	}()
	deadline := time.Now().Add(5 * time.Minute)
	for len(end) > 0 {
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("restore of %s timed out with partitions %v left", p.cfg.Changelog, end)
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fetches := cl.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		var ferr error
		fetches.EachError(func(_ string, _ int32, err error) {
			if err != context.DeadlineExceeded && err != context.Canceled {
				ferr = err
			}
		})
		if ferr != nil {
			return 0, ferr
		}
		for _, r := range fetches.Records() {
			stop, ok := end[r.Partition]
			if !ok {
				continue
			}
			if r.Offset+1 >= stop {
				delete(end, r.Partition)
			}
			if r.Attrs.IsControl() || r.Offset >= stop {
				continue
			}
			key := string(r.Key)
			if r.Value == nil || p.cfg.SkipDecode {
				p.st.remove(r.Partition, key)
				continue
			}
			v, err := p.codec.DecodeAt(ctx, r.Topic, r.Partition, r.Offset, r.Value)
			if err != nil {
				return 0, err
			}
			s, ok := v.(S)
			if !ok {
				return 0, fmt.Errorf("%s/%d@%d: state is a %s", r.Topic, r.Partition, r.Offset, schemas.TypeName(v))
			}
			// A key's later record replaces its slot; the timer entry
			// of the earlier one goes stale.
			old, _ := p.st.get(r.Partition, key)
			sl := slot[S]{s: s}
			sl.setHas(true)
			sl.wake = p.wakeOf(r.Partition, key, s, old.wake)
			p.st.put(r.Partition, key, old, sl)
		}
	}
	n := 0
	for _, part := range parts {
		if int(part) < len(p.st.parts) {
			n += len(p.st.parts[part])
		}
	}
	return n, nil
}
