package gateway_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/readmodel"
)

func TestAuthentication(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	revoked, revokedID, revokedHash, _ := gateway.NewAPIKey()
	e.rm.PutAPIKey(readmodel.APIKey{KeyID: revokedID, AccountID: "acct-a", Role: "user", Hash: revokedHash, Revoked: true})
	expired, expiredID, expiredHash, _ := gateway.NewAPIKey()
	past := time.Now().Add(-time.Minute)
	e.rm.PutAPIKey(readmodel.APIKey{KeyID: expiredID, AccountID: "acct-a", Role: "user", Hash: expiredHash, ExpiresAt: &past})
	future := time.Now().Add(time.Hour)
	valid, validID, validHash, _ := gateway.NewAPIKey()
	e.rm.PutAPIKey(readmodel.APIKey{KeyID: validID, AccountID: "acct-a", Role: "user", Hash: validHash, ExpiresAt: &future})
	unknown, _, _, _ := gateway.NewAPIKey()
	// Right key id, wrong secret.
	forged := e.alice[:len(e.alice)-4] + "AAAA"
	if forged == e.alice {
		forged = e.alice[:len(e.alice)-4] + "BBBB"
	}

	for _, tc := range []struct {
		name   string
		header string
		status int
	}{
		{"no header", "", http.StatusUnauthorized},
		{"basic scheme", "Basic " + e.alice, http.StatusUnauthorized},
		{"malformed key", "Bearer vmp_nothex_secret", http.StatusUnauthorized},
		{"unknown key", "Bearer " + unknown, http.StatusUnauthorized},
		{"wrong secret", "Bearer " + forged, http.StatusUnauthorized},
		{"revoked", "Bearer " + revoked, http.StatusUnauthorized},
		{"expired", "Bearer " + expired, http.StatusUnauthorized},
		{"valid with expiry", "Bearer " + valid, http.StatusOK},
		{"valid", "Bearer " + e.alice, http.StatusOK},
		{"lower-case scheme", "bearer " + e.alice, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := e.do("GET", "/v1/vms/vm-a1", "", nil, "Authorization", tc.header)
			wantStatus(t, rec, tc.status)
			if tc.status == http.StatusUnauthorized {
				if got := decode[api.ErrorResponse](t, rec).Error.Code; got != "unauthorized" {
					t.Fatalf("code %q, want unauthorized", got)
				}
				if got := rec.Header().Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
					t.Fatalf("WWW-Authenticate %q, want Bearer", got)
				}
			}
		})
	}
}

func TestAccountScoping(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	for _, tc := range []struct {
		name, method, path, key string
		body                    any
		status                  int
	}{
		{"user reads own vm", "GET", "/v1/vms/vm-a1", e.alice, nil, http.StatusOK},
		{"user reads other account's vm", "GET", "/v1/vms/vm-b1", e.alice, nil, http.StatusNotFound},
		{"user reads missing vm", "GET", "/v1/vms/vm-zz", e.alice, nil, http.StatusNotFound},
		{"admin reads any vm", "GET", "/v1/vms/vm-b1", e.admin, nil, http.StatusOK},
		{"user acts on other account's vm", "POST", "/v1/vms/vm-b1/actions", e.alice, map[string]any{"action": "start"}, http.StatusNotFound},
		{"user deletes other account's vm", "DELETE", "/v1/vms/vm-b1", e.alice, nil, http.StatusNotFound},
		{"user reads own job", "GET", "/v1/jobs/job-a1", e.alice, nil, http.StatusOK},
		{"user reads other account's job", "GET", "/v1/jobs/job-b1", e.alice, nil, http.StatusNotFound},
		{"user waits on other account's job", "GET", "/v1/jobs/job-b1?wait=1s", e.alice, nil, http.StatusNotFound},
		{"user lists hosts", "GET", "/v1/hosts", e.alice, nil, http.StatusForbidden},
		{"admin lists hosts", "GET", "/v1/hosts", e.admin, nil, http.StatusOK},
		{"user lists offerings", "GET", "/v1/offerings", e.bob, nil, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := e.do(tc.method, tc.path, tc.key, tc.body)
			wantStatus(t, rec, tc.status)
			if tc.status == http.StatusNotFound && strings.Contains(rec.Body.String(), "acct-b") {
				t.Fatalf("404 leaks the owner: %s", rec.Body.String())
			}
		})
	}
	if n := len(e.pub.Records()); n != 0 {
		t.Fatalf("%d records published by refused requests", n)
	}
}

func TestListVMsIsScopedAndPaged(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	e.rm.PutVM(readmodel.VM{ID: "vm-a2", Account: "acct-a"})
	e.rm.PutVM(readmodel.VM{ID: "vm-a3", Account: "acct-a"})

	type list struct {
		Items []api.VM `json:"items"`
		Next  string   `json:"next"`
	}
	var ids []string
	next := ""
	for range 3 {
		rec := e.do("GET", "/v1/vms?limit=2&cursor="+next, e.alice, nil)
		wantStatus(t, rec, http.StatusOK)
		l := decode[list](t, rec)
		for _, v := range l.Items {
			ids = append(ids, v.ID)
		}
		if next = l.Next; next == "" {
			break
		}
	}
	if got := strings.Join(ids, ","); got != "vm-a1,vm-a2,vm-a3" {
		t.Fatalf("alice pages = %s, want vm-a1,vm-a2,vm-a3", got)
	}
	all := decode[list](t, e.do("GET", "/v1/vms", e.admin, nil))
	if len(all.Items) != 4 || all.Next != "" {
		t.Fatalf("admin sees %d VMs (next %q), want 4 on one page", len(all.Items), all.Next)
	}
	wantStatus(t, e.do("GET", "/v1/vms?limit=0", e.alice, nil), http.StatusUnprocessableEntity)
}

// TestUnauthenticatedTrafficIsLimited: 401s spend their client address's
// bucket; an address out of tokens gets 429 with Retry-After and, for a key
// not cached, before any read; made-up keys repeated cost one read each
// per KeyCacheTTL; valid keys spend nothing of the address's bucket, and
// other addresses are not affected.
func TestUnauthenticatedTrafficIsLimited(t *testing.T) {
	e := newEnv(t, gateway.Config{AnonRatePerSecond: 0.5, AnonBurst: 3, KeyCacheTTL: time.Hour})
	from := func(addr, key string) *httptest.ResponseRecorder {
		req := httptest.NewRequestWithContext(t.Context(), "GET", "/v1/vms", nil)
		req.RemoteAddr = addr
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		return rec
	}
	for range 5 { // the valid key of the attacker's neighbour costs nothing
		wantStatus(t, from("198.51.100.7:1000", e.alice), http.StatusOK)
	}
	unknown, _, _, _ := gateway.NewAPIKey()
	reads := e.rm.KeyReads()
	for i := range 3 {
		wantStatus(t, from("198.51.100.7:"+strconv.Itoa(2000+i), unknown), http.StatusUnauthorized)
	}
	if n := e.rm.KeyReads() - reads; n != 1 {
		t.Fatalf("a made-up key repeated 3 times read the key %d times, want 1", n)
	}
	rec := from("198.51.100.7:3000", "")
	wantStatus(t, rec, http.StatusTooManyRequests)
	if rec.Header().Get("Retry-After") != "2" || decode[api.ErrorResponse](t, rec).Error.Code != "rate_limited" {
		t.Fatalf("429 without Retry-After 2: %v %s", rec.Header(), rec.Body.String())
	}
	reads = e.rm.KeyReads()
	other, _, _, _ := gateway.NewAPIKey()
	wantStatus(t, from("198.51.100.7:3001", other), http.StatusTooManyRequests)
	if e.rm.KeyReads() != reads {
		t.Fatal("an address out of tokens made the gateway read a key")
	}
	wantStatus(t, from("198.51.100.7:3002", e.alice), http.StatusOK) // cached: no read, no refusal
	wantStatus(t, from("203.0.113.9:1000", other), http.StatusUnauthorized)
	// IPv6 clients share the bucket of their /64.
	for i := range 3 {
		wantStatus(t, from("[2001:db8:1:2::"+strconv.Itoa(i+1)+"]:80", ""), http.StatusUnauthorized)
	}
	wantStatus(t, from("[2001:db8:1:2:ffff::9]:80", ""), http.StatusTooManyRequests)
}

// TestFloodSparesKeysInUse: an address that spent its 401s on made-up
// keys (a client behind the same proxy or NAT as real tenants) still
// serves the keys this instance saw lately, even once their cached rows
// are stale and must be read again.
func TestFloodSparesKeysInUse(t *testing.T) {
	e := newEnv(t, gateway.Config{AnonRatePerSecond: 0.01, AnonBurst: 2, KeyCacheTTL: time.Millisecond})
	from := func(key string) int {
		req := httptest.NewRequestWithContext(t.Context(), "GET", "/v1/vms", nil)
		req.RemoteAddr = "198.51.100.7:1000"
		req.Header.Set("Authorization", "Bearer "+key)
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		return rec.Code
	}
	if code := from(e.alice); code != http.StatusOK {
		t.Fatalf("alice = %d", code)
	}
	for range 3 {
		made, _, _, _ := gateway.NewAPIKey()
		from(made)
	}
	made, _, _, _ := gateway.NewAPIKey()
	if code := from(made); code != http.StatusTooManyRequests {
		t.Fatalf("a made-up key after the flood = %d, want 429", code)
	}
	time.Sleep(5 * time.Millisecond) // alice's cached row is stale now
	if code := from(e.alice); code != http.StatusOK {
		t.Fatalf("alice after the flood = %d, want 200", code)
	}
	if code := from(e.bob); code != http.StatusTooManyRequests {
		t.Fatalf("bob, not seen by this instance, after the flood = %d, want 429", code)
	}
}
