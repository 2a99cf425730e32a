package chserver

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

func sparePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func open(t testing.TB, addr, user, database string) driver.Conn {
	t.Helper()
	conn, err := clickhouse.Open(&clickhouse.Options{
		Addr:     []string{addr},
		Protocol: clickhouse.Native,
		Auth:     clickhouse.Auth{Username: user, Database: database},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func start(t *testing.T, opts ...Option) (Server, string) {
	t.Helper()
	varDir := t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", sparePort(t))
	srv, err := Ensure(t.Context(), addr, varDir, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv, varDir
}

func TestEnsureStartsServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts clickhouse-server")
	}
	srv, varDir := start(t)
	conn := open(t, srv.Addr(), "default", "default")

	var version string
	if err := conn.QueryRow(t.Context(), "SELECT version()").Scan(&version); err != nil {
		t.Fatal(err)
	}
	t.Logf("clickhouse %s at %s", version, srv.Addr())
	var tz string
	if err := conn.QueryRow(t.Context(), "SELECT timezone()").Scan(&tz); err != nil || !strings.HasSuffix(tz, "UTC") {
		t.Fatalf("timezone() = %q, %v; want UTC", tz, err)
	}

	// A second Ensure finds it and must not stop it.
	again, err := Ensure(t.Context(), srv.Addr(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !srv.Started() || again.Started() {
		t.Fatalf("Started() = %v, %v; want true, false", srv.Started(), again.Started())
	}
	again.Stop()
	if err := ping(t.Context(), srv.Addr(), Access{}); err != nil {
		t.Fatalf("Stop of a server Ensure did not start stopped it: %v", err)
	}

	for range 2 {
		if err := EnsureDatabase(t.Context(), srv.Addr(), "vm-plane"); err != nil {
			t.Fatal(err)
		}
	}
	db := open(t, srv.Addr(), "default", "vm-plane")
	if err := db.Exec(t.Context(), "CREATE TABLE t (id UInt64, s String) ENGINE = ReplacingMergeTree() ORDER BY id"); err != nil {
		t.Fatal(err)
	}
	// 18.16 waits for data blocks after an INSERT over the native protocol, even one with
	// inline VALUES, so rows go in as a batch.
	batch, err := db.PrepareBatch(t.Context(), "INSERT INTO t (id, s)")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		id uint64
		s  string
	}{{1, "a"}, {2, "b"}} {
		if err := batch.Append(r.id, r.s); err != nil {
			t.Fatal(err)
		}
	}
	if err := batch.Send(); err != nil {
		t.Fatal(err)
	}

	analyst := open(t, srv.Addr(), AnalystUser("vm-plane"), "vm-plane")
	var n uint64
	if err := analyst.QueryRow(t.Context(), "SELECT count() FROM t").Scan(&n); err != nil || n != 2 {
		t.Fatalf("analyst count() = %d, %v; want 2", n, err)
	}
	if _, err := analyst.PrepareBatch(t.Context(), "INSERT INTO t (id, s)"); err == nil {
		t.Fatal("analyst could insert")
	}
	if err := analyst.Exec(t.Context(), "CREATE DATABASE nope"); err == nil {
		t.Fatal("analyst could create a database")
	}
	// Another stack's database on the same server is not the analyst's.
	if err := EnsureDatabase(t.Context(), srv.Addr(), "other"); err != nil {
		t.Fatal(err)
	}
	if err := db.Exec(t.Context(), "CREATE TABLE other.secret (id UInt64) ENGINE = MergeTree() ORDER BY id"); err != nil {
		t.Fatal(err)
	}
	if err := analyst.QueryRow(t.Context(), "SELECT count() FROM other.secret").Scan(&n); err == nil || !strings.Contains(err.Error(), "Access denied") {
		t.Fatalf("analyst of vm-plane read other.secret: %v", err)
	}

	for _, f := range []string{"config.xml", "users.xml", "server.pid", "log/stdout.log", "data", "users.d/analyst_vm-plane.xml"} {
		if _, err := os.Stat(filepath.Join(varDir, "clickhouse", f)); err != nil {
			t.Errorf("expected %s under the var dir: %v", f, err)
		}
	}

	srv.Stop()
	if err := ping(t.Context(), srv.Addr(), Access{}); err == nil {
		t.Fatal("server still answers after Stop")
	}
	if _, err := os.Stat(filepath.Join(varDir, "clickhouse", "server.pid")); !os.IsNotExist(err) {
		t.Fatalf("server.pid left after Stop: %v", err)
	}
}

func TestTwoServersDoNotClash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts clickhouse-server")
	}
	a, aDir := start(t)
	b, bDir := start(t)
	for _, srv := range []Server{a, b} {
		if err := ping(t.Context(), srv.Addr(), Access{}); err != nil {
			t.Fatalf("%s: %v", srv.Addr(), err)
		}
	}
	if pa, pb := httpPortIn(t, aDir), httpPortIn(t, bDir); pa == pb {
		t.Fatalf("both servers were given http_port %s", pa)
	}
}

func httpPortIn(t testing.TB, varDir string) string {
	b, err := os.ReadFile(filepath.Join(varDir, "clickhouse", "config.xml"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, "<http_port>"), strings.Index(s, "</http_port>")
	if i < 0 || j < i {
		t.Fatalf("no http_port in config.xml:\n%s", s)
	}
	return s[i+len("<http_port>") : j]
}

func TestDetachedStopDir(t *testing.T) {
	if testing.Short() {
		t.Skip("starts clickhouse-server")
	}
	srv, varDir := start(t, Detached(), HTTPPort(sparePort(t)))
	if err := StopDir(t.Context(), varDir); err != nil {
		t.Fatal(err)
	}
	if err := ping(t.Context(), srv.Addr(), Access{}); err == nil {
		t.Fatal("server still answers after StopDir")
	}
	if err := StopDir(t.Context(), varDir); err != nil {
		t.Fatalf("StopDir with nothing running: %v", err)
	}

	// Ensure restarts on the same files.
	srv, err := Ensure(t.Context(), srv.Addr(), varDir, nil, Detached())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = StopDir(context.Background(), varDir) }()
	if err := ping(t.Context(), srv.Addr(), Access{}); err != nil {
		t.Fatal(err)
	}
}

func TestEnsureLeavesForeignListenerAlone(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, err = Ensure(t.Context(), l.Addr().String(), t.TempDir(), nil)
	if err == nil || !strings.Contains(err.Error(), "does not answer as clickhouse") {
		t.Fatalf("err = %v, want the listener reported", err)
	}
}

// TestAnalystLimitsAndPrune: a database's analyst user gets its limits
// (here a row limit the query exceeds), the limits follow a second
// EnsureAnalyst, readonly=1 ignores a query's own settings, and the user of
// a dropped database goes with the next EnsureAnalyst.
func TestAnalystLimitsAndPrune(t *testing.T) {
	if testing.Short() {
		t.Skip("starts clickhouse-server")
	}
	srv, varDir := start(t)
	ctx := t.Context()
	for _, name := range []string{"a", "gone"} {
		if err := EnsureDatabase(ctx, srv.Addr(), name); err != nil {
			t.Fatal(err)
		}
	}
	def := open(t, srv.Addr(), "default", "a")
	if err := def.Exec(ctx, "CREATE TABLE a.t (n UInt64) ENGINE = MergeTree() ORDER BY n"); err != nil {
		t.Fatal(err)
	}
	if err := def.Exec(ctx, "INSERT INTO a.t SELECT number FROM system.numbers LIMIT 100000"); err != nil {
		t.Fatal(err)
	}
	l := DefaultAnalystLimits()
	l.MaxRowsToRead = 1000
	if err := EnsureAnalyst(ctx, srv.Addr(), "a", l); err != nil {
		t.Fatal(err)
	}
	analyst := open(t, srv.Addr(), AnalystUser("a"), "a")
	var n uint64
	err := analyst.QueryRow(clickhouse.Context(ctx, clickhouse.WithSettings(clickhouse.Settings{"max_rows_to_read": 0})),
		"SELECT count() FROM t WHERE n % 7 = 1").Scan(&n)
	if err == nil || !strings.Contains(err.Error(), "Limit for rows") {
		t.Fatalf("a query over 100000 rows with max_rows_to_read 1000: %d, %v", n, err)
	}

	if err := DropDatabase(ctx, srv.Addr(), "gone"); err != nil {
		t.Fatal(err)
	}
	if err := EnsureDatabase(ctx, srv.Addr(), "b"); err != nil {
		t.Fatal(err)
	}
	usersD := filepath.Join(varDir, "clickhouse", "users.d")
	for file, want := range map[string]bool{"analyst_a.xml": true, "analyst_b.xml": true, "analyst_gone.xml": false} {
		if _, err := os.Stat(filepath.Join(usersD, file)); (err == nil) != want {
			t.Errorf("%s: %v, want it there: %v", file, err, want)
		}
	}
	if err := EnsureDatabase(ctx, srv.Addr(), "no.dots"); err == nil {
		t.Error("a database whose name cannot be a user's got one")
	}
}

// TestAnalystXMLDocumented: docs/operations.md shows the users.xml of
// vmplane's analyst user with the default limits, as AnalystUsersXML
// writes it.
func TestAnalystXMLDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := AnalystUsersXML("vmplane", DefaultAnalystLimits())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```xml\n"+string(want)+"```") {
		t.Fatalf("docs/operations.md does not show the analyst user as written:\n%s", want)
	}
}

func TestQuoteIdent(t *testing.T) {
	for in, want := range map[string]string{
		"plain": "`plain`", "a`b": "`a\\`b`", `a\b`: "`a\\\\b`",
	} {
		if got := QuoteIdent(in); got != want {
			t.Errorf("QuoteIdent(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestWriteTakesBackFilesAsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	l := layout{Dir: t.TempDir(), ListenHost: "127.0.0.1", TCPPort: 9000, HTTPPort: 8123}
	left := filepath.Join(l.Dir, "data", "status")
	if err := os.MkdirAll(filepath.Dir(left), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(left, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Dir(left), left} {
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.write(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Dir(left), left} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if uid := fi.Sys().(*syscall.Stat_t).Uid; uid != 0 {
			t.Errorf("%s owned by uid %d, want 0", p, uid)
		}
	}
}
