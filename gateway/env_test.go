package gateway_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/gateway/gatewaytest"
	"github.com/vmplane/vmplane/readmodel"
)

// env is a gateway over the in-memory read model and a recording publisher,
// with three keys: an admin (account ops) and two users of different
// accounts.
type env struct {
	t     *testing.T
	h     http.Handler
	rm    *gatewaytest.ReadModel
	pub   *gatewaytest.Recorder
	admin string
	alice string // account acct-a
	bob   string // account acct-b
}

var t0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

var activeActions = []string{"reboot", "stop", "rebuild", "pause", "suspend", "rescue", "snapshot", "resize", "migrate", "terminate"}

func newEnv(t *testing.T, cfg gateway.Config) *env {
	t.Helper()
	e := &env{t: t, rm: gatewaytest.NewReadModel(), pub: &gatewaytest.Recorder{}}
	e.admin = e.addKey("ops", gateway.RoleAdmin)
	e.alice = e.addKey("acct-a", gateway.RoleUser)
	e.bob = e.addKey("acct-b", gateway.RoleUser)
	e.rm.PutOffering(readmodel.Offering{ID: "off-small", Name: "small", CPU: 1, MemoryMB: 1024, HostTags: []string{"ssd"}})
	e.rm.PutOffering(readmodel.Offering{ID: "off-ha", Name: "ha-medium", CPU: 2, MemoryMB: 4096, HA: true})
	e.rm.PutVM(readmodel.VM{ID: "vm-a1", Name: "web-1", Account: "acct-a", ZoneID: "zone-1", Offering: "small", OfferingID: "off-small",
		CPU: 1, MemoryMB: 1024, VmState: "Active", PowerState: "PowerOn", LegacyState: "Running", HostID: "host-1",
		AllowedActions: activeActions, Epoch: 3, Version: 42, CreatedAt: t0, UpdatedAt: t0})
	e.rm.PutVM(readmodel.VM{ID: "vm-b1", Name: "db-1", Account: "acct-b", VmState: "Stopped", AllowedActions: []string{"start", "migrate", "resize", "terminate"}, Version: 7})
	e.rm.PutJob(readmodel.Job{ID: "job-a1", VmID: "vm-a1", Account: "acct-a", Type: "Deploy", State: "succeeded", CreatedAt: t0, FinishedAt: &t0})
	e.rm.PutJob(readmodel.Job{ID: "job-b1", VmID: "vm-b1", Account: "acct-b", Type: "Stop", State: "succeeded", CreatedAt: t0, FinishedAt: &t0})
	e.rm.PutHost(readmodel.Host{ID: "host-1", Name: "h1", ZoneID: "zone-1", Status: "Up", ResourceState: "Enabled", CPU: 32, MemoryMB: 65536, UsedCPU: 1, UsedMemoryMB: 1024})
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	e.h = gateway.New(cfg, e.rm, e.pub).Handler()
	return e
}

func (e *env) addKey(account, role string) string {
	e.t.Helper()
	key, id, hash, err := gateway.NewAPIKey()
	if err != nil {
		e.t.Fatal(err)
	}
	e.rm.PutAPIKey(readmodel.APIKey{KeyID: id, AccountID: account, Role: role, Hash: hash})
	return key
}

// do sends a request; body is marshalled unless it is a string or nil.
func (e *env) do(method, path, key string, body any, hdr ...string) *httptest.ResponseRecorder {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewBufferString(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req := httptest.NewRequestWithContext(e.t.Context(), method, path, rd)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	return rec
}

func decode[T any](t *testing.T, rec *httptest.ResponseRecorder) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatalf("decode %T from %q: %v", v, rec.Body.String(), err)
	}
	return v
}

func wantStatus(t *testing.T, rec *httptest.ResponseRecorder, status int) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status %d, want %d; body %s", rec.Code, status, rec.Body.String())
	}
}
