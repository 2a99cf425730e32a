package gateway_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/gateway/gatewaytest"
	"github.com/vmplane/vmplane/readmodel"
)

func TestIdempotencyKey(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	deploy := `{"name":"web-9","offering":"small"}`
	first := e.do("POST", "/v1/vms", e.alice, deploy, "Idempotency-Key", "k-1")
	wantStatus(t, first, http.StatusAccepted)
	j1 := decode[api.Job](t, first)

	again := e.do("POST", "/v1/vms", e.alice, deploy, "Idempotency-Key", "k-1")
	wantStatus(t, again, http.StatusAccepted)
	if j2 := decode[api.Job](t, again); !equalJSON(t, j2, j1) || again.Header().Get("Location") != "/v1/jobs/"+j1.ID {
		t.Fatalf("retry answered %+v, first %+v", j2, j1)
	}
	if n := len(e.pub.Records()); n != 1 {
		t.Fatalf("%d records after a retry, want 1", n)
	}

	other := e.do("POST", "/v1/vms", e.alice, `{"name":"web-10","offering":"small"}`, "Idempotency-Key", "k-1")
	wantStatus(t, other, http.StatusUnprocessableEntity)
	if code := decode[api.ErrorResponse](t, other).Error.Code; code != "idempotency_key_reused" {
		t.Fatalf("code %q", code)
	}

	// Keys are per API key: bob's k-1 is a different request, and so is
	// the k-1 of another key of alice's account.
	bob := e.do("POST", "/v1/vms", e.bob, deploy, "Idempotency-Key", "k-1")
	wantStatus(t, bob, http.StatusAccepted)
	if decode[api.Job](t, bob).ID == j1.ID {
		t.Fatal("bob got alice's job")
	}
	alice2 := e.addKey("acct-a", gateway.RoleUser)
	mate := e.do("POST", "/v1/vms", alice2, deploy, "Idempotency-Key", "k-1")
	wantStatus(t, mate, http.StatusAccepted)
	if mate.Header().Get("Idempotent-Replayed") != "" || decode[api.Job](t, mate).ID == j1.ID {
		t.Fatal("another key of alice's account got her stored answer")
	}
	// Without a key the same body is a new command.
	wantStatus(t, e.do("POST", "/v1/vms", e.alice, deploy), http.StatusAccepted)
	if n := len(e.pub.Records()); n != 4 {
		t.Fatalf("%d records, want 4", n)
	}
}

// TestIdempotentReplayOfAKeyCreation is issue 23's attack: a user key of
// the admin's own account replays the admin's creation of an admin key
// with the same Idempotency-Key. It gets a 403 (the role is checked before
// any stored answer), the admin's own retry gets the key's id without the
// key, and no stored answer holds the key.
func TestIdempotentReplayOfAKeyCreation(t *testing.T) {
	store := &gatewaytest.Idempotency{}
	e := newEnv(t, gateway.Config{Idempotency: store, RatePerSecond: -1})
	e.pub.OnPublish = e.rm.ProjectAccounts
	e.rm.PutAccount(readmodel.Account{ID: "beta", Name: "beta"})
	opsUser := e.addKey("ops", gateway.RoleUser) // the admin's account, role user

	const body = `{"role":"admin"}`
	first := e.do("POST", "/v1/accounts/beta/keys", e.admin, body, "Idempotency-Key", "k-beta")
	wantStatus(t, first, http.StatusCreated)
	issued := decode[api.APIKey](t, first)
	if issued.Key == "" || issued.Note != "" {
		t.Fatalf("first answer %+v", issued)
	}

	stolen := e.do("POST", "/v1/accounts/beta/keys", opsUser, body, "Idempotency-Key", "k-beta")
	wantStatus(t, stolen, http.StatusForbidden)
	if strings.Contains(stolen.Body.String(), issued.Key) || stolen.Header().Get("Idempotent-Replayed") != "" {
		t.Fatalf("the user key got the admin's answer: %s", stolen.Body.String())
	}

	again := e.do("POST", "/v1/accounts/beta/keys", e.admin, body, "Idempotency-Key", "k-beta")
	wantStatus(t, again, http.StatusCreated)
	replayed := decode[api.APIKey](t, again)
	if again.Header().Get("Idempotent-Replayed") != "true" || replayed.ID != issued.ID || replayed.Role != "admin" ||
		replayed.Key != "" || !strings.Contains(replayed.Note, "shown only") {
		t.Fatalf("replay %+v, first %+v", replayed, issued)
	}
	if again.Header().Get("Location") != "/v1/accounts/beta/keys/"+issued.ID {
		t.Fatalf("replay Location %q", again.Header().Get("Location"))
	}
	if n := len(e.pub.Records()); n != 1 {
		t.Fatalf("%d keys issued, want 1", n)
	}
	kept := store.Kept()
	if len(kept) != 1 {
		t.Fatalf("kept %d answers, want 1", len(kept))
	}
	for k, b := range kept {
		if strings.Contains(string(b), issued.Key) || strings.Contains(string(b), "vmp_") {
			t.Fatalf("the store keeps the key: %s", b)
		}
		if want := "ops/" + keyID(e.admin); k[0] != want {
			t.Fatalf("kept for %q, want the admin's key %q", k[0], want)
		}
	}
	// The stolen key would not have worked anyway; the one issued does.
	wantStatus(t, e.do("GET", "/v1/hosts", issued.Key, nil), http.StatusOK)
}

// TestIdempotencyKeyBytes: an Idempotency-Key that could not be stored as
// text (NUL, control characters, bytes that are not UTF-8, anything beyond
// printable ASCII) is a 422 naming the header, never a 500.
func TestIdempotencyKeyBytes(t *testing.T) {
	e := newEnv(t, gateway.Config{RatePerSecond: -1})
	for _, key := range []string{"a\x00b", "tab\there", "\x7f", "caf\xc3\xa9", "\xff\xfe", "line\nbreak", strings.Repeat("k", 256)} {
		rec := e.do("POST", "/v1/vms", e.alice, `{"name":"web-9","offering":"small"}`, "Idempotency-Key", key)
		wantStatus(t, rec, http.StatusUnprocessableEntity)
		if b := decode[api.ErrorResponse](t, rec).Error; b.Details["header"] != "Idempotency-Key" || b.Code != "validation_failed" {
			t.Fatalf("key %q: %+v", key, b)
		}
	}
	wantStatus(t, e.do("POST", "/v1/vms", e.alice, `{"name":"web-9","offering":"small"}`, "Idempotency-Key", "ok key-1:~!"), http.StatusAccepted)
	if n := len(e.pub.Records()); n != 1 {
		t.Fatalf("%d records, want 1", n)
	}
}

func TestIdempotentRetryAfterStateChange(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	first := e.do("POST", "/v1/vms/vm-a1/actions", e.alice, `{"action":"stop"}`, "Idempotency-Key", "stop-1")
	wantStatus(t, first, http.StatusAccepted)
	// The stop ran: the VM no longer allows a stop, but the retry of the
	// same request is still the same job, not a 409.
	e.rm.PutVM(readmodel.VM{ID: "vm-a1", Account: "acct-a", VmState: "Stopped", AllowedActions: []string{"start", "terminate"}})
	again := e.do("POST", "/v1/vms/vm-a1/actions", e.alice, `{"action":"stop"}`, "Idempotency-Key", "stop-1")
	wantStatus(t, again, http.StatusAccepted)
	if decode[api.Job](t, again).ID != decode[api.Job](t, first).ID {
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
				ids[i] = decode[api.Job](t, rec).ID
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
