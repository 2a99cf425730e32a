package roles

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/schemas"
)

// timelineTopics are the topics a failing scenario test prints: commands,
// signals, agent commands and answers, host, placement and lease events.
// Power reports and host status are left out (one per host and second).
var timelineTopics = []string{
	schemas.TopicVmCommands, schemas.TopicVmSignals, schemas.TopicVmEvents, schemas.TopicAgentCommands,
	schemas.TopicVmAnswers, schemas.TopicHostEvents, schemas.TopicPlacementRequests, schemas.TopicPlacementEvents,
	schemas.TopicLeaseEvents,
}

// timelineMax bounds the lines printed: the last ones are kept.
const timelineMax = 300

// timelineOnFailure prints, when the test has failed, every record of
// timelineTopics from start on, in timestamp order and relative to start:
// a scenario that failed once in many runs says what happened instead.
func timelineOnFailure(t *testing.T, kcfg kafka.Config, start time.Time) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		lines, err := timeline(kcfg, start)
		if err != nil {
			t.Logf("no timeline: %v", err)
			return
		}
		if len(lines) > timelineMax {
			t.Logf("timeline: the last %d of %d records", timelineMax, len(lines))
			lines = lines[len(lines)-timelineMax:]
		}
		t.Logf("timeline since the test started:\n%s", strings.Join(lines, "\n"))
	})
}

// timeline reads timelineTopics to their ends and renders the records
// stamped at or after start, ordered by timestamp.
func timeline(kcfg kafka.Config, start time.Time) ([]string, error) {
	// The test's context is over by the time its cleanups run.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kcfg.Opts(kgo.ConsumeTopics(timelineTopics...), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.KeepControlRecords())...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, timelineTopics...)
	if err != nil {
		return nil, err
	}
	left := map[string]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			left[fmt.Sprintf("%s/%d", o.Topic, o.Partition)] = o.Offset
		}
	})
	type line struct {
		at   time.Time
		text string
	}
	var out []line
	for len(left) > 0 && ctx.Err() == nil {
		for _, kr := range cl.PollFetches(ctx).Records() {
			tp := fmt.Sprintf("%s/%d", kr.Topic, kr.Partition)
			if end, ok := left[tp]; ok && kr.Offset+1 >= end {
				delete(left, tp)
			}
			if kr.Attrs.IsControl() || kr.Timestamp.Before(start) {
				continue
			}
			text := fmt.Sprintf("%+8.3fs %-22s %-14s ", kr.Timestamp.Sub(start).Seconds(), kr.Topic, kr.Key)
			if r, err := kafka.FromKafka(ctx, schemas.NewCodec(nil), kr); err != nil {
				text += "undecodable: " + err.Error()
			} else {
				text += fmt.Sprintf("%s %+v", schemas.TypeName(r.Value), r.Value)
			}
			out = append(out, line{kr.Timestamp, text})
		}
	}
	slices.SortStableFunc(out, func(a, b line) int { return a.at.Compare(b.at) })
	lines := make([]string, len(out))
	for i, l := range out {
		lines[i] = l.text
	}
	return lines, nil
}
