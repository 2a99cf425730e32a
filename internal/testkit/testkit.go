// Package testkit gives integration tests a database of their own on the real PostgreSQL and
// ClickHouse: a fresh, uniquely named database per test, dropped when the test ends. Helpers skip
// under -short.
//
// Servers are the configured ones when they answer ($VMPLANE_PG_DSN, $VMPLANE_CH_ADDR), and
// otherwise local ones started under <repo>/var/test and shared by every test process: `make test`
// starts them with `teststack up` and stops them with `teststack down`. When a test process had
// to start one itself, a reaper (this package's test binary, re-executed) stops it once no test
// process has used it for a while, so a plain `go test ./...` leaves nothing running.
//
// It never creates tables: that is the job of the code under test.
package testkit

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/vmplane/vmplane/internal/chserver"
)

const (
	// DefaultPostgresDSN is used when $VMPLANE_PG_DSN is empty.
	DefaultPostgresDSN = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	// DefaultClickHouseAddr is used when $VMPLANE_CH_ADDR is empty.
	DefaultClickHouseAddr = "127.0.0.1:9000"
)

// PostgresDSN is the server tests use: $VMPLANE_PG_DSN or DefaultPostgresDSN.
func PostgresDSN() string { return envOr("VMPLANE_PG_DSN", DefaultPostgresDSN) }

// ClickHouseAddr is the server tests use: $VMPLANE_CH_ADDR or DefaultClickHouseAddr.
func ClickHouseAddr() string { return envOr("VMPLANE_CH_ADDR", DefaultClickHouseAddr) }

// ClickHouseAccess is how the benchmarks log in to the server at
// ClickHouseAddr: VMPLANE_CH_USER, VMPLANE_CH_PASSWORD and VMPLANE_CH_TLS*
// (chserver.AccessFromEnv); nothing set is the passwordless default user
// of a server chserver started.
func ClickHouseAccess() (chserver.Access, error) { return chserver.AccessFromEnv(os.Getenv) }

// VarDir is where local test servers keep their files: $VMPLANE_TEST_VAR_DIR, or var/test under
// the repository root.
func VarDir() (string, error) {
	if d := os.Getenv("VMPLANE_TEST_VAR_DIR"); d != "" {
		return filepath.Abs(d)
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "var", "test"), nil
}

// RepoRoot is the nearest directory at or above the working directory that holds go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod at or above the working directory")
		}
		dir = parent
	}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// uniqueName is a database name no other test uses.
func uniqueName() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "vmplane_t_" + hex.EncodeToString(b)
}

// testLogger writes server start-up messages into the log of the test that caused them.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
}

func mustVarDir(t testing.TB) string {
	t.Helper()
	dir, err := VarDir()
	if err != nil {
		t.Fatalf("testkit: %v", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("testkit: %v", err)
	}
	return dir
}

func errorf(format string, args ...any) error { return fmt.Errorf("testkit: "+format, args...) }
