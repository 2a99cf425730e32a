package pgserver

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func defaultDSN() string {
	if dsn := os.Getenv("VMPLANE_PG_DSN"); dsn != "" {
		return dsn
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

func sparePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// reachableTempDir is a t.TempDir the postgres system user can enter when the test runs as root.
func reachableTempDir(t testing.TB) string {
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func queryString(t testing.TB, dsn, sql string) string {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatalf("connect %s: %v", dsn, err)
	}
	defer conn.Close(context.Background())
	var s string
	if err := conn.QueryRow(t.Context(), sql).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return s
}

func TestEnsureUsesRunningServer(t *testing.T) {
	if testing.Short() {
		t.Skip("needs postgres")
	}
	varDir := t.TempDir()
	srv, err := Ensure(t.Context(), defaultDSN(), varDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv.Stop() // not ours: must leave it running
	if got := queryString(t, srv.DSN(), "SELECT 'up'"); got != "up" {
		t.Fatalf("got %q", got)
	}
	if _, err := os.Stat(filepath.Join(varDir, "postgres")); !os.IsNotExist(err) {
		t.Fatalf("a cluster was initialized although a server answered: %v", err)
	}
}

func TestEnsureStartsLocalCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("needs postgres binaries")
	}
	varDir := reachableTempDir(t)
	dsn := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", sparePort(t))

	srv, err := Ensure(t.Context(), dsn, varDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = StopDir(context.Background(), varDir) })
	dataDir := queryString(t, srv.DSN(), "SELECT current_setting('data_directory')")
	if want := filepath.Join(varDir, "postgres"); dataDir != want {
		t.Fatalf("data_directory = %s, want %s", dataDir, want)
	}

	// A second Ensure finds the server ours started and must not stop it.
	again, err := Ensure(t.Context(), dsn, varDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !srv.Started() || again.Started() {
		t.Fatalf("Started() = %v, %v; want true, false", srv.Started(), again.Started())
	}
	again.Stop()

	dbDSN, err := EnsureDatabase(t.Context(), srv.DSN(), "vm plane's")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureDatabase(t.Context(), srv.DSN(), "vm plane's"); err != nil {
		t.Fatalf("second EnsureDatabase: %v", err)
	}
	if got := queryString(t, dbDSN, "SELECT current_database()"); got != "vm plane's" {
		t.Fatalf("current_database() = %q", got)
	}

	srv.Stop()
	if err := ping(t.Context(), mustParse(t, dsn)); err == nil {
		t.Fatal("server still answers after Stop")
	}

	// Restarting reuses the initialized cluster, with the database still there.
	if _, err := Ensure(t.Context(), dsn, varDir, nil); err != nil {
		t.Fatal(err)
	}
	if got := queryString(t, dbDSN, "SELECT current_database()"); got != "vm plane's" {
		t.Fatalf("after restart current_database() = %q", got)
	}
	if err := StopDir(t.Context(), varDir); err != nil {
		t.Fatal(err)
	}
	if err := ping(t.Context(), mustParse(t, dsn)); err == nil {
		t.Fatal("server still answers after StopDir")
	}
	if err := StopDir(t.Context(), varDir); err != nil {
		t.Fatalf("StopDir with nothing running: %v", err)
	}
}

func TestEnsureLeavesForeignListenerAlone(t *testing.T) {
	// Something that is not Postgres holds the port: starting a server there cannot work, and
	// initializing a cluster would be wasted.
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
	varDir := t.TempDir()
	dsn := fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", l.Addr())
	if _, err := Ensure(t.Context(), dsn, varDir, nil); err == nil || !strings.Contains(err.Error(), "does not accept") {
		t.Fatalf("err = %v, want the listener reported", err)
	}
	if _, err := os.Stat(filepath.Join(varDir, "postgres")); !os.IsNotExist(err) {
		t.Fatalf("a cluster was initialized: %v", err)
	}
}

func TestIsLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "127.0.0.1": true, "127.0.0.2": true, "::1": true,
		"db.example.com": false, "10.0.0.5": false, "/var/run/postgresql": false, "": false,
	} {
		if got := isLoopback(host); got != want {
			t.Errorf("isLoopback(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestWithDatabase(t *testing.T) {
	tests := []struct{ dsn, name, want string }{
		{"postgres://u:p@127.0.0.1:5432/postgres?sslmode=disable", "app", "postgres://u:p@127.0.0.1:5432/app?sslmode=disable"},
		{"postgresql://127.0.0.1", "app", "postgresql://127.0.0.1/app"},
		{"host=127.0.0.1 dbname=postgres", "a'b", `host=127.0.0.1 dbname=postgres dbname='a\'b'`},
	}
	for _, tt := range tests {
		got, err := WithDatabase(tt.dsn, tt.name)
		if err != nil || got != tt.want {
			t.Errorf("WithDatabase(%q, %q) = %q, %v; want %q", tt.dsn, tt.name, got, err, tt.want)
		}
		if cfg, err := pgx.ParseConfig(got); err != nil {
			t.Errorf("parse %q: %v", got, err)
		} else if cfg.Database != tt.name {
			t.Errorf("%q parses to database %q, want %q", got, cfg.Database, tt.name)
		}
	}
}

func mustParse(t testing.TB, dsn string) *pgx.ConnConfig {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestEnsureExplainsUnreachableDir(t *testing.T) {
	if testing.Short() {
		t.Skip("needs postgres binaries")
	}
	if os.Geteuid() != 0 {
		t.Skip("only root hands the cluster to the postgres user")
	}
	// t.TempDir's parent is private to root, so the postgres user cannot reach a cluster in it.
	dsn := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres", sparePort(t))
	_, err := Ensure(t.Context(), dsn, t.TempDir(), nil)
	if err == nil || !strings.Contains(err.Error(), "cannot enter") {
		t.Fatalf("err = %v, want it to name the directory the postgres user cannot enter", err)
	}
}
