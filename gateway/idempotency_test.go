package gateway_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/projectors/postgres"
)

func TestIdempotencyKey(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	deploy := `{"name":"web-9","offering":"small"}`
	first := e.do("POST", "/v1/vms", e.alice, deploy, "Idempotency-Key", "k-1")
	wantStatus(t, first, http.StatusAccepted)
	j1 := decode[gateway.Job](t, first)

	again := e.do("POST", "/v1/vms", e.alice, deploy, "Idempotency-Key", "k-1")
	wantStatus(t, again, http.StatusAccepted)
	if j2 := decode[gateway.Job](t, again); !equalJSON(t, j2, j1) || again.Header().Get("Location") != "/v1/jobs/"+j1.ID {
		t.Fatalf("retry answered %+v, first %+v", j2, j1)
	}
	if n := len(e.pub.Records()); n != 1 {
		t.Fatalf("%d records after a retry, want 1", n)
	}

	other := e.do("POST", "/v1/vms", e.alice, `{"name":"web-10","offering":"small"}`, "Idempotency-Key", "k-1")
	wantStatus(t, other, http.StatusUnprocessableEntity)
	if code := decode[errBody](t, other).Error.Code; code != "idempotency_key_reused" {
		t.Fatalf("code %q", code)
	}

	// Keys are per account: bob's k-1 is a different request.
	bob := e.do("POST", "/v1/vms", e.bob, deploy, "Idempotency-Key", "k-1")
	wantStatus(t, bob, http.StatusAccepted)
	if decode[gateway.Job](t, bob).ID == j1.ID {
		t.Fatal("bob got alice's job")
	}
	// Without a key the same body is a new command.
	wantStatus(t, e.do("POST", "/v1/vms", e.alice, deploy), http.StatusAccepted)
	if n := len(e.pub.Records()); n != 3 {
		t.Fatalf("%d records, want 3", n)
	}
}

func TestIdempotentRetryAfterStateChange(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	first := e.do("POST", "/v1/vms/vm-a1/actions", e.alice, `{"action":"stop"}`, "Idempotency-Key", "stop-1")
	wantStatus(t, first, http.StatusAccepted)
	// The stop ran: the VM no longer allows a stop, but the retry of the
	// same request is still the same job, not a 409.
	e.rm.PutVM(postgres.VM{ID: "vm-a1", Account: "acct-a", VmState: "Stopped", AllowedActions: []string{"start", "terminate"}})
	again := e.do("POST", "/v1/vms/vm-a1/actions", e.alice, `{"action":"stop"}`, "Idempotency-Key", "stop-1")
	wantStatus(t, again, http.StatusAccepted)
	if decode[gateway.Job](t, again).ID != decode[gateway.Job](t, first).ID {
		t.Fatal("retry got a new job")
	}
	wantStatus(t, e.do("POST", "/v1/vms/vm-a1/actions", e.alice, `{"action":"stop"}`), http.StatusConflict)
}

func TestIdempotencyConcurrentRetries(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			rec := e.do("POST", "/v1/vms", e.alice, `{"name":"x","offering":"small"}`, "Idempotency-Key", "same")
			if rec.Code == http.StatusAccepted {
				ids[i] = decode[gateway.Job](t, rec).ID
			}
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id == "" || id != ids[0] {
			t.Fatalf("concurrent retries answered %v", ids)
		}
	}
	if n := len(e.pub.Records()); n != 1 {
		t.Fatalf("%d records, want 1", n)
	}
}
