package rebuild

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/vmplane/vmplane/benchmarks/harness"
)

// Events in the log: the 5 M at full size, a tiny log in quick mode.
const (
	fullEvents  = 5_000_000
	quickEvents = 20_000
	// target is the rebuild target: at least 0.9 of COPY's rate on the
	// same rows (issue 31).
	target = 0.9
)

// Rows writes the history once into an embedded broker, rebuilds a fresh
// read model from it runs times (3 when runs ≤ 0), each beside the COPY
// limit, and returns the rebuild row. A failed repetition makes the row an
// error row.
func Rows(ctx context.Context, quick bool, runs int, pgDSN string, log *slog.Logger) []harness.Row {
	n := fullEvents
	if quick {
		n = quickEvents
	}
	if runs <= 0 {
		runs = 3
	}
	return rows(ctx, n, runs, pgDSN, log)
}

// rows is Rows for a log of n events.
func rows(ctx context.Context, n, runs int, pgDSN string, log *slog.Logger) []harness.Row {
	row := harness.Row{Scenario: "rebuild", Figure: "events/s into an empty read model", Unit: "events/s",
		LimitName: "COPY of the same rows", Target: &harness.Target{AtLeast: true, Value: target, OfLimit: true}}
	row.How = fmt.Sprintf("%d events (hosts registering and going through maintenance, VM deploys with their steps and capacity claims, power reports, reboots, stops and starts, rejected commands, VMs found off with alerts, terminations; benchmarks/rebuild/history.go) "+
		"produced once into an embedded kfake broker before the first run (not timed); each run migrates a fresh, empty database and calls projectors/postgres.Rebuild (the collector at `vmplane projector rebuild`'s default of 400 %% for this process, which also hosts the broker): "+
		"events / wall clock of that call (connect, fresh schema, replay of every partition from offset 0 and fold, bulk load with COPY and index builds, schema swap). "+
		"Limit: the tables Rebuild left behind, read out with COPY TO (binary, not timed) and loaded with COPY FROM STDIN (binary) into the empty tables (same indexes) of a second fresh database in one transaction: "+
		"the same events / wall clock from BEGIN to COMMIT, so the ratio is Rebuild's time over the time Postgres needs just to take its rows.", n)

	l, err := writeLog(ctx, n)
	if err != nil {
		row.Err = "write the log: " + err.Error()
		row.Judge()
		return []harness.Row{row}
	}
	defer l.close()
	log.Info("rebuild: log written", "events", n, "vms", l.vms, "hosts", l.hosts, "took", l.took)

	var samples []sample
	for i := range runs {
		log.Info("rebuild: run", "run", i+1, "of", runs)
		s, err := runOnce(ctx, l, pgDSN, log)
		if err != nil {
			row.Err = fmt.Sprintf("run %d: %v", i+1, err)
			break
		}
		samples = append(samples, s)
	}
	var fig, lim []float64
	for _, s := range samples {
		fig = append(fig, float64(n)/s.Rebuild.Seconds())
		lim = append(lim, float64(n)/s.Copy.Seconds())
	}
	row.Value, row.Limit = harness.Summarize(fig), harness.Summarize(lim)
	if len(samples) > 0 {
		s := samples[len(samples)-1]
		row.Notes = fmt.Sprintf("log: %d VMs on %d hosts, records per topic %s; produced in %s. Last run: Rebuild %s (replay and fold %s, load %s), COPY %s; rows %s",
			l.vms, l.hosts, counts(l.perTopic), l.took.Round(time.Millisecond), s.Rebuild.Round(time.Millisecond),
			s.Stats.Replay.Round(time.Millisecond), s.Stats.Load.Round(time.Millisecond), s.Copy.Round(time.Millisecond), counts(s.Rows))
	}
	row.Judge()
	return []harness.Row{row}
}

func counts[N int | int64](m map[string]N) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
