package gateway_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/gateway/gatewaytest"
)

// The console is served at / and /console/ without a key (it holds no
// data), while the API beside it still asks for one and answers unknown
// paths with its JSON error; the console's paths are not API routes.
func TestConsoleIsMountedBesideTheAPI(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	for _, p := range []string{"/", "/console/console.js", "/console/console.css"} {
		rec := e.do("GET", p, "", nil)
		wantStatus(t, rec, http.StatusOK)
		if rec.Header().Get("Content-Security-Policy") == "" || rec.Header().Get("X-Request-Id") == "" {
			t.Errorf("%s: headers %v", p, rec.Header())
		}
	}
	wantStatus(t, e.do("POST", "/", "", nil), http.StatusMethodNotAllowed)
	wantStatus(t, e.do("GET", "/v1/vms", "", nil), http.StatusUnauthorized)
	rec := e.do("GET", "/v1/nope", "", nil)
	wantStatus(t, rec, http.StatusNotFound)
	if eb := decode[api.ErrorResponse](t, rec); eb.Error.Code != "not_found" {
		t.Errorf("unknown API path: %s", rec.Body.String())
	}
	routes := gateway.New(gateway.Config{}, gatewaytest.NewReadModel(), &gatewaytest.Recorder{}).Routes()
	if i := slices.IndexFunc(routes, func(r string) bool { return !strings.Contains(r, " /v1/") }); i >= 0 {
		t.Errorf("Routes lists %s", routes[i])
	}
}
