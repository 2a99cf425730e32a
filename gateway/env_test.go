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

var activeActions = []string{"reboot", "stop", "rebuild", "pause", "suspend", "rescue", "snapshot", "resize", "migrate", "terminate",
	"attach_volume", "detach_volume", "resize_volume", "snapshot_volume"}

func newEnv(t *testing.T, cfg gateway.Config) *env {
	t.Helper()
	e := &env{t: t, rm: gatewaytest.NewReadModel(), pub: &gatewaytest.Recorder{}}
	e.admin = e.addKey("ops", gateway.RoleAdmin)
	e.alice = e.addKey("acct-a", gateway.RoleUser)
	e.bob = e.addKey("acct-b", gateway.RoleUser)
	e.rm.PutOffering(readmodel.Offering{ID: "off-small", Name: "small", CPU: 1, MemoryMB: 1024, HostTags: []string{"ssd"}})
	e.rm.PutOffering(readmodel.Offering{ID: "off-ha", Name: "ha-medium", CPU: 2, MemoryMB: 4096, HA: true, StorageTags: []string{"nvme"}})
	e.rm.PutVM(readmodel.VM{ID: "vm-a1", Name: "web-1", Account: "acct-a", ZoneID: "zone-1", Offering: "small", OfferingID: "off-small",
		CPU: 1, MemoryMB: 1024, VmState: "Active", PowerState: "PowerOn", LegacyState: "Running", HostID: "host-1",
		AllowedActions: activeActions, Epoch: 3, Version: 42, CreatedAt: t0, UpdatedAt: t0})
	e.rm.PutVM(readmodel.VM{ID: "vm-b1", Name: "db-1", Account: "acct-b", VmState: "Stopped", AllowedActions: []string{"start", "migrate", "resize", "terminate"}, Version: 7})
	e.rm.PutJob(readmodel.Job{ID: "job-a1", VmID: "vm-a1", Account: "acct-a", Type: "Deploy", State: "succeeded", CreatedAt: t0, FinishedAt: &t0})
	e.rm.PutJob(readmodel.Job{ID: "job-b1", VmID: "vm-b1", Account: "acct-b", Type: "Stop", State: "succeeded", CreatedAt: t0, FinishedAt: &t0})
	e.rm.PutHost(readmodel.Host{ID: "host-1", Name: "h1", ZoneID: "zone-1", Status: "Up", ResourceState: "Enabled", CPU: 32, MemoryMB: 65536, UsedCPU: 1, UsedMemoryMB: 1024})
	putStorage(e.rm)
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

// putStorage gives the read model a template, a pool of zone-1 with
// vm-a1's root volume, a pool with none, a pool whose creation placement
// refused, the zone's default network with
// vm-a1's NIC, a network with no NIC, and a volume of vm-b1.
func putStorage(rm *gatewaytest.ReadModel) {
	rm.PutTemplate(readmodel.Template{ID: "tiny-linux", Name: "tiny-linux", Format: "qcow2", SizeMB: 1024, OsType: "Linux (busybox)", CreatedAt: t0})
	rm.PutTemplate(readmodel.Template{ID: "old-linux", Name: "old-linux", Format: "raw", SizeMB: 2048, OsType: "Linux", Deleted: true, CreatedAt: t0})
	rm.PutPool(readmodel.Pool{ID: "pool-zone-1-primary", ZoneID: "zone-1", Name: "primary", Scope: "Zone", Path: "/srv/pools/primary",
		CapacityMB: 100 << 10, UsedMB: 1024, Volumes: 1, Tags: []string{"ssd"}, State: "Up", Applied: true, UpdatedAt: t0})
	rm.PutPool(readmodel.Pool{ID: "pool-zone-1-spare", ZoneID: "zone-1", Name: "spare", Scope: "Cluster", ClusterID: "c1",
		Path: "/srv/pools/spare", CapacityMB: 10 << 10, State: "Up", Applied: true, LastError: "no such cluster", UpdatedAt: t0})
	rm.PutPool(readmodel.Pool{ID: "pool-zone-1-refused", ZoneID: "zone-1", Name: "refused", Scope: "Host", HostID: "host-9",
		Path: "/x", LastError: "host host-9 is not in zone zone-1", UpdatedAt: t0})
	rm.PutNetwork(readmodel.Network{ID: "net-zone-1-guest", ZoneID: "zone-1", Name: "guest", Cidr: "10.1.0.0/16", Gateway: "10.1.0.1",
		Default: true, Size: 65533, Allocated: 1, Applied: true, UpdatedAt: t0})
	rm.PutNetwork(readmodel.Network{ID: "net-zone-1-spare", ZoneID: "zone-1", Name: "spare", Cidr: "10.2.0.0/24", Gateway: "10.2.0.1",
		Size: 253, Applied: true, UpdatedAt: t0})
	rm.PutVolume(readmodel.Volume{ID: "vol-a1", VmID: "vm-a1", Account: "acct-a", ZoneID: "zone-1", Name: "root", Kind: "Root",
		PoolID: "pool-zone-1-primary", SizeMB: 1024, TemplateID: "tiny-linux", State: "Ready", CreatedAt: t0, UpdatedAt: t0,
		Snapshots: []readmodel.VolumeSnapshot{{VolumeID: "vol-a1", Name: "s1", JobID: "job-s1", TakenAt: t0}}})
	rm.PutVolume(readmodel.Volume{ID: "vol-b1", VmID: "vm-b1", Account: "acct-b", ZoneID: "zone-1", Name: "data", Kind: "Data",
		DeviceID: 1, PoolID: "pool-zone-1-primary", SizeMB: 2048, State: "Detached", CreatedAt: t0, UpdatedAt: t0})
	rm.PutNic(readmodel.Nic{ID: "nic-a1", VmID: "vm-a1", NetworkID: "net-zone-1-guest", MAC: "02:00:00:00:00:01", IP: "10.1.0.2",
		Gateway: "10.1.0.1", Cidr: "10.1.0.0/16"})
}
