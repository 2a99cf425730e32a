package gateway_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

// TestServeShutsDownGracefully: cancelling Serve's context answers a
// long-poll in flight with the job as it is, then Serve returns nil.
func TestServeShutsDownGracefully(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	e.rm.PutJob(readmodel.Job{ID: "job-run", VmID: "vm-a1", Account: "acct-a", State: "running", CreatedAt: t0})
	srv := gateway.New(gateway.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, e.rm, e.pub)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()

	type answer struct {
		status int
		body   string
		err    error
	}
	answered := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://"+ln.Addr().String()+"/v1/jobs/job-run?wait=30s", nil)
		req.Header.Set("Authorization", "Bearer "+e.alice)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		answered <- answer{status: resp.StatusCode, body: string(b)}
	}()
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	cancel()
	select {
	case a := <-answered:
		if a.err != nil || a.status != http.StatusOK {
			t.Fatalf("long-poll during shutdown: %d %s %v", a.status, a.body, a.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the long-poll held the shutdown")
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("shutdown took %v", d)
	}
}

// TestMethodsAndHead: a method a path does not serve is a 405 with Allow;
// HEAD answers every GET route; the OpenAPI document too.
func TestMethodsAndHead(t *testing.T) {
	f := gateway.NewFanout(slog.New(slog.NewTextHandler(io.Discard, nil)), 10)
	e := newEnv(t, gateway.Config{Events: f})
	for _, tc := range []struct {
		method, path, allow string
	}{
		{"PATCH", "/v1/vms", "GET, HEAD, POST"},
		{"PUT", "/v1/vms/vm-a1", "GET, HEAD, DELETE"},
		{"GET", "/v1/vms/vm-a1/actions", "POST"},
		{"BREW", "/v1/leases/lease-1", "GET, HEAD, PUT, DELETE"},
		{"POST", "/v1/openapi.json", "GET, HEAD"},
	} {
		rec := e.do(tc.method, tc.path, e.alice, nil)
		wantStatus(t, rec, http.StatusMethodNotAllowed)
		if got := rec.Header().Get("Allow"); got != tc.allow {
			t.Errorf("%s %s: Allow %q, want %q", tc.method, tc.path, got, tc.allow)
		}
	}
	for _, path := range []string{"/v1/vms", "/v1/vms/vm-a1", "/v1/jobs/job-a1", "/v1/events", "/v1/openapi.json", "/healthz"} {
		rec := e.do("HEAD", path, e.alice, nil)
		wantStatus(t, rec, http.StatusOK)
		if rec.Header().Get("Content-Type") == "" {
			t.Errorf("HEAD %s: no Content-Type", path)
		}
	}
}

// TestLocationsResolve: the Location of every creation answers a GET.
func TestLocationsResolve(t *testing.T) {
	e := newMatrixEnv(t)
	e.pub.OnPublish = func(r schemas.Record) {
		e.rm.ProjectAccounts(r)
		if o, ok := r.Value.(*schemas.ServiceOffering); ok {
			e.rm.PutOffering(readmodel.Offering{ID: o.ID, Name: o.Name, CPU: o.CPU, MemoryMB: o.MemoryMB})
		}
	}
	for _, c := range []struct{ path, body string }{
		{"/v1/accounts", `{"id":"acme"}`},
		{"/v1/accounts/acme/keys", `{"role":"user"}`},
		{"/v1/offerings", `{"name":"tiny","cpu":1,"memory_mb":512}`},
		{"/v1/hosts/host-1/actions", `{"action":"disable"}`},
	} {
		rec := e.do("POST", c.path, e.admin, c.body)
		if rec.Code >= 300 {
			t.Fatalf("POST %s: %d %s", c.path, rec.Code, rec.Body.String())
		}
		loc := rec.Header().Get("Location")
		if got := e.do("GET", loc, e.admin, nil); got.Code != http.StatusOK {
			t.Errorf("POST %s: Location %q answers %d", c.path, loc, got.Code)
		}
	}
}

// TestErrorsEchoLittle: an error quoting a header or a path sends back a
// bounded part of it.
func TestErrorsEchoLittle(t *testing.T) {
	e := newEnv(t, gateway.Config{Events: gateway.NewFanout(slog.New(slog.NewTextHandler(io.Discard, nil)), 10)})
	huge := strings.Repeat("x", 900<<10)
	for _, rec := range []*httptest.ResponseRecorder{
		e.do("POST", "/v1/vms", e.alice, `{}`, "Content-Type", "text/"+huge),
		e.do("GET", "/v1/"+huge, e.alice, nil),
		e.do("GET", "/v1/events", e.alice, nil, "Last-Event-ID", huge),
		e.do("GET", "/v1/jobs/job-a1?wait="+huge, e.alice, nil),
	} {
		if rec.Code < 400 || rec.Code >= 500 || rec.Body.Len() > 2048 {
			t.Errorf("%d with %d bytes: %.200s", rec.Code, rec.Body.Len(), rec.Body.String())
		}
	}
}
