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

	"github.com/vmplane/vmplane/benchmarks/harness"
)

// firstFitTarget is the placement target (decisions/s at 10,000 hosts, FirstFit).
const firstFitTarget = 5_000

var benchLine = regexp.MustCompile(`^BenchmarkDecide/hosts=(\d+)/(\S+?)(-\d+)?\s+\d+\s+.*?([\d.e+]+) decisions/s`)

// quickEnv, set to 1 in BenchmarkDecide's environment, shrinks the scenario
// for `make bench QUICK=1`, which only checks that the harness runs and
// produces its rows: one live VM per host instead of the steady fill of 32
// (whose 320,000 placements at 10,000 hosts took 12–16 s of the quick
// pass's minute on a slow day) and 2,000 timed decisions. Its figure is not
// comparable with a full run's.
const quickEnv = "VMPLANE_BENCH_PLACEMENT_QUICK"

// Rows runs BenchmarkDecide with `go test` (count runs of one iteration of
// 20,000 decisions each) and returns a row per zone size and planner.
// pattern narrows the sub-benchmarks (quick mode runs 10,000 hosts,
// FirstFitPlanner only); quick shrinks the fill and the timed decisions.
func Rows(ctx context.Context, pattern string, count int, quick bool) []harness.Row {
	// No test timeout: twelve zones of up to 340,000 decisions, three times,
	// ran 12 minutes on a slow day of this machine (go test's default is 10).
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", "^BenchmarkDecide$/"+pattern,
		"-benchtime=1x", "-count", strconv.Itoa(count), "-timeout", "0", "./benchmarks/placement")
	how := "the placement machine's Step alone (no Kafka), zone kept at a steady fill of 32 live VMs per host (8 for ImplicitDedicationPlanner); decisions / wall clock over 20,000 PlaceVm (each with the release of an old VM), per `go test -bench BenchmarkDecide -benchtime=1x` run (benchmarks/placement/decide_test.go)."
	if quick {
		cmd.Env = append(os.Environ(), quickEnv+"=1")
		how = "quick size, not comparable with a full run: the placement machine's Step alone (no Kafka), zone at a fill of 1 live VM per host; decisions / wall clock over 2,000 PlaceVm (each with the release of an old VM), one `go test -bench BenchmarkDecide -benchtime=1x` run (benchmarks/placement/decide_test.go)."
	}
	out, err := cmd.CombinedOutput()
	samples := map[string][]float64{}
	var order []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		key := m[1] + " hosts, " + m[2]
		if _, ok := samples[key]; !ok {
			order = append(order, key)
		}
		v, _ := strconv.ParseFloat(m[4], 64)
		samples[key] = append(samples[key], v)
	}
	if len(order) == 0 {
		r := harness.Row{Scenario: "placement", Figure: "decisions/s", Unit: "decisions/s", How: how,
			Err: fmt.Sprintf("no benchmark result (%v): %s", err, lastLines(out, 5))}
		r.Judge()
		return []harness.Row{r}
	}
	var rows []harness.Row
	for _, k := range order {
		r := harness.Row{Scenario: "placement", Figure: "decisions/s at " + k, Unit: "decisions/s",
			Value: harness.Summarize(samples[k]), How: how}
		if k == "10000 hosts, FirstFitPlanner" {
			r.Target = &harness.Target{AtLeast: true, Value: firstFitTarget}
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
