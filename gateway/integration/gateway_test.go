package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

const adminDSN = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// freshDB creates a database for this test and drops it afterwards.
func freshDB(t *testing.T) string {
	t.Helper()
	ctx := t.Context()
	b := make([]byte, 6)
	rand.Read(b)
	name := "vmplane_gw_" + hex.EncodeToString(b)
	conn, err := pgx.Connect(ctx, adminDSN)
	if err != nil {
		t.Fatalf("connect %s: %v", adminDSN, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, adminDSN)
		if err != nil {
			t.Errorf("drop %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	u, _ := url.Parse(adminDSN)
	u.Path = "/" + name
	return u.String()
}

// TestDeployThroughKafkaAndPostgres runs the gateway over the real edges:
// offerings and API keys reach the read model through the log like in
// production, a deploy goes to Kafka, the projector makes the job row from
// the command, and the gateway serves it back, scoped by account.
func TestDeployThroughKafkaAndPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Postgres and the embedded broker")
	}
	ctx := t.Context()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))

	kcfg, dsn, pub := edges(t)
	t.Cleanup(runProjector(t, kcfg, dsn))
	rm, err := readmodel.NewReader(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rm.Close)

	// Seed the catalog and two keys through the log.
	now := time.Now().UnixMilli()
	alice, aliceID, aliceHash, _ := gateway.NewAPIKey()
	bob, bobID, bobHash, _ := gateway.NewAPIKey()
	admin, adminID, adminHash, _ := gateway.NewAPIKey()
	seed := []schemas.Record{
		{Topic: schemas.TopicAccounts, Key: "ops", Value: &schemas.ApiKeyIssued{KeyID: adminID, AccountID: "ops", Role: "admin", Hash: adminHash, At: now}},
		{Topic: schemas.TopicCatalog, Key: "off-small", Value: &schemas.ServiceOffering{
			Offering: schemas.Offering{ID: "off-small", Name: "small", CPU: 1, MemoryMB: 1024}, CreatedAt: now}},
		{Topic: schemas.TopicAccounts, Key: "acct-a", Value: &schemas.ApiKeyIssued{KeyID: aliceID, AccountID: "acct-a", Role: "user", Hash: aliceHash, At: now}},
		{Topic: schemas.TopicAccounts, Key: "acct-b", Value: &schemas.ApiKeyIssued{KeyID: bobID, AccountID: "acct-b", Role: "user", Hash: bobHash, At: now}},
	}
	if err := pub.Publish(ctx, seed...); err != nil {
		t.Fatal(err)
	}

	srv := httptest.NewServer(gateway.New(gateway.Config{Logger: quiet, Ready: pub.Ping}, rm, pub).Handler())
	t.Cleanup(srv.Close)
	call := func(method, path, key, body string) (int, []byte) {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = bytes.NewBufferString(body)
		}
		req, _ := http.NewRequestWithContext(ctx, method, srv.URL+path, rd)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, out
	}
	eventually := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	eventually("keys and offering projected", func() bool {
		a, _ := call("GET", "/v1/offerings", alice, "")
		b, body := call("GET", "/v1/offerings", bob, "")
		return a == 200 && b == 200 && bytes.Contains(body, []byte(`"small"`))
	})
	if code, _ := call("GET", "/readyz", "", ""); code != 200 {
		t.Fatalf("readyz %d", code)
	}

	code, body := call("POST", "/v1/vms", alice, `{"name":"web-1","offering":"small"}`)
	if code != http.StatusAccepted {
		t.Fatalf("deploy: %d %s", code, body)
	}
	var accepted api.Job
	if err := json.Unmarshal(body, &accepted); err != nil {
		t.Fatal(err)
	}

	var job api.Job
	eventually("the job projected from the command", func() bool {
		code, body := call("GET", "/v1/jobs/"+accepted.ID, alice, "")
		return code == 200 && json.Unmarshal(body, &job) == nil
	})
	if job.ID != accepted.ID || job.VmID != accepted.VmID || job.Type != "Deploy" || job.State != "pending" {
		t.Fatalf("projected job %+v, accepted %+v", job, accepted)
	}
	if code, body := call("GET", "/v1/jobs/"+accepted.ID, bob, ""); code != http.StatusNotFound {
		t.Fatalf("bob reads alice's job: %d %s", code, body)
	}
	if code, body := call("GET", "/v1/vms/vm-none", alice, ""); code != http.StatusNotFound {
		t.Fatalf("missing VM: %d %s", code, body)
	}
	unknown, _, _, _ := gateway.NewAPIKey()
	if code, _ := call("GET", "/v1/vms", unknown, ""); code != http.StatusUnauthorized {
		t.Fatalf("unknown key: %d", code)
	}

	// A template goes through catalog.v1 to every user's list.
	if code, body := call("POST", "/v1/templates", admin, `{"name":"tiny-linux","format":"qcow2","size_gb":1,"os_type":"Linux"}`); code != http.StatusCreated {
		t.Fatalf("template create: %d %s", code, body)
	}
	eventually("the template projected", func() bool {
		code, body := call("GET", "/v1/templates/tiny-linux", bob, "")
		return code == 200 && bytes.Contains(body, []byte(`"size_gb":1`))
	})
	// A pool is asked of placement, which answers on placement.events.v1:
	// here, as placement would, applied and then a change refused.
	if code, body := call("POST", "/v1/pools", admin, `{"name":"primary","scope":"Zone","path":"/srv/p","capacity_gb":10}`); code != http.StatusAccepted {
		t.Fatalf("pool create: %d %s", code, body)
	}
	p := schemas.PoolState{PoolID: "pool-zone-1-primary", ZoneID: "zone-1", Name: "primary", Scope: "Zone", Path: "/srv/p",
		CapacityMB: 10 << 10, State: "Up"}
	if err := pub.Publish(ctx,
		schemas.Record{Topic: schemas.TopicPlacementEvents, Key: "zone-1", Value: &schemas.StoragePoolChanged{Pool: p, At: now}},
		schemas.Record{Topic: schemas.TopicPlacementEvents, Key: "zone-1", Value: &schemas.StoragePoolChanged{Pool: p, Refused: "path unknown", At: now + 1}},
	); err != nil {
		t.Fatal(err)
	}
	eventually("the pool and its refusal projected", func() bool {
		code, body := call("GET", "/v1/pools/pool-zone-1-primary", admin, "")
		var pool api.Pool
		return code == 200 && json.Unmarshal(body, &pool) == nil && pool.State == "Up" && pool.LastError == "path unknown"
	})
	if code, _ := call("GET", "/v1/pools", alice, ""); code != http.StatusForbidden {
		t.Fatalf("a user lists pools: %d", code)
	}
}
