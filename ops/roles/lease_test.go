package roles

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/internal/testkit"
	"github.com/vmplane/vmplane/projectors/postgres"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

// shiftClock is the wall clock moved forward by a settable offset, so a
// test can jump to a lease's end without waiting for it.
type shiftClock struct{ off atomic.Int64 }

func (c *shiftClock) Now() time.Time          { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *shiftClock) advance(d time.Duration) { c.off.Add(int64(d)) }

// TestLeaseThroughTheStack runs the lease and placement processors on the
// real runtime over kfake, the Postgres projector and the gateway, playing
// the host processor (HostStatus copies) and the VM processor (PlaceVm,
// ReleaseVm). A lease for two hosts starting now turns ACTIVE; another
// account's VM cannot land on its hosts; disabling the host of the
// project's VM heals the lease (degraded, resources_changed, a replacement)
// and migrates the VM to the replacement; another account sees the lease as
// a 404; at the end the project's VM on a lease host is stopped, the end
// joins its capacity release, the lease is TERMINATED and its hosts return
// to the pool.
func TestLeaseThroughTheStack(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the embedded broker and Postgres")
	}
	ctx := t.Context()
	dsn := testkit.Postgres(t)
	kcfg, _ := testkit.Kafka(t)
	timelineOnFailure(t, kcfg, time.Now())
	cl := client(t, kcfg)
	if err := postgres.Migrate(ctx, dsn); err != nil {
		t.Fatal(err)
	}
	o := Options{Kafka: kcfg, InstanceID: "t", Logger: slog.New(slog.DiscardHandler)}
	clock := &shiftClock{}
	startProcessors(t, o, Settings{}, clock, KindPlacement, KindLease)
	proj, err := NewPostgresProjector(o, dsn)
	if err != nil {
		t.Fatal(err)
	}
	go proj.Run(ctx)
	rm, err := readmodel.NewReader(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer rm.Close()
	pub, err := gateway.NewKafkaPublisher(kcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	srv := httptest.NewServer(gateway.New(gateway.Config{ZoneID: "zone-1", Logger: o.Logger}, rm, pub).Handler())
	defer srv.Close()

	keys := map[string]string{}
	for _, acct := range []string{"acme", "bolt"} {
		key, id, hash, err := gateway.NewAPIKey()
		if err != nil {
			t.Fatal(err)
		}
		keys[acct] = key
		produce(t, cl, schemas.Record{Topic: schemas.TopicAccounts, Key: acct,
			Value: &schemas.ApiKeyIssued{KeyID: id, AccountID: acct, Role: gateway.RoleUser, Hash: hash}})
	}
	call := func(method, path, acct string, body any) (int, []byte) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			raw, _ := json.Marshal(body)
			rd = bytes.NewReader(raw)
		}
		req, _ := http.NewRequestWithContext(ctx, method, srv.URL+path, rd)
		req.Header.Set("Authorization", "Bearer "+keys[acct])
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, out
	}
	getLease := func(id string) (api.Lease, int) {
		code, body := call(http.MethodGet, "/v1/leases/"+id, "acme", nil)
		var l api.Lease
		_ = json.Unmarshal(body, &l)
		return l, code
	}
	waitLease := func(id, what string, ok func(api.Lease) bool) api.Lease {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			l, code := getLease(id)
			if code == http.StatusOK && ok(l) {
				return l
			}
			if time.Now().After(deadline) {
				t.Fatalf("lease %s never %s; last %d %+v", id, what, code, l)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	const zone = "zone-1"
	hostStatus := func(h, status, resource string) {
		st := &schemas.HostStatus{HostID: h, ZoneID: zone, PodID: "p1", ClusterID: "c1", Status: status, ResourceState: resource,
			Reservable: status == "Up" && resource == "Enabled", CPU: 8, MemoryMB: 16384, CPUOvercommit: 1, MemOvercommit: 1}
		produce(t, cl, schemas.Record{Topic: schemas.TopicPlacementRequests, Key: zone, Value: st})
		produce(t, cl, schemas.Record{Topic: schemas.TopicLeaseCommands, Key: zone, Value: st})
	}
	for _, h := range []string{"h1", "h2", "h3", "h4"} {
		hostStatus(h, "Up", "Enabled")
	}
	// Wait for the API key to be projected.
	deadline := time.Now().Add(30 * time.Second)
	for code, _ := call(http.MethodGet, "/v1/leases", "acme", nil); code != http.StatusOK; code, _ = call(http.MethodGet, "/v1/leases", "acme", nil) {
		if time.Now().After(deadline) {
			t.Fatalf("gateway never accepted the key: %d", code)
		}
		time.Sleep(50 * time.Millisecond)
	}

	end := clock.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	code, body := call(http.MethodPost, "/v1/leases", "acme", map[string]any{"name": "lab", "start": "now", "end": end,
		"reservations": []map[string]any{{"min_hosts": 2, "max_hosts": 2}}})
	if code != http.StatusAccepted {
		t.Fatalf("create: %d %s", code, body)
	}
	var created api.Lease
	_ = json.Unmarshal(body, &created)
	l := waitLease(created.ID, "ACTIVE", func(l api.Lease) bool { return l.Status == "ACTIVE" })
	if hosts := l.Reservations[0].Hosts; !slices.Equal(hosts, []string{"h1", "h2"}) {
		t.Fatalf("active lease on %v, want h1,h2", hosts)
	}
	if code, _ := call(http.MethodGet, "/v1/leases/"+created.ID, "bolt", nil); code != http.StatusNotFound {
		t.Fatalf("bolt reading acme's lease: %d, want 404", code)
	}

	offering := schemas.Offering{ID: "o1", Name: "small", CPU: 1, MemoryMB: 1024}
	place := func(req, vm, acct string) string {
		t.Helper()
		produce(t, cl, schemas.Record{Topic: schemas.TopicPlacementRequests, Key: zone,
			Value: &schemas.PlaceVm{RequestID: req, VmID: vm, ZoneID: zone, Account: acct, Epoch: 1, Offering: offering}})
		if d, ok := answer(t, kcfg, req).Value.(*schemas.PlacementDecided); ok {
			return d.HostID
		}
		return ""
	}
	// The dedication reaches placement with the lease's start.
	if h := place("p-a1", "vm-a1", "acme"); h != "h1" {
		t.Fatalf("acme's VM on %q, want h1 (first fit, leased to acme)", h)
	}
	for i, vm := range []string{"vm-b1", "vm-b2"} {
		if h := place("p-b"+vm, vm, "bolt"); h == "h1" || h == "h2" || h == "" {
			t.Fatalf("bolt's VM %d on %q: a leased host or none", i, h)
		}
	}

	// h1 is disabled: the lease heals (case 2-1) and acme's VM is migrated
	// to the replacement.
	hostStatus("h1", "Up", "Disabled")
	l = waitLease(created.ID, "healed", func(l api.Lease) bool { return l.Degraded })
	r := l.Reservations[0]
	if !r.ResourcesChanged || r.MissingResources || slices.Contains(r.Hosts, "h1") || len(r.Hosts) != 2 {
		t.Fatalf("healed reservation %+v", r)
	}
	repl := r.Hosts[1]
	waitFor(t, kcfg, schemas.TopicVmCommands, func(rec schemas.Record) bool {
		m, ok := rec.Value.(*schemas.Migrate)
		return ok && m.VmID == "vm-a1" && m.HostID == repl && m.Origin == schemas.OriginInternal
	})
	_, evBody := call(http.MethodGet, "/v1/leases/"+created.ID+"/events", "acme", nil)
	var events api.List[api.LeaseEvent]
	_ = json.Unmarshal(evBody, &events)
	var names []string
	for _, e := range events.Items {
		names = append(names, e.Event)
	}
	for _, want := range []string{"created", "started", "host_unreservable", "healed"} {
		if !slices.Contains(names, want) {
			t.Fatalf("events %v lack %s", names, want)
		}
	}

	// A VM of acme on a lease host at the end is stopped; the end waits for
	// its capacity release.
	if h := place("p-a2", "vm-a2", "acme"); h != "h2" {
		t.Fatalf("acme's second VM on %q, want h2", h)
	}
	clock.advance(time.Hour + time.Second)
	waitFor(t, kcfg, schemas.TopicVmCommands, func(rec schemas.Record) bool {
		s, ok := rec.Value.(*schemas.Stop)
		return ok && s.VmID == "vm-a2" && s.CommandID == "lease-"+created.ID+"-end-vm-a2"
	})
	waitLease(created.ID, "TERMINATING", func(l api.Lease) bool { return l.Status == "TERMINATING" })
	produce(t, cl, schemas.Record{Topic: schemas.TopicPlacementRequests, Key: zone,
		Value: &schemas.ReleaseVm{RequestID: "x-a2", VmID: "vm-a2", ZoneID: zone}})
	l = waitLease(created.ID, "TERMINATED", func(l api.Lease) bool { return l.Status == "TERMINATED" })
	if l.Reservations[0].Status != "deleted" {
		t.Fatalf("ended reservation %+v", l.Reservations[0])
	}
	// The hosts are back in the pool: bolt may use h2 now.
	if h := place("p-b3", "vm-b3", "bolt"); h != "h2" {
		t.Fatalf("bolt's VM after the lease on %q, want h2", h)
	}
}
