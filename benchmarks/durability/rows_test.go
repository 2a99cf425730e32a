package durability

import (
	"bytes"
	"log/slog"
	"os"
	"testing"

	"github.com/vmplane/vmplane/benchmarks/harness"
)

// TestQuickRows runs the scenario at a tiny size once: every row is there
// with a figure and a limit, and the data directories are gone after it.
func TestQuickRows(t *testing.T) {
	if testing.Short() {
		t.Skip("writes to disk and fsyncs")
	}
	varDir := t.TempDir()
	sz := size{produces: 20, pipelined: 500, txns: 5, syncs: 10}
	rows := rows(t.Context(), sz, 1, varDir, slog.New(slog.NewTextHandler(t.Output(), nil)))
	var out bytes.Buffer
	harness.Print(&out, rows)
	t.Log("\n" + out.String())
	if len(rows) != 2*len(figures) {
		t.Fatalf("%d rows, want %d", len(rows), 2*len(figures))
	}
	for _, r := range rows {
		if r.Err != "" {
			t.Fatalf("%s: %s", r.Figure, r.Err)
		}
		if len(r.Value.Samples) != 1 || r.Value.Median <= 0 || r.Limit.Median <= 0 {
			t.Errorf("%s = %+v", r.Figure, r)
		}
	}
	left, err := os.ReadDir(varDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("%d entries left in the var dir, want none", len(left))
	}
}
