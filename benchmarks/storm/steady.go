package storm

import (
	"context"
	"log/slog"
	"time"

	"github.com/vmplane/vmplane/producers/agent/driver/sim"
	"github.com/vmplane/vmplane/schemas"
)

// steady continues from the storm's end (the storm was report round 1):
// it measures the VM processor's idle CPU, runs rounds 2 and 3 (the
// changed VMs reach the same-state limit), then rounds 4 and 5, in which
// every report is past the limit, timing the processor's CPU and counting
// Postgres writes over them. Each round is a new sim agent over the same
// driver, so every round carries a newer report sequence, as a live
// agent's rounds do.
//
// The CPU figure is scaled to the real ping interval (60 s) rather than
// waited for: idle CPU per second plus (busy CPU per report) × VMs / 60 s.
func (e *env) steady(ctx context.Context, s *Sample, sz Size, drv *sim.Driver, vmc *child, log *slog.Logger) error {
	group := "vmplane-processor-vm"
	c0, err := vmc.cpu()
	if err != nil {
		return err
	}
	time.Sleep(sz.IdleWindow)
	c1, err := vmc.cpu()
	if err != nil {
		return err
	}
	s.IdleCPU = float64(c1-c0) / float64(sz.IdleWindow)

	round := func(k int) error {
		stop, err := runAgent(ctx, e.kcfg, drv, log)
		if err != nil {
			return err
		}
		defer stop()
		_, err = e.waitCommitted(ctx, group, schemas.TopicVmPower, int64(k*sz.VMs), 10*time.Minute)
		return err
	}
	p, err := e.startProjector(ctx)
	if err != nil {
		return err
	}
	for k := 2; k <= 3; k++ {
		if err := round(k); err != nil {
			p.stop()
			return err
		}
	}
	_, err = e.waitProjected(ctx, schemas.TopicVmEvents, 10*time.Minute)
	p.stop()
	if err != nil {
		return err
	}
	wA, err := e.tableWrites(ctx)
	if err != nil {
		return err
	}
	if p, err = e.startProjector(ctx); err != nil {
		return err
	}
	c2, err := vmc.cpu()
	if err != nil {
		p.stop()
		return err
	}
	t0 := time.Now()
	for k := 4; k <= 5; k++ {
		if err := round(k); err != nil {
			p.stop()
			return err
		}
	}
	wall := time.Since(t0)
	c3, err := vmc.cpu()
	if err != nil {
		p.stop()
		return err
	}
	_, err = e.waitProjected(ctx, schemas.TopicVmEvents, 10*time.Minute)
	p.stop()
	if err != nil {
		return err
	}
	wB, err := e.tableWrites(ctx)
	if err != nil {
		return err
	}
	_, s.SteadyWrites = diffWrites(wA, wB)
	busy := float64(c3-c2) - s.IdleCPU*float64(wall)
	s.CPUPerReport = time.Duration(max(busy, 0) / float64(2*sz.VMs))
	s.SteadyCPU = s.IdleCPU + float64(s.CPUPerReport)*float64(sz.VMs)/float64(60*time.Second)
	return nil
}
