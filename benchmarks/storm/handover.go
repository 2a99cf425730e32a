package storm

import (
	"context"
	"fmt"
	"log/slog"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/schemas"
)

// HandoverSample is one repetition of two VM processor processes sharing a
// storm: the second joins the group a third of the way through, and the
// first is killed (SIGKILL) two thirds of the way through.
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
// committed, and the first is killed at two thirds.
func RunHandover(ctx context.Context, sz Size, pgBase string, log *slog.Logger) (HandoverSample, error) {
	var s HandoverSample
	e, err := newEnv(ctx, pgBase, log)
	if err != nil {
		return s, err
	}
	defer e.close()
	drv, hosts, perHost, err := startFleet(ctx, sz)
	if err != nil {
		return s, err
	}
	if s.Changed, err = e.seed(ctx, sz, hosts, perHost); err != nil {
		return s, fmt.Errorf("seed: %w", err)
	}
	var seedOnly Sample
	if _, err := e.projectSeed(ctx, &seedOnly, sz); err != nil {
		return s, err
	}
	first, err := startChild(ctx, ChildVM, e.kcfg.Brokers)
	if err != nil {
		return s, err
	}
	defer first.stop()
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
	second, _, err := launchChild(ChildVM, "bench-2", e.kcfg.Brokers)
	if err != nil {
		return s, err
	}
	defer second.stop()
	s.Joined = time.Since(t0)
	if _, err := e.waitCommitted(ctx, group, schemas.TopicVmPower, 2*n/3, 10*time.Minute); err != nil {
		return s, err
	}
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return s, err
	}
	killed := time.Now()
	s.Killed = killed.Sub(t0)
	if s.Stalled, err = e.stall(ctx, group, n); err != nil {
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

// stall waits, from now, until the group's committed reports next grow
// (or reach n), and returns how long they did not.
func (e *env) stall(ctx context.Context, group string, n int64) (time.Duration, error) {
	t := time.Now()
	last, err := e.committed(ctx, group, schemas.TopicVmPower)
	if err != nil {
		return 0, err
	}
	moved := t
	for last < n {
		if err := sleep(ctx, 5*time.Millisecond); err != nil {
			return 0, err
		}
		c, err := e.committed(ctx, group, schemas.TopicVmPower)
		if err != nil {
			return 0, err
		}
		if c > last {
			if time.Since(moved) > 500*time.Millisecond {
				// The commits moved after a pause: the killed member's
				// partitions are someone's again.
				return time.Since(t), nil
			}
			moved = time.Now()
		}
		last = c
	}
	return 0, nil
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
