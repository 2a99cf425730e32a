package console

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/vmplane/vmplane/schemas/actions"
)

func TestHandlerServesPageAndAssets(t *testing.T) {
	h := Handler()
	for _, tc := range []struct {
		path, ctype, has string
		code             int
	}{
		{"/", "text/html", `id="actions"`, 200},
		{"/console/console.js", "javascript", "Authorization", 200},
		{"/console/console.css", "text/css", ":root", 200},
		{"/console/index.html", "", "", 404},
		{"/console/missing.js", "", "", 404},
		{"/elsewhere", "", "", 404},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
		body, _ := io.ReadAll(rec.Result().Body)
		if rec.Code != tc.code {
			t.Errorf("%s: %d, want %d", tc.path, rec.Code, tc.code)
			continue
		}
		if tc.code != 200 {
			continue
		}
		if ct := rec.Header().Get("Content-Type"); !strings.Contains(ct, tc.ctype) {
			t.Errorf("%s: Content-Type %q, want %s", tc.path, ct, tc.ctype)
		}
		if !strings.Contains(string(body), tc.has) {
			t.Errorf("%s: body lacks %q", tc.path, tc.has)
		}
		if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s: CSP %q", tc.path, csp)
		}
	}
}

// The page lists every action of the catalog, so that each has a button.
func TestPageListsEveryAction(t *testing.T) {
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	body := rec.Body.String()
	for _, name := range actions.Names() {
		if !strings.Contains(body, `"name":"`+name+`"`) {
			t.Errorf("page lacks action %s", name)
		}
	}
	if strings.Contains(body, "<script>") {
		t.Error("page has an inline script, which the CSP forbids")
	}
}
