package storm

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/benchmarks/harness"
	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/schemas"
)

// The stages of a reboot, each from the end of the one before, told by the
// timestamps of the records it made (set when each was produced).
var stageNames = [...]string{
	"gateway to command",           // POST sent → vm.commands.v1 record
	"VM processor to agent",        // → agent.commands.v1 record (the step, not yet committed)
	"commit and agent",             // → vm.answers.v1 record
	"VM processor to final event",  // → JobSucceeded on vm.events.v1 (the step)
	"commit, projector and answer", // → the GET ?wait= answered
}

// stageTimes are each measured action's stages.
type stageTimes [len(stageNames)][]time.Duration

// recordTimes holds when the records of the reboots were produced: by job
// for the records that carry its command_id header, by VM key for the
// answers and final events (whose command_id is the agent command's).
type recordTimes struct {
	command, agent map[string]time.Time   // job id → first record
	answer, final  map[string][]time.Time // vm id → records, in log order
}

// readTimes reads the reboots' topics from the start (read_committed) up
// to their end offsets listed after the load (kafka.ReadToEnd; every role
// has stopped, so no transaction is open). It used to stop at the first
// second with nothing new, which a slow first fetch on a loaded box made
// the very first poll: the run had no stages at all.
func (e *env) readTimes(ctx context.Context) (*recordTimes, error) {
	rt := &recordTimes{command: map[string]time.Time{}, agent: map[string]time.Time{},
		answer: map[string][]time.Time{}, final: map[string][]time.Time{}}
	first := func(m map[string]time.Time, id string, at time.Time) {
		if _, ok := m[id]; !ok && id != "" {
			m[id] = at
		}
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	topics := []string{schemas.TopicVmCommands, schemas.TopicAgentCommands, schemas.TopicVmAnswers, schemas.TopicVmEvents}
	err := kafka.ReadToEnd(rctx, e.kcfg, topics, func(r *kgo.Record) error {
		if r.Attrs.IsControl() {
			return nil
		}
		switch r.Topic {
		case schemas.TopicVmCommands:
			first(rt.command, kafka.Header(r, "command_id"), r.Timestamp)
		case schemas.TopicAgentCommands:
			first(rt.agent, kafka.Header(r, "command_id"), r.Timestamp)
		case schemas.TopicVmAnswers:
			rt.answer[string(r.Key)] = append(rt.answer[string(r.Key)], r.Timestamp)
		case schemas.TopicVmEvents:
			if kafka.Header(r, "type") == schemas.TypeName(&schemas.JobSucceeded{}) {
				rt.final[string(r.Key)] = append(rt.final[string(r.Key)], r.Timestamp)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read records: %w", err)
	}
	return rt, nil
}

// stages splits each action's time by its records. The answer and final
// event of an action are its VM's first ones from the step before on: a VM
// is never rebooted twice at a rate (LatencySize.Pool), and the rates run
// one after another. An action with a record missing is left out.
func (rt *recordTimes) stages(actions []done) stageTimes {
	var out stageTimes
	next := func(ts []time.Time, from time.Time) time.Time {
		for _, t := range ts {
			if !t.Before(from) {
				return t
			}
		}
		return time.Time{}
	}
	for _, a := range actions {
		cmd, agent := rt.command[a.job], rt.agent[a.job]
		answer := next(rt.answer[a.vm], agent)
		final := next(rt.final[a.vm], answer)
		points := [...]time.Time{a.sent, cmd, agent, answer, final, a.sent.Add(a.took)}
		complete := true
		for _, p := range points {
			complete = complete && !p.IsZero()
		}
		if !complete {
			continue
		}
		for i := range stageNames {
			out[i] = append(out[i], points[i+1].Sub(points[i]))
		}
	}
	return out
}

// String gives each stage's p50/p99 in milliseconds.
func (st stageTimes) String() string { return stageSummary("actions", stageNames[:], st[:]) }

// stageSummary says, for the stages named names with their times, each
// stage's p50/p99 in milliseconds; of is what was split (actions).
func stageSummary(of string, names []string, times [][]time.Duration) string {
	if len(times) == 0 || len(times[0]) == 0 {
		return "no stages (records not found)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "stages of %d %s, p50/p99 ms from record timestamps (whole ms):", len(times[0]), of)
	for i, name := range names {
		fmt.Fprintf(&b, " %s %.1f/%.1f;", name, harness.Millis(harness.Percentile(times[i], 50)), harness.Millis(harness.Percentile(times[i], 99)))
	}
	return strings.TrimSuffix(b.String(), ";")
}
