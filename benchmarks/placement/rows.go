package placement

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"

	"github.com/vmplane/vmplane/benchmarks/harness"
	pl "github.com/vmplane/vmplane/processors/placement"
)

// Targets of issue 31, decisions/s: every planner at 10,000 hosts, and
// FirstFit in a zone of largeZone hosts.
const (
	plannerTarget   = 50_000
	largeZoneTarget = 10_000
	largeZone       = 100_000
)

// decideTarget is the target of a BenchmarkDecide case, 0 for none (the
// storage cases and the 1,000-host zone are for comparison).
func decideTarget(hosts int, planner string) float64 {
	switch {
	case hosts == 10_000 && !strings.HasSuffix(planner, "+storage"):
		return plannerTarget
	case hosts == largeZone && planner == pl.FirstFitName:
		return largeZoneTarget
	}
	return 0
}

var benchLine = regexp.MustCompile(`^BenchmarkDecide/hosts=(\d+)/(\S+?)(-\d+)?\s+\d+\s+.*?([\d.e+]+) decisions/s`)

// quickEnv, set to 1 in BenchmarkDecide's environment, shrinks the scenario
// for `make bench QUICK=1`, which only checks that the harness runs and
// produces its rows: one live VM per host instead of the steady fill of 32
// (whose 320,000 placements at 10,000 hosts took 12–16 s of the quick
// pass's minute on a slow day) and 2,000 timed decisions. Its figures are
// not comparable with a full run's.
const quickEnv = "VMPLANE_BENCH_PLACEMENT_QUICK"

// Rows returns the placement rows: BenchmarkDecide's, a row per zone size
// and planner, then the Kafka rows (kafka.go), each scenario count times;
// quick shrinks both.
func Rows(ctx context.Context, count int, quick bool) []harness.Row {
	return append(decideRows(ctx, count, quick), kafkaRows(ctx, count, quick)...)
}

// decideRows runs BenchmarkDecide with `go test` (count runs of one
// iteration of 20,000 decisions each).
func decideRows(ctx context.Context, count int, quick bool) []harness.Row {
	// No test timeout: twelve zones of up to 340,000 decisions, three times,
	// ran 12 minutes on a slow day of this machine (go test's default is 10).
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", "^BenchmarkDecide$",
		"-benchtime=1x", "-count", strconv.Itoa(count), "-timeout", "0", "./benchmarks/placement")
	how := "the placement machine's Step alone (no Kafka), zone kept at a steady fill of 32 live VMs per host (8 for ImplicitDedicationPlanner); decisions / wall clock over 20,000 PlaceVm (each with the release of an old VM), per `go test -bench BenchmarkDecide -benchtime=1x` run (benchmarks/placement/decide_test.go)."
	if quick {
		cmd.Env = append(os.Environ(), quickEnv+"=1")
		how = "quick size, not comparable with a full run: the placement machine's Step alone (no Kafka), zone at a fill of 1 live VM per host; decisions / wall clock over 2,000 PlaceVm (each with the release of an old VM), one `go test -bench BenchmarkDecide -benchtime=1x` run (benchmarks/placement/decide_test.go)."
	}
	out, err := cmd.CombinedOutput()
	type decideCase struct {
		hosts   int
		planner string
	}
	samples := map[decideCase][]float64{}
	var order []decideCase
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		hosts, _ := strconv.Atoi(m[1])
		k := decideCase{hosts, m[2]}
		if _, ok := samples[k]; !ok {
			order = append(order, k)
		}
		v, _ := strconv.ParseFloat(m[4], 64)
		samples[k] = append(samples[k], v)
	}
	if len(order) == 0 {
		r := harness.Row{Scenario: "placement", Figure: "decisions/s", Unit: "decisions/s", How: how,
			Err: fmt.Sprintf("no benchmark result (%v): %s", err, lastLines(out, 5))}
		r.Judge()
		return []harness.Row{r}
	}
	var rows []harness.Row
	for _, k := range order {
		r := harness.Row{Scenario: "placement", Figure: fmt.Sprintf("decisions/s at %d hosts, %s", k.hosts, k.planner),
			Unit: "decisions/s", Value: harness.Summarize(samples[k]), How: how}
		if t := decideTarget(k.hosts, k.planner); t > 0 {
			r.Target = &harness.Target{AtLeast: true, Value: t}
		}
		r.Judge()
		rows = append(rows, r)
	}
	return rows
}

func lastLines(b []byte, n int) string {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte(" | ")))
}
