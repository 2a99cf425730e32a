package dev

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestWalkthroughWithCurl runs the README's curl walkthrough
// (testdata/walkthrough.sh) with plain curl against a dev stack whose broker
// has SASL and ACLs on (--secure): every role works as its own principal.
func TestWalkthroughWithCurl(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole stack")
	}
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	pgDSN := envOr("VMPLANE_PG_DSN", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable")
	chAddr := envOr("VMPLANE_CH_ADDR", "127.0.0.1:9000")
	db := "vmplane_walk_" + randHex(4)
	t.Cleanup(func() { dropDatabases(pgDSN, chAddr, db) })
	varDir := t.TempDir()
	cfg := Config{VarDir: varDir, KafkaAddr: freeAddr(t), HTTPAddr: freeAddr(t), PostgresDSN: pgDSN,
		ClickHouse: chAddr, Database: db, Hosts: 2, PingInterval: time.Second, Secure: true}
	st, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Stop()
	cmd := exec.CommandContext(t.Context(), "bash", "testdata/walkthrough.sh")
	cmd.Env = append(os.Environ(), "API=http://"+cfg.HTTPAddr, "ADMIN_KEY_FILE="+filepath.Join(varDir, "dev", "admin-key"))
	out, err := cmd.CombinedOutput()
	t.Logf("walkthrough:\n%s", out)
	if err != nil {
		t.Fatalf("walkthrough failed: %v", err)
	}
}
