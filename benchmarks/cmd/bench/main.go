// Command bench is `make bench`: it runs every scenario (full size, or
// -quick for a tiny one), prints the table of figures beside the limits
// measured in the same run, writes benchmarks/results/<date>-<commit>.json
// and, for full runs, appends a row to the history in benchmarks/README.md.
// Run it from the repository root with the test servers up
// (`go run ./internal/testkit/cmd/teststack up`; the Makefile does this).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vmplane/vmplane/benchmarks/durability"
	"github.com/vmplane/vmplane/benchmarks/harness"
	"github.com/vmplane/vmplane/benchmarks/hoststorm"
	"github.com/vmplane/vmplane/benchmarks/journal"
	"github.com/vmplane/vmplane/benchmarks/placement"
	"github.com/vmplane/vmplane/benchmarks/rebuild"
	"github.com/vmplane/vmplane/benchmarks/storm"
	"github.com/vmplane/vmplane/internal/pgserver"
	"github.com/vmplane/vmplane/internal/testkit"
)

func main() {
	quick := flag.Bool("quick", false, "tiny sizes (seconds), as `make test` runs it")
	record := flag.Bool("record", true, "write results/<date>-<commit>.json (and, for full runs, a README history row)")
	runs := flag.Int("runs", 0, "repetitions per scenario (default 3)")
	only := flag.String("only", "", "run these scenario groups, comma-separated: storm, handover, latency, deploy, placement, journal, rebuild, durability, hosts (for profiling; never recorded)")
	childRole := flag.String("child", "", "internal: run a processor as a child process")
	brokers := flag.String("brokers", "", "internal: broker list of -child")
	latencyChild := flag.String("latency-child", "", "internal: run one action-latency repetition as a child process (JSON arguments)")
	hostsChild := flag.String("hosts-child", "", "internal: run every processor as a child process of the host storms (JSON arguments)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *childRole != "" {
		runChild := storm.RunChild
		if placement.IsChild(*childRole) {
			runChild = placement.RunChild
		}
		if err := runChild(ctx, *childRole, strings.Split(*brokers, ",")); err != nil {
			fmt.Fprintln(os.Stderr, "bench child:", err)
			os.Exit(1)
		}
		return
	}
	if *latencyChild != "" {
		if err := storm.RunLatencyChild(ctx, *latencyChild); err != nil {
			fmt.Fprintln(os.Stderr, "bench latency child:", err)
			os.Exit(1)
		}
		return
	}
	if *hostsChild != "" {
		if err := hoststorm.RunChild(ctx, *hostsChild); err != nil {
			fmt.Fprintln(os.Stderr, "bench hosts child:", err)
			os.Exit(1)
		}
		return
	}
	sel, err := parseGroups(*only)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if *only != "" {
		*record = false
	}
	if err := run(ctx, *quick, *record, *runs, sel); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// run runs the scenario groups g selects, prints their figures and, when
// record is set, records them.
func run(ctx context.Context, quick, record bool, runs int, g groups) error {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	started := time.Now()
	sz := stormSize(quick, runs)

	varDir, err := testkit.VarDir()
	if err != nil {
		return err
	}
	pg, err := pgserver.Ensure(ctx, testkit.PostgresDSN(), varDir, log)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	defer pg.Stop()
	pgVersion := storm.ServerVersion(ctx, pg.DSN())

	// The machine's speed at what moves the figures from day to day,
	// before the scenarios load it.
	probe, err := harness.ProbeMachine()
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "bench: machine probe: %s\n", probe)

	var rows []harness.Row
	if g.has("storm") {
		rows = append(rows, stormRows(ctx, sz, pg.DSN(), log)...)
	}
	if g.has("handover") {
		rows = append(rows, handoverRows(ctx, sz, quick, rows, pg.DSN(), log)...)
	}
	if g.has("latency") {
		ls, err := latencySize(quick, runs, g)
		if err != nil {
			return err
		}
		rows = append(rows, latencyRows(ctx, ls, pg.DSN())...)
	}
	if g.has("deploy") {
		ds, err := deploySize(quick, runs, g)
		if err != nil {
			return err
		}
		rows = append(rows, deployRows(ctx, ds, pg.DSN())...)
	}
	if g.has("placement") {
		fmt.Fprintln(os.Stderr, "bench: placement")
		placementRuns := sz.Runs
		if quick && runs == 0 {
			// Quick mode runs every case at a small size: once exercises it.
			placementRuns = 1
		}
		rows = append(rows, placement.Rows(ctx, placementRuns, quick)...)
	}
	if g.has("journal") {
		fmt.Fprintln(os.Stderr, "bench: journal")
		rows = append(rows, journal.Rows(ctx, quick, sz.Runs, log)...)
	}
	if g.has("rebuild") {
		fmt.Fprintln(os.Stderr, "bench: rebuild")
		rows = append(rows, rebuild.Rows(ctx, quick, sz.Runs, pg.DSN(), log)...)
	}
	if g.has("durability") {
		fmt.Fprintln(os.Stderr, "bench: durability")
		rows = append(rows, durability.Rows(ctx, quick, sz.Runs, varDir, log)...)
	}
	if g.has("hosts") {
		rows = append(rows, hoststorm.Rows(ctx, quick, runs, log)...)
	}

	r := harness.Run{Started: started, Duration: time.Since(started), Quick: quick, Machine: harness.Describe(pgVersion, journal.ServerVersion(ctx)), Rows: rows}
	r.Machine.Probe = probe
	printRun(r, pgVersion)
	if !record {
		return nil
	}
	return recordRun(r)
}

// stormSize is the storm's size for this run.
func stormSize(quick bool, runs int) (sz storm.Size) {
	sz = storm.Full
	if quick {
		sz = storm.Quick
	}
	if runs > 0 {
		sz.Runs = runs
	}
	// VMPLANE_BENCH_VMS resizes the storm (hosts keep 50 VMs each), for
	// profiling between the quick and full sizes; recorded results say so.
	if v, err := strconv.Atoi(os.Getenv("VMPLANE_BENCH_VMS")); err == nil && v > 0 {
		sz.VMs, sz.Hosts = v, max(v/50, 1)
	}
	return sz
}

// stormRows runs the storm and its steady state sz.Runs times, up to the
// first failure, and returns their rows.
func stormRows(ctx context.Context, sz storm.Size, dsn string, log *slog.Logger) []harness.Row {
	samples, err := repeat(sz.Runs, fmt.Sprintf("storm + steady state (%d VMs on %d hosts)", sz.VMs, sz.Hosts),
		func() (storm.Sample, error) { return storm.Run(ctx, sz, dsn, log) })
	return storm.Rows(sz, samples, err)
}

// handoverRows runs two VM processors sharing a storm (sz; once in quick
// mode, where each run waits out a killed member's session) up to the
// first failure, and returns its rows; the limit is the one-process
// storm's time to caught up among rows, when the storm ran.
func handoverRows(ctx context.Context, sz storm.Size, quick bool, rows []harness.Row, dsn string, log *slog.Logger) []harness.Row {
	if quick {
		sz.Runs = 1
	}
	var limit harness.Stat
	for _, r := range rows {
		if r.Scenario == "reconnect storm" && r.Figure == "time to caught up" {
			limit = r.Value
		}
	}
	samples, err := repeat(sz.Runs, fmt.Sprintf("two VM processors sharing a storm (%d VMs)", sz.VMs),
		func() (storm.HandoverSample, error) { return storm.RunHandover(ctx, sz, dsn, log) })
	return storm.HandoverRows(sz, samples, limit, err)
}

// latencySize is the action-latency scenario's size for this run.
func latencySize(quick bool, runs int, g groups) (storm.LatencySize, error) {
	ls := storm.LatencyFull
	if quick {
		ls = storm.LatencyQuick
	}
	if runs > 0 {
		ls.Runs = runs
	}
	err := profileRates(&ls.Rates, g, "latency")
	return ls, err
}

// profileRates sets rates from VMPLANE_BENCH_RATES (100,500) when group
// runs alone: the rates of a profiling run (never recorded).
func profileRates(rates *[]int, g groups, group string) error {
	v := os.Getenv("VMPLANE_BENCH_RATES")
	if v == "" || !g.alone(group) {
		return nil
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		r, err := strconv.Atoi(f)
		if err != nil || r <= 0 {
			return fmt.Errorf("VMPLANE_BENCH_RATES: %q is not a rate", f)
		}
		out = append(out, r)
	}
	*rates = out
	return nil
}

// latencyRows runs the action-latency scenario ls.Runs times, up to the
// first failure, and returns its rows.
func latencyRows(ctx context.Context, ls storm.LatencySize, dsn string) []harness.Row {
	samples, err := repeat(ls.Runs, fmt.Sprintf("action latency (%v actions/s, %s each)", ls.Rates, ls.Duration),
		func() (storm.LatencySample, error) { return storm.RunLatencyIsolated(ctx, ls, dsn) })
	return storm.LatencyRows(ls, samples, err)
}

// deploySize is the deploy open loop's size for this run.
func deploySize(quick bool, runs int, g groups) (storm.DeploySize, error) {
	ds := storm.DeployFull
	if quick {
		ds = storm.DeployQuick
	}
	if runs > 0 {
		ds.Runs = runs
	}
	err := profileRates(&ds.Rates, g, "deploy")
	return ds, err
}

// deployRows runs the deploy open loop ds.Runs times, up to the first
// failure, each repetition in a child process, and returns its rows.
func deployRows(ctx context.Context, ds storm.DeploySize, dsn string) []harness.Row {
	samples, err := repeat(ds.Runs, fmt.Sprintf("deploy latency (%d hosts; %v deploys/s, %s each)", ds.Hosts, ds.Rates, ds.Duration),
		func() (storm.DeploySample, error) { return storm.RunDeploysIsolated(ctx, ds, dsn) })
	return storm.DeployRows(ds, samples, err)
}

// repeat runs one repetition runs times, up to the first failure, saying
// which on stderr, and returns the samples with that failure.
func repeat[S any](runs int, what string, one func() (S, error)) ([]S, error) {
	var samples []S
	for i := range runs {
		fmt.Fprintf(os.Stderr, "bench: %s, run %d/%d\n", what, i+1, runs)
		s, err := one()
		if err != nil {
			return samples, err
		}
		samples = append(samples, s)
	}
	return samples, nil
}

// printRun prints the table of figures and the machine they were taken on.
func printRun(r harness.Run, pgVersion string) {
	fmt.Println()
	harness.Print(os.Stdout, r.Rows)
	fmt.Printf("\nmachine: %d cores, %d MiB, %s (%s); Go %s, franz-go %s, kfake %s, Postgres %s, ClickHouse %s; took %s\n",
		r.Machine.Cores, r.Machine.MemoryMiB, r.Machine.CPU, r.Machine.Probe, r.Machine.Go, r.Machine.FranzGo, r.Machine.Kfake, pgVersion, r.Machine.ClickHouse, r.Duration.Round(time.Second))
}

// recordRun writes the run's results file and, for a full run, its row of
// the history in benchmarks/README.md.
func recordRun(r harness.Run) error {
	path, err := harness.Write("benchmarks/results", r)
	if err != nil {
		return err
	}
	fmt.Println("results:", path)
	if !r.Quick {
		if err := harness.AppendHistory("benchmarks/README.md", r, strings.TrimPrefix(path, "benchmarks/")); err != nil {
			return err
		}
	}
	return nil
}
