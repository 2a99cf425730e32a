package storm

import (
	"testing"
	"time"
)

// TestDeployRows: the highest rate under the ceiling stops at the first
// rate past it or failed, and a rate no run reached has no rows.
func TestDeployRows(t *testing.T) {
	ms := func(d ...int) []time.Duration {
		var out []time.Duration
		for _, v := range d {
			out = append(out, time.Duration(v)*time.Millisecond)
		}
		return out
	}
	ds := DeploySize{Hosts: 10, Rates: []int{500, 1000, 2000, 3000}, Target: 500, Duration: time.Second, Ceiling: 100 * time.Millisecond, Runs: 2}
	samples := []DeploySample{
		{Actions: map[int][]time.Duration{500: ms(5, 9), 1000: ms(20, 90), 2000: ms(50, 400)}, Errs: map[int]string{}},
		{Actions: map[int][]time.Duration{500: ms(6, 12), 1000: ms(30, 80)}, Errs: map[int]string{2000: "30 of 2000 actions failed"}},
	}
	if got := samples[0].highestUnder(ds); got != 1000 {
		t.Errorf("run 1: highest %d, want 1000", got)
	}
	if got := samples[1].highestUnder(ds); got != 1000 {
		t.Errorf("run 2: highest %d, want 1000", got)
	}
	rows := DeployRows(ds, samples, nil)
	figures := map[string]bool{}
	for _, r := range rows {
		figures[r.Figure] = r.Pass
	}
	for fig, pass := range map[string]bool{
		"deploy p99 at 500 deploys/s":       true, // 12 ms ≤ 15
		"deploy p99 at 1000 deploys/s":      true,
		"deploy p99 at 2000 deploys/s":      true, // no target; one run failed, one has figures
		"highest rate with p99 under 100ms": true,
		"10 hosts Up":                       true,
	} {
		if got, ok := figures[fig]; !ok || got != pass {
			t.Errorf("row %q: present %v, pass %v; want pass %v", fig, ok, got, pass)
		}
	}
	if _, ok := figures["deploy p50 at 3000 deploys/s"]; ok {
		t.Error("a rate no run reached has rows")
	}
	samples[0].Actions[500] = ms(5, 40)
	for _, r := range DeployRows(ds, samples, nil) {
		if r.Figure == "deploy p99 at 500 deploys/s" && r.Pass {
			t.Errorf("p99 %v at 500/s passes the 15 ms target", r.Value)
		}
	}
}
