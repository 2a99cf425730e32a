package roles

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

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
	type line struct {
		at   time.Time
		text string
	}
	var out []line
	// Cut short, the timeline is what was read by then, and says so.
	err := kafka.ReadToEnd(ctx, kcfg, timelineTopics, func(kr *kgo.Record) error {
		if kr.Attrs.IsControl() || kr.Timestamp.Before(start) {
			return nil
		}
		text := fmt.Sprintf("%+8.3fs %-22s %-14s ", kr.Timestamp.Sub(start).Seconds(), kr.Topic, kr.Key)
		if r, err := kafka.FromKafka(ctx, schemas.NewCodec(nil), kr); err != nil {
			text += "undecodable: " + err.Error()
		} else {
			text += fmt.Sprintf("%s %+v", schemas.TypeName(r.Value), r.Value)
		}
		out = append(out, line{kr.Timestamp, text})
		return nil
	})
	if err != nil && len(out) == 0 {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b line) int { return a.at.Compare(b.at) })
	lines := make([]string, 0, len(out)+1)
	for _, l := range out {
		lines = append(lines, l.text)
	}
	if err != nil {
		lines = append(lines, "(cut short: "+err.Error()+")")
	}
	return lines, nil
}
