package dev

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/jackc/pgx/v5"
)

// TestStackEndToEnd is the foundation's acceptance path: a VM deployed
// through the gateway is placed, started by the sim agent, visible in
// Postgres and journaled in ClickHouse; stop and delete follow; a restart
// of the whole stack keeps every VM and job.
func TestStackEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole stack")
	}
	ctx := t.Context()
	pgDSN := envOr("VMPLANE_PG_DSN", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable")
	chAddr := envOr("VMPLANE_CH_ADDR", "127.0.0.1:9000")
	db := "vmplane_e2e_" + randHex(4)
	t.Cleanup(func() { dropDatabases(pgDSN, chAddr, db) })

	varDir := t.TempDir()
	cfg := Config{VarDir: varDir, KafkaAddr: freeAddr(t), HTTPAddr: freeAddr(t), PostgresDSN: pgDSN,
		ClickHouse: chAddr, Database: db, Hosts: 4, PingInterval: time.Second}
	st, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	api := "http://" + cfg.HTTPAddr
	key := st.AdminKey
	if b, _ := os.ReadFile(filepath.Join(varDir, "dev", "admin-key")); string(bytes.TrimSpace(b)) != key {
		t.Fatalf("admin-key file holds %q, stack says %q", b, key)
	}

	checkSeededStorage(t, api, key, varDir)

	if code, _ := call(t, "GET", api+"/v1/vms/none", "", nil); code != http.StatusUnauthorized {
		t.Fatalf("no key: %d, want 401", code)
	}

	start := time.Now()
	code, job := call(t, "POST", api+"/v1/vms", key, map[string]any{"name": "web-1", "offering": "small"})
	if code != http.StatusAccepted {
		t.Fatalf("deploy: %d %v", code, job)
	}
	vmID := job["vm_id"].(string)
	deploy := waitJob(t, api, key, job["id"].(string))
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("deploy took %s, want ≤ 5 s", took)
	}
	t.Logf("deploy succeeded in %s", time.Since(start).Round(time.Millisecond))
	vm := getVM(t, api, key, vmID)
	if vm["vm_state"] != "Active" || vm["power_state"] != "PowerOn" || vm["host_id"] == "" || len(vm["allowed_actions"].([]any)) == 0 {
		t.Fatalf("after deploy: %v", vm)
	}
	// A deploy that names no network gets a NIC on the zone's default one.
	waitFor(t, 5*time.Second, "the VM's NIC on guest-zone-1", func() bool {
		nics, _ := getVM(t, api, key, vmID)["nics"].([]any)
		if len(nics) != 1 {
			return false
		}
		n := nics[0].(map[string]any)
		ip, _ := n["ip"].(string)
		return n["network_id"] == "guest-zone-1" && strings.HasPrefix(ip, "10.1.")
	})

	code, stop := call(t, "POST", api+"/v1/vms/"+vmID+"/actions", key, map[string]any{"action": "stop"})
	if code != http.StatusAccepted {
		t.Fatalf("stop: %d %v", code, stop)
	}
	waitJob(t, api, key, stop["id"].(string))
	if vm := getVM(t, api, key, vmID); vm["vm_state"] != "Stopped" || vm["power_state"] != "PowerOff" {
		t.Fatalf("after stop: %v", vm)
	}
	code, del := call(t, "DELETE", api+"/v1/vms/"+vmID, key, nil)
	if code != http.StatusAccepted {
		t.Fatalf("delete: %d %v", code, del)
	}
	waitJob(t, api, key, del["id"].(string))
	if vm := getVM(t, api, key, vmID); vm["vm_state"] != "Deleted" {
		t.Fatalf("after delete: %v", vm)
	}

	// The journal has the steps of all three jobs.
	jobs := []string{deploy["id"].(string), stop["id"].(string), del["id"].(string)}
	waitJournal(t, st.ClickHouseAddr(), db, jobs)

	// Restart: the Kafka data directory, Postgres and ClickHouse keep everything.
	st.Stop()
	st, err = Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Stop()
	if st.AdminKey != key {
		t.Fatalf("admin key changed across restart")
	}
	checkSeededStorage(t, api, key, varDir)
	if vm := getVM(t, api, key, vmID); vm["vm_state"] != "Deleted" {
		t.Fatalf("after restart: %v", vm)
	}
	for _, id := range jobs {
		if code, j := call(t, "GET", api+"/v1/jobs/"+id, key, nil); code != 200 || j["state"] != "succeeded" {
			t.Fatalf("job %s after restart: %d %v", id, code, j)
		}
	}
	code, job = call(t, "POST", api+"/v1/vms", key, map[string]any{"name": "web-2", "offering": "medium", "template": "tiny-linux", "data_disk_gb": 2})
	if code != http.StatusAccepted {
		t.Fatalf("deploy after restart: %d %v", code, job)
	}
	waitJob(t, api, key, job["id"].(string))
	// Its root volume of the template and its data volume, on the seeded pool.
	web2 := job["vm_id"].(string)
	waitFor(t, 5*time.Second, "web-2's volumes on the primary pool", func() bool {
		vols, _ := getVM(t, api, key, web2)["volumes"].([]any)
		if len(vols) != 2 {
			return false
		}
		root, data := vols[0].(map[string]any), vols[1].(map[string]any)
		return root["kind"] == "Root" && root["template_id"] == "tiny-linux" && root["pool_id"] == "pool-zone-1-primary" &&
			root["size_mb"] == 1024.0 && data["kind"] == "Data" && data["size_mb"] == 2048.0
	})
}

// checkSeededStorage: the stack has the template tiny-linux, once, and the
// directory of each zone's primary pool.
func checkSeededStorage(t *testing.T, api, key, varDir string) {
	t.Helper()
	code, list := call(t, "GET", api+"/v1/templates", key, nil)
	items, _ := list["items"].([]any)
	if code != http.StatusOK || len(items) != 1 || items[0].(map[string]any)["id"] != TinyLinux.ID {
		t.Fatalf("templates: %d %v", code, list)
	}
	for _, zone := range Zones {
		dir := filepath.Join(varDir, "dev", "pools", zone+"-primary")
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			t.Fatalf("pool directory of %s: %v", zone, err)
		}
		// Placement applies the pool and the network the seed asked for.
		pool := PrimaryPool(zone, filepath.Join(varDir, "dev", "pools"))
		waitFor(t, 10*time.Second, "the seeded pool and network of "+zone, func() bool {
			_, p := call(t, "GET", api+"/v1/pools/"+pool.PoolID, key, nil)
			_, n := call(t, "GET", api+"/v1/networks/guest-"+zone, key, nil)
			return p["state"] == "Up" && p["capacity_mb"] == float64(pool.CapacityMB) && n["default"] == true && n["size"] == 65533.0
		})
	}
}

func waitJob(t *testing.T, api, key, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		code, j := call(t, "GET", api+"/v1/jobs/"+id+"?wait=10s", key, nil)
		if code == 200 {
			switch j["state"] {
			case "succeeded":
				return j
			case "failed", "cancelled", "rejected":
				t.Fatalf("job %s ended %v", id, j)
			}
		}
	}
	t.Fatalf("job %s did not finish", id)
	return nil
}

func getVM(t *testing.T, api, key, id string) map[string]any {
	t.Helper()
	code, vm := call(t, "GET", api+"/v1/vms/"+id, key, nil)
	if code != 200 {
		t.Fatalf("get vm %s: %d %v", id, code, vm)
	}
	return vm
}

func call(t *testing.T, method, url, key string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(t.Context(), method, url, rd)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	out := map[string]any{}
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &out)
	return resp.StatusCode, out
}

func waitJournal(t *testing.T, addr, db string, jobs []string) {
	t.Helper()
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{addr}, Protocol: clickhouse.Native, Auth: clickhouse.Auth{Database: db}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		missing := 0
		for _, id := range jobs {
			var n uint64
			if err := conn.QueryRow(t.Context(), "SELECT count() FROM job_journal FINAL WHERE job_id = ? AND kind = 'stepped'", id).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				missing++
			}
		}
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d jobs have no steps in job_journal", missing, len(jobs))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func dropDatabases(pgDSN, chAddr, db string) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if c, err := pgx.Connect(ctx, pgDSN); err == nil {
		_, _ = c.Exec(ctx, fmt.Sprintf("DROP DATABASE IF EXISTS %q WITH (FORCE)", db))
		c.Close(ctx)
	}
	if c, err := clickhouse.Open(&clickhouse.Options{Addr: []string{chAddr}, Protocol: clickhouse.Native}); err == nil {
		_ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+db)
		c.Close()
	}
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
