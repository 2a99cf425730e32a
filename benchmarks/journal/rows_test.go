package journal

import (
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/vmplane/vmplane/benchmarks/harness"
)

// TestQuickRows runs the scenario at its quick size once: both rows are
// there, with figures and no error.
func TestQuickRows(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the embedded broker, ClickHouse and clickhouse-client")
	}
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	rows := Rows(t.Context(), true, 1, log)
	harness.Print(t.Output(), rows)
	want := []string{"ingest rows/s", "analyst query p50/p95 job duration by type per day"}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for i, r := range rows {
		if r.Scenario != "journal" || r.Figure != want[i] {
			t.Errorf("row %d is %s / %s, want journal / %s", i, r.Scenario, r.Figure, want[i])
		}
		if r.Err != "" {
			t.Errorf("%s: %s", r.Figure, r.Err)
		}
		if r.Value.Median <= 0 || len(r.Value.Samples) != 1 {
			t.Errorf("%s: no figure: %+v", r.Figure, r.Value)
		}
	}
	if rows[0].Limit.Median <= 0 {
		t.Errorf("ingest: no limit: %+v", rows[0].Limit)
	}
}

// The benchmark times the query analysts are given: query 2 of
// docs/analytics.md, word for word but for the database prefix.
func TestAnalystQueryIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/analytics.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(doc), "### 2. ")
	if !ok {
		t.Fatal("docs/analytics.md has no query 2")
	}
	_, block, _ := strings.Cut(sec, "```sql\n")
	block, _, _ = strings.Cut(block, "\n```")
	if want := strings.ReplaceAll(analystQuery, "%s.", ""); block != want {
		t.Fatalf("docs/analytics.md query 2:\n%s\nbenchmarked:\n%s", block, want)
	}
}
