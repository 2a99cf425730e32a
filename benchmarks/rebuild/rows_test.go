package rebuild

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/vmplane/vmplane/benchmarks/harness"
	"github.com/vmplane/vmplane/internal/testkit"
)

// TestQuickRows runs the scenario at its quick size once: the rebuild row
// is there, with a figure and a limit and no error.
func TestQuickRows(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the embedded broker and Postgres")
	}
	rows := Rows(t.Context(), true, 1, testkit.PostgresDSN(), slog.New(slog.NewTextHandler(t.Output(), nil)))
	var out bytes.Buffer
	harness.Print(&out, rows)
	t.Log("\n" + out.String())
	if len(rows) != 1 {
		t.Fatalf("%d rows, want 1", len(rows))
	}
	r := rows[0]
	if r.Err != "" {
		t.Fatalf("rebuild row: %s", r.Err)
	}
	if r.Scenario != "rebuild" || len(r.Value.Samples) != 1 || r.Value.Median <= 0 || r.Limit.Median <= 0 {
		t.Fatalf("rebuild row = %+v", r)
	}
}
