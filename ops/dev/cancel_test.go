package dev

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vmplane/vmplane/producers/agent/driver/sim"
)

// TestCancelMigrate cancels a live migration on the whole stack as an
// operator does, right after asking for it, and holds what design §5.3
// promises whenever the cancel lands: the job ends cancelled, naming who
// cancelled it, and the VM is Active where the job's detail says, on its
// source when the cancel came before the MigrateVm, or on the destination
// when the move had finished. (A job that ended before the cancel reached
// the processor, or even the gateway, is the 409 case.)
func TestCancelMigrate(t *testing.T) {
	api, key, vmID, source := deployedVM(t, sim.Durations{})

	code, mig := call(t, "POST", api+"/v1/vms/"+vmID+"/actions", key, map[string]any{"action": "migrate"})
	if code != http.StatusAccepted {
		t.Fatalf("migrate: %d %v", code, mig)
	}
	id := mig["id"].(string)
	asked := time.Now()
	for {
		// The job is cancellable once the read model has it.
		code, _ = call(t, "POST", api+"/v1/jobs/"+id+"/cancel", key, map[string]any{"reason": "e2e"})
		if code != http.StatusNotFound || time.Since(asked) > 10*time.Second {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	end := endOf(t, api, key, id)
	vm := getVM(t, api, key, vmID)
	t.Logf("cancel answered %d %s after the migrate; job %v %v (%v); VM %v on %v (source %v)",
		code, time.Since(asked).Round(time.Millisecond), end["state"], end["reason"], end["detail"], vm["vm_state"], vm["host_id"], source)
	switch {
	case code == http.StatusConflict && end["state"] == "succeeded":
		if vm["host_id"] == source {
			t.Fatalf("the migration succeeded, and the VM is still on its source: %v", vm)
		}
	case code != http.StatusAccepted || end["state"] != "cancelled":
		t.Fatalf("cancel %d, job %v", code, end)
	case !strings.HasPrefix(end["reason"].(string), "Cancelled by key "):
		t.Fatalf("reason %q does not say who cancelled", end["reason"])
	case vm["vm_state"] != "Active" || !strings.HasSuffix(end["detail"].(string), "the VM is Active on host "+vm["host_id"].(string)+"; the caller said: e2e"):
		t.Fatalf("job detail %q, VM %v", end["detail"], vm)
	case strings.HasPrefix(end["detail"].(string), "stopped before it sent an agent command") != (vm["host_id"] == source):
		t.Fatalf("job detail %q, but the VM is on %v (source %v)", end["detail"], vm["host_id"], source)
	}
}

// TestCancelMigrateInFlight cancels a live migration while its agent
// carries it out (the sim hosts take 4 s to migrate): the cancel aborts
// the migration on the source's agent, and the VM stays Active on its
// source, long before the migration would have ended.
func TestCancelMigrateInFlight(t *testing.T) {
	api, key, vmID, source := deployedVM(t, sim.Durations{Migrate: 4 * time.Second})
	code, mig := call(t, "POST", api+"/v1/vms/"+vmID+"/actions", key, map[string]any{"action": "migrate"})
	if code != http.StatusAccepted {
		t.Fatalf("migrate: %d %v", code, mig)
	}
	id := mig["id"].(string)
	deadline := time.Now().Add(10 * time.Second)
	for getVM(t, api, key, vmID)["task_state"] != "Migrating" {
		if time.Now().After(deadline) {
			t.Fatalf("the migration did not start: %v", getVM(t, api, key, vmID))
		}
		time.Sleep(20 * time.Millisecond)
	}
	asked := time.Now()
	if code, _ = call(t, "POST", api+"/v1/jobs/"+id+"/cancel", key, map[string]any{"reason": "e2e"}); code != http.StatusAccepted {
		t.Fatalf("cancel: %d", code)
	}
	end := endOf(t, api, key, id)
	took := time.Since(asked)
	vm := getVM(t, api, key, vmID)
	t.Logf("cancelled in %s: job %v (%v); VM %v on %v (source %v)", took.Round(time.Millisecond), end["state"], end["detail"], vm["vm_state"], vm["host_id"], source)
	switch {
	case end["state"] != "cancelled" || !strings.Contains(end["detail"].(string), "migration aborted"):
		t.Fatalf("job %v", end)
	case vm["vm_state"] != "Active" || vm["host_id"] != source:
		t.Fatalf("VM %v; want it Active on its source %v", vm, source)
	case took > 3500*time.Millisecond:
		t.Fatalf("the cancel took %v: the migration ran to its end", took)
	}
}

// deployedVM starts the whole stack, its sim hosts as slow as lat, and
// deploys a VM; it returns the API, the admin key, the VM and its host.
func deployedVM(t *testing.T, lat sim.Durations) (api, key, vmID string, host any) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts the whole stack")
	}
	pgDSN := envOr("VMPLANE_PG_DSN", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable")
	chAddr := envOr("VMPLANE_CH_ADDR", "127.0.0.1:9000")
	db := "vmplane_cancel_" + randHex(4)
	t.Cleanup(func() { dropDatabases(pgDSN, chAddr, db) })
	cfg := Config{VarDir: t.TempDir(), KafkaAddr: freeAddr(t), HTTPAddr: freeAddr(t), PostgresDSN: pgDSN,
		ClickHouse: chAddr, Database: db, Hosts: 4, PingInterval: time.Second, SimLatency: lat}
	st, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Stop)
	api, key = "http://"+cfg.HTTPAddr, st.AdminKey
	code, job := call(t, "POST", api+"/v1/vms", key, map[string]any{"name": "web-1", "offering": "small"})
	if code != http.StatusAccepted {
		t.Fatalf("deploy: %d %v", code, job)
	}
	vmID = job["vm_id"].(string)
	waitJob(t, api, key, job["id"].(string))
	return api, key, vmID, getVM(t, api, key, vmID)["host_id"]
}

// endOf waits for a job to end, however it ends.
func endOf(t *testing.T, api, key, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if code, j := call(t, "GET", api+"/v1/jobs/"+id+"?wait=10s", key, nil); code == 200 && j["state"] != "pending" && j["state"] != "running" {
			return j
		}
	}
	t.Fatalf("job %s did not end", id)
	return nil
}
