package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/gateway/gatewaytest"
	"github.com/vmplane/vmplane/readmodel"
)

// matrixEnv is env with accounts, leases and spare keys for the
// authorization matrix.
type matrixEnv struct {
	*env
	revoked     string // acct-a, revoked
	spareA      string // key ids that admin rows may revoke
	spareB      string
	wrongSecret string // acct-a's key id with another secret
	unknownKey  string // well-formed, never issued
	expired     string
}

func newMatrixEnv(t *testing.T) *matrixEnv {
	return newMatrixEnvWith(t, gateway.Config{})
}

// newMatrixEnvWith is newMatrixEnv on cfg, without rate limits.
func newMatrixEnvWith(t *testing.T, cfg gateway.Config) *matrixEnv {
	cfg.RatePerSecond, cfg.AnonRatePerSecond = -1, -1
	e := &matrixEnv{env: newEnv(t, cfg)}
	e.pub.OnPublish = e.rm.ProjectAccounts
	for _, a := range []string{"ops", "acct-a", "acct-b"} {
		e.rm.PutAccount(readmodel.Account{ID: a, Name: a, CreatedAt: t0})
	}
	e.revoked = e.addKey("acct-a", gateway.RoleUser)
	id := keyID(e.revoked)
	k, _ := e.rm.APIKey(t.Context(), id)
	k.Revoked = true
	e.rm.PutAPIKey(k)
	e.expired = e.addKey("acct-a", gateway.RoleUser)
	k, _ = e.rm.APIKey(t.Context(), keyID(e.expired))
	past := time.Now().Add(-time.Minute)
	k.ExpiresAt = &past
	e.rm.PutAPIKey(k)
	e.spareA = keyID(e.addKey("acct-a", gateway.RoleUser))
	e.spareB = keyID(e.addKey("acct-b", gateway.RoleUser))
	other, _, _, _ := gateway.NewAPIKey()
	e.wrongSecret = e.alice[:17] + other[17:]
	e.unknownKey, _, _, _ = gateway.NewAPIKey()
	end := time.Now().Add(48 * time.Hour)
	e.rm.PutAlert(readmodel.Alert{ID: "alert-a", Kind: "HAExhausted", VmID: "vm-a1", Account: "acct-a", At: end})
	e.rm.PutAlert(readmodel.Alert{ID: "alert-b", Kind: "HAExhausted", VmID: "vm-b1", Account: "acct-b", At: end})
	e.rm.PutLease(readmodel.Lease{ID: "lease-a", Project: "acct-a", Name: "la", Status: "Pending", ZoneID: "zone-1", Start: end.Add(-time.Hour), End: end})
	e.rm.PutLease(readmodel.Lease{ID: "lease-b", Project: "acct-b", Name: "lb", Status: "Pending", ZoneID: "zone-1", Start: end.Add(-time.Hour), End: end})
	return e
}

func keyID(key string) string { return key[4:16] }

// route is one row of the matrix: a path with {id} (and {key}) filled per
// account, the body of a valid request, and who may call it.
type route struct {
	method, path string
	body         string
	admin        bool // admin only
	owned        bool // {id} names a resource of an account
	// noBackend is the status when the route's backend is not configured
	// here (ClickHouse history): it answers before the ownership check.
	noBackend int
}

func (r route) fill(acct string, e *matrixEnv) string {
	p := r.path
	suffix := map[string]string{"acct-a": "a", "acct-b": "b"}[acct]
	switch {
	case strings.HasPrefix(p, "/v1/vms/{id}"):
		p = strings.Replace(p, "{id}", "vm-"+suffix+"1", 1)
	case strings.HasPrefix(p, "/v1/jobs/{id}"):
		p = strings.Replace(p, "{id}", "job-"+suffix+"1", 1)
	case strings.HasPrefix(p, "/v1/alerts/{id}"):
		p = strings.Replace(p, "{id}", "alert-"+suffix, 1)
	case strings.HasPrefix(p, "/v1/leases/{id}"):
		p = strings.Replace(p, "{id}", "lease-"+suffix, 1)
	case strings.HasPrefix(p, "/v1/accounts/{id}"):
		p = strings.Replace(p, "{id}", acct, 1)
	case strings.HasPrefix(p, "/v1/hosts/{id}"):
		p = strings.Replace(p, "{id}", "host-1", 1)
	case strings.HasPrefix(p, "/v1/zones/{id}"):
		p = strings.Replace(p, "{id}", "zone-1", 1)
	case strings.HasPrefix(p, "/v1/offerings/{id}") && r.method == "DELETE":
		// No VM uses it: a delete of one in use is a 409.
		p = strings.Replace(p, "{id}", "off-ha", 1)
	case strings.HasPrefix(p, "/v1/offerings/{id}"):
		p = strings.Replace(p, "{id}", "off-small", 1)
	case strings.HasPrefix(p, "/v1/templates/{id}"):
		p = strings.Replace(p, "{id}", "tiny-linux", 1)
	case strings.HasPrefix(p, "/v1/pools/{id}"):
		p = strings.Replace(p, "{id}", "pool-zone-1-spare", 1) // no volumes: a delete of one with some is a 409
	case strings.HasPrefix(p, "/v1/networks/{id}") && r.method == "DELETE":
		p = strings.Replace(p, "{id}", "net-zone-1-spare", 1)
	case strings.HasPrefix(p, "/v1/networks/{id}"):
		p = strings.Replace(p, "{id}", "guest", 1)
	case strings.HasPrefix(p, "/v1/volumes/{id}"):
		p = strings.Replace(p, "{id}", "vol-"+suffix+"1", 1)
	case strings.HasPrefix(p, "/v1/settings/{name}"):
		p = strings.Replace(p, "{name}", "ping.timeout", 1)
	}
	return strings.Replace(p, "{key}", map[string]string{"acct-a": e.spareA, "acct-b": e.spareB}[acct], 1)
}

var leaseEnd = time.Now().Add(72 * time.Hour).UTC().Format(time.RFC3339)

var matrixRoutes = []route{
	{method: "POST", path: "/v1/vms", body: `{"name":"m-1","offering":"small"}`},
	{method: "GET", path: "/v1/vms"},
	{method: "GET", path: "/v1/vms/{id}", owned: true},
	{method: "DELETE", path: "/v1/vms/{id}", owned: true},
	{method: "POST", path: "/v1/vms/{id}/actions", body: `{"action":"migrate"}`, owned: true},
	{method: "GET", path: "/v1/vms/{id}/snapshots", owned: true},
	{method: "GET", path: "/v1/vms/{id}/history", owned: true, noBackend: http.StatusServiceUnavailable},
	{method: "GET", path: "/v1/jobs"},
	{method: "GET", path: "/v1/jobs/{id}", owned: true},
	{method: "GET", path: "/v1/jobs/{id}/journal", owned: true},
	{method: "GET", path: "/v1/jobs/{id}/events", owned: true},
	{method: "POST", path: "/v1/jobs/{id}/cancel", body: `{"reason":"no longer needed"}`, owned: true},
	{method: "GET", path: "/v1/events"},
	{method: "POST", path: "/v1/journal/query", body: `{"sql":"SELECT 1"}`, admin: true},
	{method: "GET", path: "/v1/alerts"},
	{method: "GET", path: "/v1/alerts/{id}", owned: true},
	{method: "POST", path: "/v1/alerts/{id}/ack", owned: true},
	{method: "GET", path: "/v1/hosts", admin: true},
	{method: "GET", path: "/v1/hosts/{id}", admin: true},
	{method: "POST", path: "/v1/hosts/{id}/actions", body: `{"action":"disable"}`, admin: true},
	{method: "POST", path: "/v1/hosts", body: `{"id":"host-new","zone_id":"zone-1"}`, admin: true},
	{method: "GET", path: "/v1/offerings"},
	{method: "GET", path: "/v1/offerings/{id}"},
	{method: "POST", path: "/v1/offerings", body: `{"name":"tiny","cpu":1,"memory_mb":512}`, admin: true},
	{method: "PATCH", path: "/v1/offerings/{id}", body: `{"deployment_planner":"FirstFitPlanner"}`, admin: true},
	{method: "DELETE", path: "/v1/offerings/{id}", admin: true},
	{method: "GET", path: "/v1/planners"},
	{method: "GET", path: "/v1/templates"},
	{method: "GET", path: "/v1/templates/{id}"},
	{method: "POST", path: "/v1/templates", body: `{"name":"alpine","format":"qcow2","size_gb":2,"os_type":"Alpine Linux"}`, admin: true},
	{method: "DELETE", path: "/v1/templates/{id}", admin: true},
	{method: "GET", path: "/v1/pools", admin: true},
	{method: "POST", path: "/v1/pools", body: `{"name":"fast","scope":"Zone","path":"/srv/pools/fast","capacity_gb":100,"tags":["ssd"]}`, admin: true},
	{method: "GET", path: "/v1/pools/{id}", admin: true},
	{method: "PATCH", path: "/v1/pools/{id}", body: `{"state":"Maintenance","capacity_gb":20}`, admin: true},
	{method: "DELETE", path: "/v1/pools/{id}", admin: true},
	{method: "GET", path: "/v1/networks"},
	{method: "GET", path: "/v1/networks/{id}"},
	{method: "POST", path: "/v1/networks", body: `{"name":"extra","cidr":"10.9.0.0/24","gateway":"10.9.0.1"}`, admin: true},
	{method: "DELETE", path: "/v1/networks/{id}", admin: true},
	{method: "GET", path: "/v1/volumes"},
	{method: "GET", path: "/v1/volumes/{id}", owned: true},
	{method: "POST", path: "/v1/volumes/{id}/actions", body: `{"action":"snapshot_volume","snapshot_name":"s2"}`, owned: true},
	{method: "GET", path: "/v1/settings", admin: true},
	{method: "GET", path: "/v1/settings/{name}", admin: true},
	{method: "PUT", path: "/v1/settings/{name}", body: `{"value":"20s"}`, admin: true},
	{method: "DELETE", path: "/v1/settings/{name}", admin: true},
	{method: "GET", path: "/v1/zones/{id}/capacity", admin: true},
	{method: "POST", path: "/v1/accounts", body: `{"id":"acct-new"}`, admin: true},
	{method: "GET", path: "/v1/accounts", admin: true},
	{method: "GET", path: "/v1/accounts/{id}", owned: true},
	{method: "POST", path: "/v1/accounts/{id}/keys", body: `{"role":"user","expires_in":"24h"}`, admin: true, owned: true},
	{method: "GET", path: "/v1/accounts/{id}/keys", owned: true},
	{method: "GET", path: "/v1/accounts/{id}/keys/{key}", owned: true},
	{method: "DELETE", path: "/v1/accounts/{id}/keys/{key}", admin: true, owned: true},
	{method: "POST", path: "/v1/leases", body: `{"name":"l1","end":"` + leaseEnd + `","reservations":[{"min_hosts":1,"max_hosts":1}]}`},
	{method: "GET", path: "/v1/leases"},
	{method: "GET", path: "/v1/leases/{id}", owned: true},
	{method: "PUT", path: "/v1/leases/{id}", body: `{"end":"` + leaseEnd + `"}`, owned: true},
	{method: "DELETE", path: "/v1/leases/{id}", owned: true},
	{method: "GET", path: "/v1/leases/{id}/events", owned: true},
}

// TestAuthorizationMatrix: every route × {no key, wrong key, unknown key,
// revoked key, expired key, user A on A's and on B's resource, admin}.
func TestAuthorizationMatrix(t *testing.T) {
	// Every route of the router is in the matrix.
	var have []string
	for _, r := range matrixRoutes {
		have = append(have, r.method+" "+r.path)
	}
	slices.Sort(have)
	routes := gateway.New(gateway.Config{}, gatewaytest.NewReadModel(), &gatewaytest.Recorder{}).Routes()
	if !slices.Equal(have, routes) {
		t.Fatalf("matrix routes differ from the router's:\nmatrix %v\nrouter %v", have, routes)
	}
	e := newMatrixEnv(t)
	denied := []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound}
	for _, r := range matrixRoutes {
		t.Run(r.method+" "+r.path, func(t *testing.T) {
			pathA, pathB := r.fill("acct-a", e), r.fill("acct-b", e)
			call := func(path, key string) int {
				var body any
				if r.body != "" {
					body = r.body
				}
				return e.do(r.method, path, key, body).Code
			}
			for name, key := range map[string]string{"none": "", "wrong secret": e.wrongSecret, "unknown": e.unknownKey,
				"revoked": e.revoked, "expired": e.expired, "garbage": "not-a-key"} {
				if got := call(pathA, key); got != http.StatusUnauthorized {
					t.Errorf("key %s: %d, want 401", name, got)
				}
			}
			own := call(pathA, e.alice)
			switch {
			case r.admin:
				if own != http.StatusForbidden {
					t.Errorf("user on own: %d, want 403", own)
				}
			case slices.Contains(denied, own):
				t.Errorf("user on own: %d, want access", own)
			}
			if r.owned {
				if got := call(pathB, e.alice); got != r.noBackend && (r.admin && got != http.StatusForbidden || !r.admin && got != http.StatusNotFound) {
					t.Errorf("user A on B's: %d, want %d", got, map[bool]int{true: 403, false: 404}[r.admin])
				}
			}
			if got := call(pathA, e.admin); slices.Contains(denied, got) {
				t.Errorf("admin: %d, want access", got)
			}
		})
	}
}

// TestUserCannotLearnOthersVM: a user's lists and streams hold none of
// another account's VMs, and a missing VM and another's answer alike.
func TestUserCannotLearnOthersVM(t *testing.T) {
	e := newMatrixEnv(t)
	missing := e.do("GET", "/v1/vms/vm-zz", e.alice, nil)
	other := e.do("GET", "/v1/vms/vm-b1", e.alice, nil)
	if missing.Code != 404 || other.Code != 404 {
		t.Fatalf("missing %d, other's %d", missing.Code, other.Code)
	}
	m, o := decode[api.ErrorResponse](t, missing).Error, decode[api.ErrorResponse](t, other).Error
	if m.Code != o.Code || strings.ReplaceAll(m.Message, "vm-zz", "X") != strings.ReplaceAll(o.Message, "vm-b1", "X") {
		t.Fatalf("answers differ: %+v vs %+v", m, o)
	}
	for _, path := range []string{"/v1/vms", "/v1/jobs", "/v1/leases", "/v1/alerts", "/v1/accounts/acct-a/keys", "/v1/volumes", "/v1/volumes?vm=vm-b1"} {
		rec := e.do("GET", path, e.alice, nil)
		wantStatus(t, rec, 200)
		if strings.Contains(rec.Body.String(), "acct-b") || strings.Contains(rec.Body.String(), "vm-b1") {
			t.Errorf("%s shows another account: %s", path, rec.Body.String())
		}
	}
}

// TestOpenAPIMatchesRoutes: every route documented, every documented route
// exists, and the document is served.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	routes := gateway.New(gateway.Config{}, gatewaytest.NewReadModel(), &gatewaytest.Recorder{}).Routes()
	documented := gateway.OpenAPIRoutes()
	for _, r := range routes {
		if !slices.Contains(documented, r) {
			t.Errorf("route %s is not in the OpenAPI document", r)
		}
	}
	for _, d := range documented {
		if !slices.Contains(routes, d) {
			t.Errorf("the OpenAPI document names %s, which no route serves", d)
		}
	}
	e := newEnv(t, gateway.Config{})
	rec := e.do("GET", "/v1/openapi.json", "", nil)
	wantStatus(t, rec, 200)
	var doc struct {
		OpenAPI string                               `json:"openapi"`
		Paths   map[string]map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi %q", doc.OpenAPI)
	}
	n := 0
	for path, ops := range doc.Paths {
		for m := range ops {
			n++
			if !slices.Contains(routes, strings.ToUpper(m)+" "+path) {
				t.Errorf("served document has %s %s, which no route serves", m, path)
			}
		}
	}
	if n != len(routes) {
		t.Errorf("served document has %d operations, router %d", n, len(routes))
	}
}

// TestAccountsAndKeys: an admin creates an account and a key; the key
// works at once, lists show no secret, revocation stops it.
func TestAccountsAndKeys(t *testing.T) {
	e := newMatrixEnv(t)
	rec := e.do("POST", "/v1/accounts", e.admin, `{"id":"acme","name":"Acme"}`)
	wantStatus(t, rec, http.StatusCreated)
	if rec.Header().Get("Location") != "/v1/accounts/acme" {
		t.Fatalf("Location %q", rec.Header().Get("Location"))
	}
	wantStatus(t, e.do("POST", "/v1/accounts", e.admin, `{"id":"acme"}`), http.StatusConflict)
	bad := e.do("POST", "/v1/accounts", e.admin, `{"id":"Acme Corp"}`)
	wantStatus(t, bad, http.StatusUnprocessableEntity)
	if f := decode[api.ErrorResponse](t, bad).Error.Details["field"]; f != "id" {
		t.Fatalf("field %v", f)
	}
	unknown := e.do("POST", "/v1/accounts", e.admin, `{"id":"x","nmae":"typo"}`)
	wantStatus(t, unknown, http.StatusUnprocessableEntity)
	if !strings.Contains(decode[api.ErrorResponse](t, unknown).Error.Message, `"nmae"`) {
		t.Fatalf("unknown field not named: %s", unknown.Body.String())
	}

	// A key that expires before it can be used is refused.
	for _, body := range []string{`{"expires_in":"1ns"}`, `{"expires_in":"59s"}`, `{"expires_in":"-1h"}`,
		`{"expires_at":"` + time.Now().Add(30*time.Second).UTC().Format(time.RFC3339) + `"}`} {
		short := e.do("POST", "/v1/accounts/acme/keys", e.admin, body)
		wantStatus(t, short, http.StatusUnprocessableEntity)
		if msg := decode[api.ErrorResponse](t, short).Error.Message; !strings.Contains(msg, "at least 1m0s") {
			t.Fatalf("%s: %q", body, msg)
		}
	}
	wantStatus(t, e.do("POST", "/v1/accounts/acme/keys", e.admin, `{"expires_in":"1m"}`), http.StatusCreated)

	rec = e.do("POST", "/v1/accounts/acme/keys", e.admin, `{"role":"user","expires_in":"720h"}`)
	wantStatus(t, rec, http.StatusCreated)
	k := decode[api.APIKey](t, rec)
	if k.Key == "" || k.ExpiresAt == nil || k.Role != "user" || rec.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("key answer %+v", k)
	}
	wantStatus(t, e.do("GET", "/v1/accounts/acme", k.Key, nil), http.StatusOK)
	wantStatus(t, e.do("GET", "/v1/accounts/acct-a", k.Key, nil), http.StatusNotFound)
	list := e.do("GET", "/v1/accounts/acme/keys", k.Key, nil)
	wantStatus(t, list, http.StatusOK)
	if strings.Contains(list.Body.String(), k.Key) || strings.Contains(list.Body.String(), gateway.HashAPIKey(k.Key)) {
		t.Fatal("key list shows the key or its hash")
	}
	for _, r := range e.pub.Records() {
		if strings.Contains(fmt.Sprintf("%+v", r.Value), k.Key) {
			t.Fatal("the key itself went to the log")
		}
	}
	wantStatus(t, e.do("DELETE", "/v1/accounts/acme/keys/"+k.ID, e.admin, nil), http.StatusNoContent)
	wantStatus(t, e.do("GET", "/v1/accounts/acme", k.Key, nil), http.StatusUnauthorized)
}

// TestOpenAPIKeepsItsComponentNames: Error is the error envelope, as in
// every document before package api, so that clients generated from an
// earlier document still read errors.
func TestOpenAPIKeepsItsComponentNames(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	rec := e.do("GET", "/v1/openapi.json", "", nil)
	wantStatus(t, rec, 200)
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if _, ok := doc.Components.Schemas["Error"].Properties["error"]; !ok {
		t.Fatalf("components.schemas.Error is not the envelope: %+v", doc.Components.Schemas["Error"])
	}
	if _, ok := doc.Components.Schemas["ErrorResponse"]; ok {
		t.Fatal("the envelope is also named ErrorResponse")
	}
}
