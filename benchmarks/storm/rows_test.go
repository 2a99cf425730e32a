package storm

import (
	"strings"
	"testing"
	"time"
)

// actions is n actions of d each.
func actions(n int, d time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

func TestLatencyRowsLeaveOutRunsWithoutFigures(t *testing.T) {
	ls := LatencySize{Rates: []int{500, 1000}, Duration: 5 * time.Second, Runs: 3}
	hop := actions(10, time.Millisecond)
	overloaded := LatencySample{
		Actions: map[int][]time.Duration{500: actions(100, 5*time.Millisecond)},
		Failed:  map[int]int{1000: 61},
		Errs:    map[int]string{1000: "61 of 5000 actions failed, first: job rejected"},
		Hop:     hop,
	}
	ok := func(d time.Duration) LatencySample {
		return LatencySample{Actions: map[int][]time.Duration{500: actions(100, 5*time.Millisecond), 1000: actions(100, d)}, Hop: hop}
	}
	rows := LatencyRows(ls, []LatencySample{overloaded, ok(40 * time.Millisecond), ok(60 * time.Millisecond)}, nil)
	byFigure := map[string]int{}
	for i, r := range rows {
		byFigure[r.Figure] = i
	}
	target := rows[byFigure["reboot p99 at 500 actions/s"]]
	if !target.Pass || target.Value.Median != 5 || len(target.Value.Samples) != 3 {
		t.Errorf("500/s p99: pass %v, %+v; want a pass over three runs of 5 ms", target.Pass, target.Value)
	}
	for _, q := range []string{"p50", "p95", "p99"} {
		r := rows[byFigure["reboot "+q+" at 1000 actions/s"]]
		if r.Pass || r.Err != "" {
			t.Errorf("1000/s %s: pass %v, err %q; want a failed row with figures", q, r.Pass, r.Err)
		}
		if len(r.Value.Samples) != 2 || r.Value.Min != 40 || r.Value.Max != 60 {
			t.Errorf("1000/s %s: %+v; want the two runs with figures, 40 and 60 ms (no 0 for the run without)", q, r.Value)
		}
		if !strings.Contains(r.Notes, "1 of 3 runs without figures at this rate (run 1: 61 of 5000 actions failed") {
			t.Errorf("1000/s %s notes %q do not name the run without figures", q, r.Notes)
		}
	}

	// No run with figures at a rate: the rows are errors.
	rows = LatencyRows(LatencySize{Rates: []int{1000}, Runs: 1}, []LatencySample{overloaded}, nil)
	for _, r := range rows {
		if r.Pass || !strings.Contains(r.Err, "run 1: 61 of 5000 actions failed") {
			t.Errorf("%s: pass %v, err %q; want an error naming run 1", r.Figure, r.Pass, r.Err)
		}
	}
}
