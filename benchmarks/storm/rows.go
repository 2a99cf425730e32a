package storm

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/vmplane/vmplane/benchmarks/harness"
)

// Rows turns the repetitions into table rows; err (a repetition that
// failed) makes every row an error row with what was measured before it.
func Rows(sz Size, samples []Sample, err error) []harness.Row {
	n := float64(sz.VMs)
	col := func(f func(Sample) float64) harness.Stat {
		var v []float64
		for _, s := range samples {
			v = append(v, f(s))
		}
		return harness.Summarize(v)
	}
	rate := func(d time.Duration) float64 { return n / d.Seconds() }
	size := fmt.Sprintf("%d VMs on %d sim hosts", sz.VMs, sz.Hosts)
	scen := "reconnect storm"
	changed := 0
	if len(samples) > 0 {
		changed = samples[0].Changed
	}
	rows := []harness.Row{
		{Scenario: scen, Figure: "end-to-end reports/s", Unit: "reports/s",
			Value:     col(func(s Sample) float64 { return rate(s.StormEnd) }),
			LimitName: "raw kfake produce+consume", Limit: col(func(s Sample) float64 { return rate(s.Raw) }),
			Target: &harness.Target{AtLeast: true, Value: 100_000},
			How: size + ", all reporting at once: N / (wall clock from the sim agent's start (its first report round) until the VM processor's group has committed all N reports of vm.power.v1 AND the Postgres projector's consumer_offsets reach the end of vm.events.v1). " +
				"Limit: the same N encoded records (captured from vm.power.v1) produced into a bench topic and consumed back by a plain kgo consumer: N / (first produce → last record consumed)."},
		{Scenario: scen, Figure: "time to caught up", Unit: "s",
			Value:  col(func(s Sample) float64 { return s.StormEnd.Seconds() }),
			Target: &harness.Target{Value: 5},
			How:    "the same wall clock as end-to-end reports/s, in seconds (target ≤ 5 s at 500,000 VMs)."},
		{Scenario: scen, Figure: "VM processor reports/s", Unit: "reports/s",
			Value:     col(func(s Sample) float64 { return rate(s.StormProcessor) }),
			LimitName: "null Step, same runtime", Limit: col(func(s Sample) float64 { return rate(s.NullStep) }),
			Target: &harness.Target{AtLeast: true, Value: 0.25, OfLimit: true},
			How: "N / (sim agent's start → VM processor (child process, real runtime, transactions) has committed all N reports). " +
				"Limit: the same N encoded records produced into a bench topic consumed by the same runtime with runtime.Config.SkipDecode and a machine that decides nothing (one changelog tombstone per key and transaction, no decoding, no encoding): N / (first produce → all committed)."},
		{Scenario: scen, Figure: "Postgres row writes (vms)", Unit: "rows",
			Value:     col(func(s Sample) float64 { return float64(s.StormWrites["vms"]) }),
			LimitName: "VMs whose state changed", Limit: col(func(s Sample) float64 { return float64(s.Changed) }),
			Target: &harness.Target{Value: 1, OfLimit: true},
			How:    fmt.Sprintf("rows inserted, updated or deleted in table vms of a fresh database during the storm, counted in the writing transactions by statement-level triggers (transition tables) installed after the seeding projector had stored every seeded VM; %d of the VMs (every %dth) changed power state while away.", changed, sz.ChangedEvery),
			Notes:  "all tables, last run: " + fmtWrites(last(samples).StormWrites) + "; rows in the read model before the storm (seeding, not counted): " + fmtWrites(last(samples).SeedWrites)},
		{Scenario: "restore", Figure: "VM processor restore", Unit: "s",
			Value:  col(func(s Sample) float64 { return float64(s.RestoreMs) / 1000 }),
			Target: &harness.Target{Value: 10},
			How:    size + ": wall clock in the VM processor child from its first assigned partition until every partition is restored from vm.state.v1 (seeded VmRecords) and Ready.",
			Notes:  "limit (reading the changelog with no decoding) not measured yet; at quick size this is a tiny figure, the target is for 500,000 VMs."},
		{Scenario: "steady state", Figure: "VM processor CPU", Unit: "% of a core",
			Value:  col(func(s Sample) float64 { return s.SteadyCPU * 100 }),
			Target: &harness.Target{Value: 25},
			How:    "the same VMs reporting every 60 s, scaled rather than waited for: idle CPU of the VM processor process (utime+stime from /proc/<pid>/stat over an idle window) + CPU per report (CPU delta over report rounds 4 and 5, minus idle, / 2N) × N / 60 s.",
			Notes:  fmt.Sprintf("last run: idle %.2f%% of a core, %s CPU per report", last(samples).IdleCPU*100, last(samples).CPUPerReport)},
		{Scenario: "steady state", Figure: "Postgres writes after 3rd same-state report", Unit: "rows",
			Value:  col(func(s Sample) float64 { return float64(sum(s.SteadyWrites)) }),
			Target: &harness.Target{Value: 0},
			How:    "rows written to every table (counted by the triggers, as above) while the projector applied report rounds 4 and 5, when every VM's same-state count is past power.state.update.limit (3)."},
	}
	for i := range rows {
		if err != nil {
			rows[i].Err = err.Error()
		}
		rows[i].Judge()
	}
	return rows
}

func last(s []Sample) Sample {
	if len(s) == 0 {
		return Sample{}
	}
	return s[len(s)-1]
}

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

func fmtWrites(m map[string]int64) string {
	var parts []string
	for _, t := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", t, m[t]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
