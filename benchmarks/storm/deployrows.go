package storm

import (
	"fmt"
	"strings"

	"github.com/vmplane/vmplane/benchmarks/harness"
)

// DeployRows turns the deploy open loop's repetitions into rows: p50 and
// p99 at each rate sent, the highest rate whose p99 stayed under the
// ceiling, and how long the zone's hosts took to come Up.
func DeployRows(ds DeploySize, samples []DeploySample, err error) []harness.Row {
	scen := "deploy latency"
	how := fmt.Sprintf("open loop into one zone of %d sim hosts (20 clusters, 1,024 vCPUs each, so the zone never fills): a POST /v1/vms {name, offering} every 1/rate s for %s, whatever has completed, through the gateway, VM processor, placement processor (FirstFitPlanner), sim agent (zero-latency driver), host, host-relay and lease processors and Postgres projector wired by ops/roles in a child process of the harness (one per repetition) on a fresh kfake broker and database, after 30 warm-up deploys. "+
		"Each deploy from just before its POST to the answer of the GET /v1/jobs/{id}?wait=60s sent right after it, which shows it succeeded. A failed deploy counts at the time it took to fail; more than 1 %% failed at a rate leaves it without figures. Rates are sent in turn, each to new VMs, up to the first whose p99 is past %s (but at least up to %d/s).", ds.Hosts, ds.Duration, ds.Ceiling, ds.Target)
	var rows []harness.Row
	for _, rate := range ds.Rates {
		measured, missing := deploysAt(samples, rate)
		if len(measured) == 0 && len(missing) == 0 {
			continue // no run reached this rate: a lower one was past the ceiling
		}
		for _, q := range []float64{50, 99} {
			r := harness.Row{Scenario: scen, Figure: fmt.Sprintf("deploy p%g at %d deploys/s", q, rate), Unit: "ms",
				Value: summarizeDeploys(measured, func(s DeploySample) float64 { return harness.Millis(harness.Percentile(s.Actions[rate], q)) }),
				How:   how, Notes: fmt.Sprintf("last run: %d deploys measured, %d failed; %s", len(last(measured).Actions[rate]), last(measured).Failed[rate], last(measured).Stages[rate])}
			if q == 99 && rate == ds.Target {
				r.Target = &harness.Target{Value: 15}
			}
			if len(missing) > 0 {
				r.Notes = fmt.Sprintf("%d of %d runs without figures at this rate (%s); %s", len(missing), len(samples), strings.Join(missing, "; "), r.Notes)
				if len(measured) == 0 {
					r.Err = strings.Join(missing, "; ")
				}
			}
			r.Judge()
			rows = append(rows, r)
		}
	}
	best := harness.Row{Scenario: scen, Figure: fmt.Sprintf("highest rate with p99 under %s", ds.Ceiling), Unit: "deploys/s",
		Value: summarizeDeploys(samples, func(s DeploySample) float64 { return float64(s.highestUnder(ds)) }),
		How:   fmt.Sprintf("the highest of the rates sent (%v) whose p99 stayed under %s, per repetition; 0: not even the first.", ds.Rates, ds.Ceiling)}
	up := harness.Row{Scenario: scen, Figure: fmt.Sprintf("%d hosts Up", ds.Hosts), Unit: "s",
		Value: summarizeDeploys(samples, func(s DeploySample) float64 { return s.HostsUp.Seconds() }),
		How:   "from starting the processors and the sim agent of the zone until the read model has every host Up (registration and the first report round of each, through the host processor and the projector)."}
	for _, r := range []*harness.Row{&best, &up} {
		if err != nil {
			r.Err = err.Error()
		}
		r.Judge()
	}
	return append(rows, best, up)
}

// highestUnder is the highest rate of ds whose p99 in s is under the
// ceiling, sent without failing.
func (s DeploySample) highestUnder(ds DeploySize) int {
	best := 0
	for _, rate := range ds.Rates {
		if s.Errs[rate] != "" || len(s.Actions[rate]) == 0 || harness.Percentile(s.Actions[rate], 99) > ds.Ceiling {
			break
		}
		best = rate
	}
	return best
}

// deploysAt splits the repetitions that sent rate into those with figures
// and, for the others, why not.
func deploysAt(samples []DeploySample, rate int) (measured []DeploySample, missing []string) {
	for i, s := range samples {
		switch e, sent := s.Errs[rate], len(s.Actions[rate]) > 0; {
		case e != "":
			missing = append(missing, fmt.Sprintf("run %d: %s", i+1, e))
		case sent:
			measured = append(measured, s)
		}
	}
	return measured, missing
}

func summarizeDeploys(samples []DeploySample, f func(DeploySample) float64) harness.Stat {
	var v []float64
	for _, s := range samples {
		v = append(v, f(s))
	}
	return harness.Summarize(v)
}
