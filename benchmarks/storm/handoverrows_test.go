package storm

import (
	"testing"
	"time"

	"github.com/vmplane/vmplane/benchmarks/harness"
)

// TestHandoverRows: the invariants' rows fail on any count but 0, and the
// limit is the storm's only when the storm ran.
func TestHandoverRows(t *testing.T) {
	ok := HandoverSample{CaughtUp: 16 * time.Second, Stalled: 5 * time.Second, Changed: 10, Applied: 10}
	pass := func(rows []harness.Row) map[string]bool {
		m := map[string]bool{}
		for _, r := range rows {
			m[r.Figure] = r.Pass
		}
		return m
	}
	rows := HandoverRows(Quick, []HandoverSample{ok}, harness.Stat{}, nil)
	for fig, p := range pass(rows) {
		if !p {
			t.Errorf("%s fails on a clean hand-over", fig)
		}
	}
	if rows[0].LimitName != "" {
		t.Errorf("a limit without a storm: %q", rows[0].LimitName)
	}
	bad := ok
	bad.Applied, bad.Doubled, bad.Jobs = 9, 1, 2
	got := pass(HandoverRows(Quick, []HandoverSample{bad}, harness.Summarize([]float64{2}), nil))
	for _, fig := range []string{"reports applied twice", "reports not applied", "jobs started"} {
		if got[fig] {
			t.Errorf("%s passes with a count", fig)
		}
	}
}
