package dev

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestQemuHosts is `vmplane dev --qemu-hosts 2` end to end: the QEMU
// offering starts a real qemu-system process on a QEMU host, migrate moves
// it live to the other one (a new process, the old one gone), a hand-made
// kill of the process turns the VM Stopped with an alert, an admin action
// reaches the host through the host processor, and the sim control
// interface pauses a sim VM behind vmplane's back.
func TestQemuHosts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole stack and real QEMU guests")
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		t.Skip("qemu-system-x86_64 is not installed")
	}
	began := time.Now()
	ctx := t.Context()
	pgDSN := envOr("VMPLANE_PG_DSN", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable")
	chAddr := envOr("VMPLANE_CH_ADDR", "127.0.0.1:9000")
	db := "vmplane_qemu_" + randHex(4)
	t.Cleanup(func() { dropDatabases(pgDSN, chAddr, db) })
	// A short var dir: the guests' QMP sockets live under it.
	varDir, err := os.MkdirTemp("", "vmpq")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(varDir) })
	cfg := Config{VarDir: varDir, KafkaAddr: freeAddr(t), HTTPAddr: freeAddr(t), SimControl: freeAddr(t), PostgresDSN: pgDSN,
		ClickHouse: chAddr, Database: db, Hosts: 2, QemuHosts: 2, PingInterval: time.Second}
	st, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Stop()
	if st.qemuDir != filepath.Join(varDir, "qemu") {
		t.Fatalf("guests in %s, want under the var dir", st.qemuDir)
	}
	api, key := "http://"+cfg.HTTPAddr, st.AdminKey

	for _, id := range []string{"qemu-1", "qemu-2"} {
		code, h := call(t, "GET", api+"/v1/hosts/"+id, key, nil)
		if code != 200 || h["hypervisor"] != "qemu" || h["status"] != "Up" || fmt.Sprint(h["tags"]) != "[qemu]" {
			t.Fatalf("host %s: %d %v", id, code, h)
		}
	}

	code, job := call(t, "POST", api+"/v1/vms", key, map[string]any{"name": "guest-1", "offering": QemuOffering.Name})
	if code != http.StatusAccepted {
		t.Fatalf("deploy: %d %v", code, job)
	}
	vmID := job["vm_id"].(string)
	waitJob(t, api, key, job["id"].(string))
	src, _ := getVM(t, api, key, vmID)["host_id"].(string)
	if src != "qemu-1" && src != "qemu-2" {
		t.Fatalf("qemu-small placed on %q", src)
	}
	pid := qemuPid(t, vmID)
	if pid == 0 {
		t.Fatal("no qemu-system process runs the deployed VM")
	}
	_, h := call(t, "GET", api+"/v1/hosts/"+src, key, nil)
	if h["vm_count"] != 1.0 || len(h["allocations"].([]any)) != 1 {
		t.Fatalf("host %s after deploy: %v", src, h)
	}

	code, job = call(t, "POST", api+"/v1/vms/"+vmID+"/actions", key, map[string]any{"action": "migrate"})
	if code != http.StatusAccepted {
		t.Fatalf("migrate: %d %v", code, job)
	}
	waitJob(t, api, key, job["id"].(string))
	dst, _ := getVM(t, api, key, vmID)["host_id"].(string)
	if dst == src || (dst != "qemu-1" && dst != "qemu-2") {
		t.Fatalf("after migrate the VM is on %q (was %q)", dst, src)
	}
	moved := qemuPid(t, vmID)
	if moved == 0 || moved == pid {
		t.Fatalf("after a live migration the VM runs in pid %d (was %d)", moved, pid)
	}
	if out, _ := os.ReadFile(filepath.Join(st.qemuDir, vmID, dst+".log")); len(bytes.TrimSpace(out)) > 0 {
		t.Logf("destination qemu log: %s", out)
	}

	// Killed by hand, behind vmplane's back.
	killed := time.Now()
	if err := syscall.Kill(moved, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the killed VM Stopped with a GuestShutdown alert", func() bool {
		vm := getVM(t, api, key, vmID)
		_, alerts := call(t, "GET", api+"/v1/alerts?vm="+vmID, key, nil)
		items, _ := alerts["items"].([]any)
		for _, a := range items {
			if a.(map[string]any)["kind"] == "GuestShutdown" {
				return vm["vm_state"] == "Stopped"
			}
		}
		return false
	})
	t.Logf("kill seen as Stopped + alert after %v", time.Since(killed).Round(time.Millisecond))

	// An admin action goes through host.commands.v1 and the host processor.
	code, acc := call(t, "POST", api+"/v1/hosts/"+src+"/actions", key, map[string]any{"action": "disable"})
	if code != http.StatusAccepted || acc["command"] != "DisableHost" {
		t.Fatalf("disable: %d %v", code, acc)
	}
	waitFor(t, 10*time.Second, src+" Disabled", func() bool {
		_, h := call(t, "GET", api+"/v1/hosts/"+src, key, nil)
		return h["resource_state"] == "Disabled" && h["reservable"] == false
	})

	// A sim VM paused through the sim control interface follows to Paused.
	code, job = call(t, "POST", api+"/v1/vms", key, map[string]any{"name": "sim-1", "offering": "small"})
	if code != http.StatusAccepted {
		t.Fatalf("deploy on sim: %d %v", code, job)
	}
	simVM := job["vm_id"].(string)
	waitJob(t, api, key, job["id"].(string))
	simHost, _ := getVM(t, api, key, simVM)["host_id"].(string)
	resp, err := http.Post("http://"+cfg.SimControl+"/hosts/"+simHost+"/vms/"+simVM+"/power?state=Paused", "", nil)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("sim control pause on %s: %v %v", simHost, resp, err)
	}
	resp.Body.Close()
	waitFor(t, 10*time.Second, "the sim VM Paused", func() bool { return getVM(t, api, key, simVM)["vm_state"] == "Paused" })
	t.Logf("whole test %v", time.Since(began).Round(time.Millisecond))
}

// qemuPid returns the pid of the qemu-system process running vmID (its
// -name), 0 when there is none.
func qemuPid(t *testing.T, vmID string) int {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	want := []byte("\x00-name\x00" + vmID + "\x00")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmd, []byte("qemu-system")) || !bytes.Contains(cmd, want) {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat")); err == nil && bytes.Contains(stat, []byte(") Z ")) {
			continue // exited, not yet reaped
		}
		return pid
	}
	return 0
}

func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s", what, d)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
