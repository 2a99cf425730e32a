package storm

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/schemas"
)

// The stages of a deploy, each from the end of the one before, told by the
// timestamps of the records keyed by its VM (set when each was produced).
var deployStageNames = [...]string{
	"gateway to command",          // POST sent → Deploy on vm.commands.v1
	"VM processor and placement",  // → PlacementDecided on vm.signals.v1
	"VM processor and agent",      // → the StartVm's answer on vm.answers.v1
	"VM processor to final event", // → JobSucceeded on vm.events.v1 (the step)
	"commit, projector, answer",   // → the GET ?wait= answered
}

// DeployStages are the stages of each measured deploy of a rate.
type DeployStages [len(deployStageNames)][]time.Duration

// deployTimes reads when each VM's deploy records were produced: its
// first record on each of the topics of the stages, up to their ends.
func (e *env) deployTimes(ctx context.Context) (map[string][4]time.Time, error) {
	at := map[string][4]time.Time{}
	slot := map[string]int{schemas.TopicVmCommands: 0, schemas.TopicVmSignals: 1, schemas.TopicVmAnswers: 2, schemas.TopicVmEvents: 3}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	err := kafka.ReadToEnd(rctx, e.kcfg, []string{schemas.TopicVmCommands, schemas.TopicVmSignals, schemas.TopicVmAnswers, schemas.TopicVmEvents}, func(r *kgo.Record) error {
		if r.Attrs.IsControl() || (r.Topic == schemas.TopicVmEvents && kafka.Header(r, "type") != schemas.TypeName(&schemas.JobSucceeded{})) {
			return nil
		}
		t := at[string(r.Key)]
		if i := slot[r.Topic]; t[i].IsZero() {
			t[i] = r.Timestamp
			at[string(r.Key)] = t
		}
		return nil
	})
	return at, err
}

// deployStages splits each deploy's time by its VM's records; a deploy
// with a record missing is left out.
func deployStages(at map[string][4]time.Time, deploys []done) DeployStages {
	var out DeployStages
	for _, d := range deploys {
		t, ok := at[d.vm]
		points := [...]time.Time{d.sent, t[0], t[1], t[2], t[3], d.sent.Add(d.took)}
		for _, p := range points {
			ok = ok && !p.IsZero()
		}
		if !ok {
			continue
		}
		for i := range deployStageNames {
			out[i] = append(out[i], points[i+1].Sub(points[i]))
		}
	}
	return out
}

// String gives each stage's p50/p99 in milliseconds.
func (st DeployStages) String() string { return stageSummary("deploys", deployStageNames[:], st[:]) }
