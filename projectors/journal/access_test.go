package journal

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vmplane/vmplane/internal/chserver"
)

// TestProductionUsers runs the users of docs/operations.md ("ClickHouse
// users", testdata/users-vmplane.xml) on a ClickHouse server of its own:
// the writer logs in only with its password, migrates the journal and
// reads it; the analyst logs in only with its own and may read but not
// write; nobody gets in with no password or a wrong one.
func TestProductionUsers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts clickhouse-server")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	varDir := t.TempDir()
	srv, err := chserver.Ensure(t.Context(), addr, varDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	doc, err := os.ReadFile("testdata/users-vmplane.xml")
	if err != nil {
		t.Fatal(err)
	}
	usersD := filepath.Join(varDir, "clickhouse", "users.d")
	if err := os.MkdirAll(usersD, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(usersD, "vmplane.xml"), doc, 0o644); err != nil {
		t.Fatal(err)
	}
	admin, err := chserver.Access{}.Open(addr, "")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := admin.Exec(t.Context(), "SYSTEM RELOAD CONFIG"); err != nil {
		t.Fatal(err)
	}

	writer := chserver.Access{User: "vmplane", Password: "writer-secret", AnalystPassword: "analyst-secret"}
	for _, a := range []chserver.Access{{User: "vmplane"}, {User: "vmplane", Password: "wrong"}, {User: "analyst_vmplane"}} {
		conn, err := Open(addr, a)
		if err != nil {
			t.Fatal(err)
		}
		err = conn.Ping(t.Context())
		conn.Close()
		if err == nil || !strings.Contains(strings.ToLower(err.Error()), "password") {
			t.Errorf("%s with password %q: %v, want refused", a.User, a.Password, err)
		}
	}

	conn, err := Open(addr, writer)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := Migrate(t.Context(), conn, "vmplane"); err != nil {
		t.Fatalf("the writer migrates: %v", err)
	}
	h, err := OpenHistory(addr, "vmplane", writer)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := h.JobJournal(t.Context(), "job-1"); err != nil {
		t.Fatalf("the writer reads the journal: %v", err)
	}
	tbl, err := h.Query(t.Context(), "SELECT count() FROM job_journal", 10)
	if err != nil || len(tbl.Rows) != 1 || tbl.Rows[0][0] != "0" {
		t.Fatalf("the analyst reads: %+v, %v", tbl, err)
	}
	for _, q := range []string{"DROP TABLE job_journal", "CREATE TABLE t (x UInt8) ENGINE = Memory", "SELECT * FROM system.users_no_such"} {
		var qe *QueryError
		if _, err := h.Query(t.Context(), q, 10); !errors.As(err, &qe) {
			t.Errorf("the analyst ran %q: %v", q, err)
		}
	}
	// An analyst's query that outlives the gateway's limit ends: the
	// driver cancels it and the writer kills it (the profile's own 30 s
	// are past the test's patience).
	slow, err := OpenHistory(addr, "vmplane", writer, WithQueryLimits(QueryLimits{Timeout: 500 * time.Millisecond, MaxBytes: 1 << 20}))
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	var qe *QueryError
	if _, err := slow.Query(t.Context(), slowQuery, 10); !errors.As(err, &qe) || !qe.Timeout {
		t.Fatalf("a slow analyst query: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n uint64
		if err := admin.QueryRow(t.Context(), "SELECT count() FROM system.processes WHERE user = 'analyst_vmplane'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the analyst's query still runs")
		}
		time.Sleep(100 * time.Millisecond)
	}

	wrong := writer
	wrong.AnalystPassword = "wrong"
	h2, err := OpenHistory(addr, "vmplane", wrong)
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close()
	if _, err := h2.Query(t.Context(), "SELECT 1", 10); !errors.Is(err, ErrNoAnalyst) {
		t.Errorf("a wrong analyst password: %v, want ErrNoAnalyst", err)
	}
}
