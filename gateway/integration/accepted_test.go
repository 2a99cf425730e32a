package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

// TestReadYourWritesAcrossGateways is issue 28 over the real parts, with
// the projector stopped between a 202 and what follows it: the VM a
// deploy hands out through one gateway is found, deleted and acted on at
// once through another, and through a third started after the first is
// gone (a restart), for its account only; its jobs and a lease likewise.
// Then the projector runs again and its rows take over: the accepted rows
// go in the transactions that write them, and a VM it later expunges is a
// 404 again rather than its first state.
func TestReadYourWritesAcrossGateways(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Postgres and the embedded broker")
	}
	ctx := t.Context()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	kcfg, dsn, log := edges(t)
	db, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })

	// startGateway is one gateway process: its own pools and publisher.
	startGateway := func() (url string, kill func()) {
		rm, err := readmodel.NewReader(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		acc, err := readmodel.NewAccepted(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		pub, err := gateway.NewKafkaPublisher(kcfg)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(gateway.New(gateway.Config{Logger: quiet, Accepted: acc}, rm, pub).Handler())
		killed := false
		kill = func() {
			if !killed {
				killed = true
				srv.Close()
				pub.Close()
				acc.Close()
				rm.Close()
			}
		}
		t.Cleanup(kill)
		return srv.URL, kill
	}
	call := func(url, method, path, key, body string) (int, []byte) {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = bytes.NewBufferString(body)
		}
		req, _ := http.NewRequestWithContext(ctx, method, url+path, rd)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, out
	}
	want := func(url, method, path, key, body string, status int) []byte {
		t.Helper()
		code, out := call(url, method, path, key, body)
		if code != status {
			t.Fatalf("%s %s: %d %s, want %d", method, path, code, out, status)
		}
		return out
	}
	eventually := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !ok(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	accepted := func() int {
		var n int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM accepted_resources`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	// Keys and the offering reach the read model through the log; then the
	// projector stops, as if it lagged behind.
	now := time.Now().UnixMilli()
	alice, aliceID, aliceHash, _ := gateway.NewAPIKey()
	bob, bobID, bobHash, _ := gateway.NewAPIKey()
	if err := log.Publish(ctx,
		schemas.Record{Topic: schemas.TopicCatalog, Key: "off-small", Value: &schemas.ServiceOffering{
			Offering: schemas.Offering{ID: "off-small", Name: "small", CPU: 1, MemoryMB: 1024}, CreatedAt: now}},
		schemas.Record{Topic: schemas.TopicAccounts, Key: "acct-a", Value: &schemas.ApiKeyIssued{KeyID: aliceID, AccountID: "acct-a", Role: "user", Hash: aliceHash, At: now}},
		schemas.Record{Topic: schemas.TopicAccounts, Key: "acct-b", Value: &schemas.ApiKeyIssued{KeyID: bobID, AccountID: "acct-b", Role: "user", Hash: bobHash, At: now}},
	); err != nil {
		t.Fatal(err)
	}
	stop := runProjector(t, kcfg, dsn)
	gwA, killA := startGateway()
	gwB, _ := startGateway()
	eventually("keys and offering projected", func() bool {
		a, body := call(gwA, "GET", "/v1/offerings", alice, "")
		b, _ := call(gwB, "GET", "/v1/offerings", bob, "")
		return a == 200 && b == 200 && bytes.Contains(body, []byte(`"small"`))
	})
	stop()

	var deploy api.Job
	if err := json.Unmarshal(want(gwA, "POST", "/v1/vms", alice, `{"name":"web-1","offering":"small"}`, http.StatusAccepted), &deploy); err != nil {
		t.Fatal(err)
	}
	var lease api.Lease
	end := time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339)
	if err := json.Unmarshal(want(gwA, "POST", "/v1/leases", alice, `{"name":"lab","end":"`+end+`","reservations":[{"min_hosts":1}]}`,
		http.StatusAccepted), &lease); err != nil {
		t.Fatal(err)
	}
	vmPath, jobPath, leasePath := "/v1/vms/"+deploy.VmID, "/v1/jobs/"+deploy.ID, "/v1/leases/"+lease.ID

	// Another gateway, at once.
	var vm api.VM
	if err := json.Unmarshal(want(gwB, "GET", vmPath, alice, "", http.StatusOK), &vm); err != nil {
		t.Fatal(err)
	}
	if vm.VmState != "Building" || vm.Name != "web-1" || vm.Offering != "small" || vm.Account != "acct-a" || vm.JobID != deploy.ID {
		t.Fatalf("accepted VM %+v", vm)
	}
	want(gwB, "GET", jobPath, alice, "", http.StatusOK)
	want(gwB, "GET", leasePath, alice, "", http.StatusOK)
	for _, p := range []string{vmPath, jobPath, leasePath} {
		want(gwB, "GET", p, bob, "", http.StatusNotFound)
	}
	want(gwB, "DELETE", vmPath, bob, "", http.StatusNotFound)
	var stopJob, terminate api.Job
	if err := json.Unmarshal(want(gwB, "POST", vmPath+"/actions", alice, `{"action":"stop"}`, http.StatusAccepted), &stopJob); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want(gwB, "DELETE", vmPath, alice, "", http.StatusAccepted), &terminate); err != nil {
		t.Fatal(err)
	}

	// The first gateway dies; one started after it knows what it accepted.
	killA()
	gwC, _ := startGateway()
	want(gwC, "GET", vmPath, alice, "", http.StatusOK)
	want(gwC, "GET", "/v1/jobs/"+terminate.ID, alice, "", http.StatusOK)
	want(gwC, "GET", vmPath, bob, "", http.StatusNotFound)
	want(gwC, "PUT", leasePath, alice, `{"end":"`+time.Now().Add(3*time.Hour).UTC().Format(time.RFC3339)+`"}`, http.StatusAccepted)
	if n := accepted(); n != 5 { // the VM, its three jobs, the lease
		t.Fatalf("%d accepted rows, want 5", n)
	}

	// The projector catches up: the jobs' rows come from their commands,
	// and, playing the processors, the VM's first state and the lease's.
	stop = runProjector(t, kcfg, dsn)
	defer stop()
	off := schemas.Offering{ID: "off-small", Name: "small", CPU: 1, MemoryMB: 1024}
	if err := log.Publish(ctx,
		schemas.Record{Topic: schemas.TopicVmEvents, Key: deploy.VmID, Value: &schemas.VmStateChanged{VmID: deploy.VmID, Name: "web-1",
			Account: "acct-a", ZoneID: "zone-1", Offering: off, VmState: "Building", TaskState: "Scheduling", PowerState: "PowerUnknown",
			LegacyState: "Starting", Epoch: 1, JobID: deploy.ID, AllowedActions: []string{"terminate"}, UpdatedAt: now}},
		schemas.Record{Topic: schemas.TopicLeaseEvents, Key: "zone-1", Value: &schemas.LeaseStatusChanged{LeaseID: lease.ID,
			ZoneID: "zone-1", Project: "acct-a", Name: "lab", Status: "ERROR", Event: "create_failed", Reason: "no hosts", At: now}},
	); err != nil {
		t.Fatal(err)
	}
	eventually("the projected rows answering and the accepted rows gone", func() bool {
		code, body := call(gwB, "GET", vmPath, alice, "")
		_, lbody := call(gwB, "GET", leasePath, alice, "")
		return code == 200 && json.Unmarshal(body, &vm) == nil && vm.TaskState == "Scheduling" &&
			bytes.Contains(lbody, []byte(`"ERROR"`)) && accepted() == 0
	})
	var j api.Job
	if err := json.Unmarshal(want(gwC, "GET", "/v1/jobs/"+stopJob.ID, alice, "", http.StatusOK), &j); err != nil || j.Type != "Stop" {
		t.Fatalf("projected stop %+v (%v)", j, err)
	}
	if err := log.Publish(ctx, schemas.Record{Topic: schemas.TopicVmEvents, Key: deploy.VmID,
		Value: &schemas.VmExpunged{VmID: deploy.VmID, Account: "acct-a", At: now}}); err != nil {
		t.Fatal(err)
	}
	eventually("the expunged VM gone", func() bool {
		code, _ := call(gwC, "GET", vmPath, alice, "")
		return code == http.StatusNotFound
	})
}
