package gateway_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/readmodel"
)

func TestHealthAndReadiness(t *testing.T) {
	var kafkaErr error
	e := newEnv(t, gateway.Config{Ready: func(context.Context) error { return kafkaErr }})
	wantStatus(t, e.do("GET", "/healthz", "", nil), http.StatusOK)
	wantStatus(t, e.do("GET", "/readyz", "", nil), http.StatusOK)

	kafkaErr = errors.New("no broker")
	wantStatus(t, e.do("GET", "/readyz", "", nil), http.StatusServiceUnavailable)
	kafkaErr = nil
	e.rm.SetReady(errors.New("db down"))
	rec := e.do("GET", "/readyz", "", nil)
	wantStatus(t, rec, http.StatusServiceUnavailable)
	if eb := decode[api.ErrorResponse](t, rec); eb.Error.Code != "unavailable" {
		t.Fatalf("readyz error %s", rec.Body.String())
	}
	wantStatus(t, e.do("GET", "/healthz", "", nil), http.StatusOK)
}

func TestRequestID(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	if got := e.do("GET", "/healthz", "", nil, "X-Request-Id", "abc-123").Header().Get("X-Request-Id"); got != "abc-123" {
		t.Fatalf("request id %q, want the client's abc-123", got)
	}
	a := e.do("GET", "/healthz", "", nil).Header().Get("X-Request-Id")
	b := e.do("GET", "/healthz", "", nil, "X-Request-Id", "bad id\twith spaces").Header().Get("X-Request-Id")
	if a == "" || b == "" || a == b || b == "bad id\twith spaces" {
		t.Fatalf("generated ids %q %q", a, b)
	}
}

func TestHostsAndOfferings(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	type hosts struct{ Items []api.Host }
	h := decode[hosts](t, e.do("GET", "/v1/hosts", e.admin, nil))
	if len(h.Items) != 1 || h.Items[0].ID != "host-1" || h.Items[0].CPU != 32 || h.Items[0].UsedMemoryMB != 1024 || h.Items[0].LastPingAt != nil {
		t.Fatalf("hosts = %+v", h)
	}
	type offerings struct{ Items []api.Offering }
	o := decode[offerings](t, e.do("GET", "/v1/offerings", e.alice, nil))
	if len(o.Items) != 2 || o.Items[0].Name != "ha-medium" || !o.Items[0].HA || o.Items[1].HostTags[0] != "ssd" {
		t.Fatalf("offerings = %+v", o)
	}
	e.rm.PutHost(readmodel.Host{ID: "host-2"})
	wantStatus(t, e.do("GET", "/v1/nothing", e.admin, nil), http.StatusNotFound)
	wantStatus(t, e.do("PUT", "/v1/vms", e.admin, nil), http.StatusMethodNotAllowed)
}
