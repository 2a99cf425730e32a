package hoststorm

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/vmplane/vmplane/benchmarks/harness"
)

// Rows runs the host storms at the quick or full size, runs times (0: the
// size's), up to the first failure, and returns their rows.
func Rows(ctx context.Context, quick bool, runs int, log *slog.Logger) []harness.Row {
	sz := Full
	if quick {
		sz = Quick
	}
	if runs > 0 {
		sz.Runs = runs
	}
	var samples []Sample
	for i := range sz.Runs {
		fmt.Fprintf(os.Stderr, "bench: host storms, run %d/%d (%d hosts pinging every %s)\n", i+1, sz.Runs, sz.Hosts, sz.PingInterval)
		s, err := Run(ctx, sz, log)
		if err != nil {
			return table(sz, samples, err)
		}
		samples = append(samples, s)
	}
	return table(sz, samples, nil)
}

// table turns the repetitions into table rows; err (a repetition that
// failed) makes every row an error row.
func table(sz Size, samples []Sample, err error) []harness.Row {
	col := func(f func(Sample) float64) harness.Stat {
		var v []float64
		for _, s := range samples {
			v = append(v, f(s))
		}
		return harness.Summarize(v)
	}
	const scen = "host storm"
	rows := []harness.Row{
		{Scenario: scen, Figure: fmt.Sprintf("%d agents connecting at once: all Up", sz.Hosts), Unit: "s",
			Value:     col(func(s Sample) float64 { return s.Connect.Seconds() }),
			LimitName: "every first ping in the log", Limit: col(func(s Sample) float64 { return s.Pinged.Seconds() }),
			Target: &harness.Target{Value: 5},
			How: fmt.Sprintf("%d sim hosts (no VMs) of one agent pinging every %s; every processor of ops/roles (placement, lease, host, host relay, VM; ping timeout %s) in one child process; an embedded kfake broker. ", sz.Hosts, sz.PingInterval, sz.PingTimeout()) +
				"Wall clock from the agent's start (a hello and a first report round for every host) until a read_committed consumer of host.status.v1 has seen every host Up (registered Connecting, Up at its first ping). " +
				"Limit: the same clock until the same consumer has seen every host's first AgentPing on host.events.v1 (what the agent alone takes)."},
	}
	watch := fmt.Sprintf("Hosts followed on host.status.v1 and agent.commands.v1 (read_committed) from the kill until %s (ping timeout + interval) after the new child is ready", sz.Watch())
	for _, k := range []struct {
		name string
		of   func(Sample) Restart
		how  string
	}{
		{"restart", func(s Sample) Restart { return s.Restart },
			"The world of the connect row; SIGKILL of the processors' child as soon as the host processor's group offsets reach the end of a round of pings (its transaction may still be open), a new child started at once."},
		{"restart after an outage", func(s Sample) Restart { return s.Outage },
			"As the restart row, but the new child starts after the ping timeout minus the first restart's time to ready: the deadlines of the last pings the killed processors stepped fall due as the new ones are ready, the pings sent meanwhile still to read."},
	} {
		down := col(func(s Sample) float64 { return k.of(s).Down.Seconds() })
		rows = append(rows,
			harness.Row{Scenario: scen, Figure: k.name + ": processors ready", Unit: "s",
				Value:  col(func(s Sample) float64 { return k.of(s).Ready.Seconds() }),
				Target: &harness.Target{Value: sz.PingInterval.Seconds()},
				How:    k.how + " Wall clock from the new child's exec until every processor has its partitions restored and consumes (the child's ready line); target: a ping interval.",
				Notes:  fmt.Sprintf("processors away (kill → exec) median %.2f s", down.Median)},
			harness.Row{Scenario: scen, Figure: k.name + ": hosts Disconnected, Alert or Down", Unit: "hosts",
				Value:  col(func(s Sample) float64 { return float64(k.of(s).Left) }),
				Target: &harness.Target{Value: 0},
				How:    k.how + " " + watch + ": hosts with a HostStatus Disconnected, Alert or Down.",
				Notes:  fmt.Sprintf("hosts Up at the end of the watch, last run: %d of %d", last(samples, k.of).Up, sz.Hosts)},
			harness.Row{Scenario: scen, Figure: k.name + ": hosts investigated", Unit: "hosts",
				Value:  col(func(s Sample) float64 { return float64(k.of(s).Probed) }),
				Target: &harness.Target{Value: 0},
				How:    k.how + " " + watch + ": hosts named by a CheckHost or FenceHost (an investigation of a missed ping)."},
		)
	}
	for i := range rows {
		if err != nil {
			rows[i].Err = err.Error()
		}
		rows[i].Judge()
	}
	return rows
}

// last returns what of picks from the last sample, the zero Restart for
// none.
func last(samples []Sample, of func(Sample) Restart) Restart {
	if len(samples) == 0 {
		return Restart{}
	}
	return of(samples[len(samples)-1])
}
