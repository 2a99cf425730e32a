package storm

import (
	"fmt"
	"time"

	"github.com/vmplane/vmplane/benchmarks/harness"
)

// HandoverRows turns the hand-over repetitions into rows: the caught-up
// time with its limit (the one-process storm's, measured in the same run
// when there is one), the stall the kill caused, and the invariants'
// counts, each of which must be 0.
func HandoverRows(sz Size, samples []HandoverSample, storm harness.Stat, err error) []harness.Row {
	col := func(f func(HandoverSample) float64) harness.Stat {
		var v []float64
		for _, s := range samples {
			v = append(v, f(s))
		}
		return harness.Summarize(v)
	}
	scen := "two VM processors"
	size := fmt.Sprintf("%d VMs on %d sim hosts, seeded and reported as in the reconnect storm", sz.VMs, sz.Hosts)
	last := last(samples)
	rows := []harness.Row{
		{Scenario: scen, Figure: "time to caught up", Unit: "s", Value: col(func(s HandoverSample) float64 { return s.CaughtUp.Seconds() }),
			LimitName: "one process, reconnect storm", Limit: storm,
			How:   size + ": one VM processor child restores and is ready; the sim agent reports one round; a second child of the same group (another instance id) starts when a third of the reports are committed, and the first is killed with SIGKILL once it holds its share of the partitions and two thirds of their reports are committed. Wall clock from the agent's start until the group has committed every report and the projector has stored the end of vm.events.v1.",
			Notes: fmt.Sprintf("last run: second process started at %s, first killed at %s", last.Joined.Round(time.Millisecond), last.Killed.Round(time.Millisecond))},
		{Scenario: scen, Figure: "hand-over stall", Unit: "s", Value: col(func(s HandoverSample) float64 { return s.Stalled.Seconds() }),
			How: "from the kill until the group commits again on a partition of vm.power.v1 the killed member held (read from the group's description just before the kill): those partitions wait for its session (engine default 10 s) to time out, and for its open transaction to be aborted (engine transaction timeout 10 s), before the survivor takes them and restores their state; 0 when nothing of theirs was left to commit."},
	}
	if len(storm.Samples) == 0 {
		rows[0].LimitName, rows[0].Limit = "", harness.Stat{} // the storm did not run
	}
	for _, inv := range []struct {
		figure, unit, how string
		count             func(HandoverSample) float64
	}{
		{"reports applied twice", "VMs", "VMs with more than one state change from the storm on vm.events.v1 (read_committed, read to its end after the storm): a report applied twice across the kill.",
			func(s HandoverSample) float64 { return float64(s.Doubled) }},
		{"reports not applied", "VMs", "VMs the storm changed (every 10th, seeded Stopped while running) minus the storm's state changes on vm.events.v1: a report lost in the hand-over.",
			func(s HandoverSample) float64 { return float64(s.Changed - s.Applied) }},
		{"jobs started", "jobs", "jobs accepted on vm.events.v1: a storm of power reports starts none, so any is a doubled or stray one.",
			func(s HandoverSample) float64 { return float64(s.Jobs) }},
	} {
		rows = append(rows, harness.Row{Scenario: scen, Figure: inv.figure, Unit: inv.unit, Value: col(inv.count), Target: &harness.Target{Value: 0}, How: inv.how})
	}
	for i := range rows {
		if err != nil {
			rows[i].Err = err.Error()
		}
		rows[i].Judge()
	}
	return rows
}
