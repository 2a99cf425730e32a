package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/vmplane/vmplane/gateway"
)

// TestEdgeRefusesWhatRecordsCannotHold: a NUL, a control character or
// invalid UTF-8 anywhere in a body, an id field that is not an id, and a
// query that is not text are refused with the field named; nothing is
// published, and nothing answers 500.
func TestEdgeRefusesWhatRecordsCannotHold(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	for _, tc := range []struct {
		name, method, path string
		key                string
		body               string
		status             int
		want               string
	}{
		{"NUL in a migrate host_id", "POST", "/v1/vms/vm-a1/actions", e.alice, `{"action":"migrate","host_id":"h\u0000x"}`,
			422, `field \"host_id\" is not an id`},
		{"space in a start host_id", "POST", "/v1/vms/vm-a1/actions", e.alice, `{"action":"start","host_id":"h x"}`,
			422, `field \"host_id\" is not an id`},
		{"NUL in a lease zone_id", "POST", "/v1/leases", e.alice, `{"name":"l1","zone_id":"z\u0000","end":"2030-01-02T00:00:00Z","reservations":[{"min_hosts":1,"max_hosts":1}]}`,
			422, `field \"zone_id\" is not an id`},
		{"NUL in a host_properties key", "POST", "/v1/leases", e.alice, `{"name":"l1","end":"2030-01-02T00:00:00Z","reservations":[{"min_hosts":1,"max_hosts":1,"host_properties":{"k\u0000":"v"}}]}`,
			422, `a key of field \"reservations[0].host_properties\" is not text`},
		{"NUL in a deploy name", "POST", "/v1/vms", e.alice, `{"name":"web\u0000","offering":"small"}`,
			422, `field \"name\" is not text: control character U+0000`},
		{"bell in an offering name", "POST", "/v1/offerings", e.admin, `{"name":"x\u0007","cpu":1,"memory_mb":512}`,
			422, `field \"name\" is not text: control character U+0007`},
		{"NUL in an account name", "POST", "/v1/accounts", e.admin, `{"id":"beta","name":"B\u0000"}`,
			422, `field \"name\" is not text`},
		{"NUL in a cursor", "GET", "/v1/vms?cursor=a%00b", e.alice, "", 400, `query parameter \"cursor\" is not text`},
		{"invalid UTF-8 in a filter", "GET", "/v1/jobs?vm=%ff", e.alice, "", 400, `query parameter \"vm\" is not text: invalid UTF-8`},
		{"NUL in a parameter name", "GET", "/v1/alerts?a%00=1", e.admin, "", 400, `a query parameter name is not text`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(e.pub.Records())
			var body any
			if tc.body != "" {
				body = tc.body
			}
			w := e.do(tc.method, tc.path, tc.key, body)
			if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.want) {
				t.Fatalf("%s %s = %d %s, want %d with %s", tc.method, tc.path, w.Code, w.Body, tc.status, tc.want)
			}
			if n := len(e.pub.Records()); n != before {
				t.Fatalf("%d records published for a refused request", n-before)
			}
		})
	}
	// Tabs and non-ASCII letters are text.
	if w := e.do("POST", "/v1/leases", e.alice, `{"name":"l2","end":"2030-01-02T00:00:00Z","reservations":[{"min_hosts":1,"max_hosts":1,"host_properties":{"site":"Zürich ✓\t1"}}]}`); w.Code != http.StatusAccepted {
		t.Fatalf("a lease asking for non-ASCII text = %d %s", w.Code, w.Body)
	}
}

// TestNumberOutOfRangeNamesTheRange: a JSON number its field cannot hold
// is answered with the field's range, not "must be a number".
func TestNumberOutOfRangeNamesTheRange(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	w := e.do("POST", "/v1/offerings", e.admin, `{"name":"x","cpu":99999999999,"memory_mb":1}`)
	if w.Code != 422 || !strings.Contains(w.Body.String(), `field \"cpu\" must be a whole number from -2147483648 to 2147483647`) {
		t.Fatalf("cpu out of range = %d %s", w.Code, w.Body)
	}
}
