package gateway_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/projectors/postgres"
)

// TestServeShutsDownGracefully: cancelling Serve's context answers a
// long-poll in flight with the job as it is, then Serve returns nil.
func TestServeShutsDownGracefully(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	e.rm.PutJob(postgres.Job{ID: "job-run", VmID: "vm-a1", Account: "acct-a", State: "running", CreatedAt: t0})
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
