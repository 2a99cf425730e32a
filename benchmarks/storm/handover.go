package storm

import (
	"context"
	"fmt"
	"log/slog"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/schemas"
)

// HandoverSample is one repetition of two VM processor processes sharing a
// storm: the second joins the group a third of the way through, and the
// first is killed (SIGKILL) two thirds of the way through the reports of
// the partitions it kept.
type HandoverSample struct {
	CaughtUp time.Duration // the agent's start → every report committed and projected
	Joined   time.Duration // the agent's start → the second process started
	Killed   time.Duration // the agent's start → the first process killed
	// Stalled is how long after the kill the group committed no report:
	// the killed member's partitions wait for its session to time out.
	Stalled time.Duration
	Changed int // VMs whose power the storm changed (one state change each)
	// Applied counts the storm's state changes on vm.events.v1
	// (read_committed); Doubled the VMs with more than one, and Jobs the
	// jobs accepted (a storm starts none).
	Applied, Doubled, Jobs int
}

// RunHandover runs one repetition at size sz: seeded as the storm is, one
// VM processor child restores and is ready, the agent reports one round,
// a second child (another instance id) joins at a third of the reports
// committed, and the first is killed at two thirds of the reports of the
// partitions it kept once the second holds its share.
func RunHandover(ctx context.Context, sz Size, pgBase string, log *slog.Logger) (HandoverSample, error) {
	var s HandoverSample
	var seeded Sample
	e, drv, _, err := seededStorm(ctx, sz, pgBase, log, &seeded)
	if err != nil {
		return s, err
	}
	defer e.close()
	s.Changed = seeded.Changed
	first, err := startChild(ctx, ChildVM, e.kcfg.Brokers)
	if err != nil {
		return s, err
	}
	defer first.Stop()
	p, err := e.startProjector(ctx)
	if err != nil {
		return s, err
	}
	defer p.stop()
	t0 := time.Now()
	stopAgent, err := runAgent(ctx, e.kcfg, drv, log)
	if err != nil {
		return s, err
	}
	defer stopAgent()
	group, n := "vmplane-processor-vm", int64(sz.VMs)
	if _, err := e.waitCommitted(ctx, group, schemas.TopicVmPower, n/3, 10*time.Minute); err != nil {
		return s, err
	}
	second, err := launchChild(ChildVM, "bench-2", e.kcfg.Brokers)
	if err != nil {
		return s, err
	}
	defer second.Stop()
	s.Joined = time.Since(t0)
	// The first is killed while it has reports of its own to commit: two
	// thirds of the way through those of the partitions it kept once the
	// second took its share. Killed at two thirds of all the reports, it
	// had often committed every one of its own while the second still
	// restored, and the hand-over cost nothing (two runs of three on
	// 2026-11-27).
	held, err := e.shared(ctx, group, group+"-bench", group+"-bench-2", schemas.TopicVmPower)
	if err != nil {
		return s, err
	}
	if err := e.waitHeldCommitted(ctx, group, schemas.TopicVmPower, held, 2.0/3); err != nil {
		return s, err
	}
	if err := first.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return s, err
	}
	killed := time.Now()
	s.Killed = killed.Sub(t0)
	if s.Stalled, err = e.stall(ctx, group, held); err != nil {
		return s, err
	}
	if _, err := e.waitCommitted(ctx, group, schemas.TopicVmPower, n, 10*time.Minute); err != nil {
		return s, err
	}
	end, err := e.waitProjected(ctx, schemas.TopicVmEvents, 10*time.Minute)
	if err != nil {
		return s, err
	}
	s.CaughtUp = end.Sub(t0)
	s.Applied, s.Doubled, s.Jobs, err = e.stormEvents(ctx)
	return s, err
}

// memberPartitions lists the partitions of topic the group's member with
// instance id instance holds.
func (e *env) memberPartitions(ctx context.Context, group, instance, topic string) (map[int32]bool, error) {
	gs, err := e.adm.DescribeGroups(ctx, group)
	if err != nil {
		return nil, err
	}
	held := map[int32]bool{}
	for _, m := range gs[group].Members {
		c, ok := m.Assigned.AsConsumer()
		if !ok || m.InstanceID == nil || *m.InstanceID != instance {
			continue
		}
		for _, t := range c.Topics {
			if t.Topic == topic {
				for _, p := range t.Partitions {
					held[p] = true
				}
			}
		}
	}
	return held, nil
}

// shared waits until both members, by instance id, hold partitions of
// topic, and returns those of the first.
func (e *env) shared(ctx context.Context, group, first, second, topic string) (map[int32]bool, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		a, err := e.memberPartitions(ctx, group, first, topic)
		if err != nil {
			return nil, err
		}
		b, err := e.memberPartitions(ctx, group, second, topic)
		if err != nil {
			return nil, err
		}
		if len(a) > 0 && len(b) > 0 {
			return a, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s: %s holds %d partitions of %s and %s %d after 2m", group, first, len(a), topic, second, len(b))
		}
		if err := sleep(ctx, 5*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// waitHeldCommitted waits until the group's commits on the partitions
// held reach frac of their end offsets, taken together.
func (e *env) waitHeldCommitted(ctx context.Context, group, topic string, held map[int32]bool, frac float64) error {
	deadline := time.Now().Add(10 * time.Minute)
	for {
		ends, err := e.endOffsets(ctx, topic)
		if err != nil {
			return err
		}
		o, err := e.adm.FetchOffsets(ctx, group)
		if err != nil {
			return err
		}
		var done, all int64
		for p := range held {
			if end, ok := ends.Lookup(topic, p); ok {
				all += end.Offset
			}
			if c, ok := o.Lookup(topic, p); ok && c.Err == nil {
				done += c.At
			}
		}
		if float64(done) >= frac*float64(all) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s committed %d of %d records of its partitions %v of %s in 10m", group, done, all, held, topic)
		}
		if err := sleep(ctx, 5*time.Millisecond); err != nil {
			return err
		}
	}
}

// stall waits, from now, until the group commits again on one of the
// partitions held (those of the member killed), or until their reports
// are all committed, and returns how long that took: the time the killed
// member's partitions waited for someone to take them.
func (e *env) stall(ctx context.Context, group string, held map[int32]bool) (time.Duration, error) {
	t := time.Now()
	at := func() (map[int32]int64, error) {
		o, err := e.adm.FetchOffsets(ctx, group)
		if err != nil {
			return nil, err
		}
		out := map[int32]int64{}
		o.Each(func(r kadm.OffsetResponse) {
			if r.Topic == schemas.TopicVmPower && held[r.Partition] && r.Err == nil {
				out[r.Partition] = r.At
			}
		})
		return out, nil
	}
	start, err := at()
	if err != nil {
		return 0, err
	}
	ends, err := e.endOffsets(ctx, schemas.TopicVmPower)
	if err != nil {
		return 0, err
	}
	for {
		now, err := at()
		if err != nil {
			return 0, err
		}
		done := true
		for p := range held {
			if now[p] > start[p] {
				return time.Since(t), nil
			}
			if end, ok := ends.Lookup(schemas.TopicVmPower, p); ok && now[p] < end.Offset {
				done = false
			}
		}
		if done {
			return 0, nil // nothing of theirs was left to commit
		}
		if err := sleep(ctx, 5*time.Millisecond); err != nil {
			return 0, err
		}
	}
}

// stormEvents reads vm.events.v1 to its end (read_committed) and counts the
// VM state changes beyond each VM's seeded one, the VMs with more than one
// such, and the jobs accepted.
func (e *env) stormEvents(ctx context.Context) (applied, doubled, jobs int, err error) {
	changes := map[string]int{}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	err = kafka.ReadToEnd(rctx, e.kcfg, []string{schemas.TopicVmEvents}, func(r *kgo.Record) error {
		switch kafka.Header(r, "type") {
		case schemas.TypeName(&schemas.VmStateChanged{}):
			changes[string(r.Key)]++
		case schemas.TypeName(&schemas.JobAccepted{}):
			jobs++
		}
		return nil
	})
	for _, c := range changes {
		applied += c - 1 // the seed wrote one
		if c > 2 {
			doubled++
		}
	}
	return applied, doubled, jobs, err
}
