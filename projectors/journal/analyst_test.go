package journal

import (
	"errors"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vmplane/vmplane/internal/chserver"
	"github.com/vmplane/vmplane/internal/testkit"
)

// slowQuery sleeps 10 µs a row, 0.65 s a block of 65,536 rows, and reads
// few rows: only a time limit stops it soon.
const slowQuery = "SELECT count() FROM system.numbers WHERE sleepEachRow(0.00001) = 0"

// wideRows returns a query answering n rows of about width bytes each.
func wideRows(n, width int) string {
	return "SELECT concat(toString(number), '" + strings.Repeat("x", width) + "') AS s FROM system.numbers LIMIT " + strconv.Itoa(n)
}

// tightAnalyst gives db's analyst user small limits, so that a test meets
// them in a second.
func tightAnalyst(t *testing.T, addr, db string) {
	t.Helper()
	err := chserver.EnsureAnalyst(t.Context(), addr, db, chserver.AnalystLimits{
		MaxExecutionTime: time.Second, MaxRowsToRead: 1_000_000,
		MaxResultRows: 1_000_000, MaxResultBytes: 4 << 20, MaxMemoryUsage: 500_000_000})
	if err != nil {
		t.Fatal(err)
	}
}

// refusal runs q and returns its QueryError and how long the refusal took.
func refusal(t *testing.T, h *History, q string) (*QueryError, time.Duration) {
	t.Helper()
	t0 := time.Now()
	_, err := h.Query(t.Context(), q, 10_000)
	var qe *QueryError
	if !errors.As(err, &qe) {
		t.Fatalf("%.60s…: %v, want a QueryError", q, err)
	}
	if addr := regexp.MustCompile(`\d+\.\d+\.\d+\.\d+|localhost:|:\d{4,5}\b`).FindString(qe.Message); addr != "" {
		t.Errorf("the refusal of %.60s… names %q: %s", q, addr, qe.Message)
	}
	return qe, time.Since(t0)
}

// TestAnalystLimits: the analyst profile on the real ClickHouse refuses a
// query that reads too many rows before it reads them, stops one that runs
// too long, and refuses an answer larger than its max_result_bytes; no
// other database is the analyst's.
func TestAnalystLimits(t *testing.T) {
	_, addr, db := testClickHouse(t)
	tightAnalyst(t, addr, db)
	h, err := OpenHistory(addr, db, chserver.Access{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()

	qe, took := refusal(t, h, "SELECT sum(number) FROM (SELECT number FROM system.numbers LIMIT 50000000)")
	if !qe.Limit || !strings.Contains(qe.Message, "Limit for rows") || took > 3*time.Second {
		t.Errorf("50M rows read: %+v after %v", qe, took)
	}
	qe, took = refusal(t, h, slowQuery)
	if !qe.Timeout || !strings.Contains(qe.Message, "Timeout exceeded") || took > 4*time.Second {
		t.Errorf("a slow query: %+v after %v", qe, took)
	}
	qe, _ = refusal(t, h, wideRows(200_000, 1000)) // 200 MB
	if !qe.Limit || !strings.Contains(qe.Message, "Limit for result") {
		t.Errorf("a 200 MB answer: %+v", qe)
	}

	other, otherDB := testkit.ClickHouse(t)
	conn, err := Open(other, chserver.Access{})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.Exec(t.Context(), "CREATE TABLE `"+otherDB+"`.secret (n UInt64) ENGINE = MergeTree() ORDER BY n"); err != nil {
		t.Fatal(err)
	}
	qe, _ = refusal(t, h, "SELECT count() FROM `"+otherDB+"`.secret")
	if qe.Limit || qe.Timeout || !strings.Contains(qe.Message, "Access denied to database "+otherDB) {
		t.Errorf("another stack's database: %+v", qe)
	}
	qe, _ = refusal(t, h, "SELEC 1")
	if qe.Limit || qe.Timeout || !strings.Contains(qe.Message, "Syntax error") {
		t.Errorf("a bad query: %+v", qe)
	}
}

// TestAnalystQueryKilledAtTimeout: a query that outlives QueryLimits.Timeout
// (the server's own limit being longer) is refused at once and gone from
// the server soon after.
func TestAnalystQueryKilledAtTimeout(t *testing.T) {
	conn, addr, db := testClickHouse(t)
	h, err := OpenHistory(addr, db, chserver.Access{}, WithQueryLimits(QueryLimits{Timeout: 500 * time.Millisecond, MaxBytes: 1 << 20}))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	qe, took := refusal(t, h, slowQuery)
	if !qe.Timeout || !strings.Contains(qe.Message, "ran longer than 500ms") || took > 2*time.Second {
		t.Fatalf("refusal %+v after %v", qe, took)
	}
	eventually(t, 3*time.Second, "the query gone from system.processes", func() bool {
		return count(t, conn, "SELECT count() FROM system.processes WHERE user = ?", chserver.AnalystUser(db)) == 0
	})
}

// TestAnalystAnswerCapped: an answer of 1 GB from a server whose profile
// does not bound answers is refused once its text passes
// QueryLimits.MaxBytes, and the process reads a few blocks of it, not all.
func TestAnalystAnswerCapped(t *testing.T) {
	_, addr, db := testClickHouse(t)
	if err := chserver.EnsureAnalyst(t.Context(), addr, db, chserver.AnalystLimits{MaxExecutionTime: time.Minute}); err != nil {
		t.Fatal(err)
	}
	h, err := OpenHistory(addr, db, chserver.Access{}, WithQueryLimits(QueryLimits{Timeout: 30 * time.Second, MaxBytes: 1 << 20}))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	qe, _ := refusal(t, h, wideRows(2_000_000, 500)) // 1 GB
	runtime.ReadMemStats(&after)
	if !qe.Limit || !strings.Contains(qe.Message, "more than 1 MiB of text") {
		t.Fatalf("refusal %+v", qe)
	}
	// What the driver decoded, the rows and their text: a few blocks of
	// 33 MB, where reading the whole answer allocates more than 1 GB.
	grew := after.TotalAlloc - before.TotalAlloc
	if grew > 300<<20 {
		t.Fatalf("the process allocated %d MiB for a capped answer", grew>>20)
	}
	t.Logf("a capped 1 GB answer allocated %d MiB", grew>>20)
}

func TestScrubAddresses(t *testing.T) {
	for in, want := range map[string]string{
		"Received from localhost:9000, 127.0.0.1. Code: 1":    "Received from <address>, <address>. Code: 1",
		"Connection refused ([::1]:9000) and 10.1.2.3:45678":  "Connection refused (<address>) and <address>",
		"Cannot parse datetime 2026-01-01 12:30:45: at pos 3": "Cannot parse datetime 2026-01-01 12:30:45: at pos 3",
		"Limit for rows exceeded, maximum: 1000000":           "Limit for rows exceeded, maximum: 1000000",
	} {
		if got := scrubAddresses(in); got != want {
			t.Errorf("scrubAddresses(%q) = %q, want %q", in, got, want)
		}
	}
}
