package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/gateway/gatewaytest"
	"github.com/vmplane/vmplane/projectors/journal"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

// FuzzHTTP drives the whole HTTP surface: every route of the router (and
// the unversioned ones) with any method, path parameters of the caller's,
// of another account's or of random bytes, any query, an admin's, a user's,
// an unknown or a garbage key, any Idempotency-Key, Content-Type and
// Last-Event-ID, and any body (seeded with a valid one per route). It fails
// on a 5xx (a panic is one: the recovery answers 500) and on a record the
// gateway publishes that its consumers would not decode: accepted, then
// dead-lettered (issue 23: once it stopped the projector for everyone).
// Each request gets a short context, so
// that streams and long-polls end quickly, and a fresh gateway, so that an
// input found fails again alone.
func FuzzHTTP(f *testing.F) {
	targets := fuzzTargets(f)
	seeds := map[string]string{}
	for _, r := range matrixRoutes {
		seeds[r.method+" "+r.path] = r.body
	}
	for i, target := range targets {
		body := []byte(seeds[target])
		f.Add(uint16(i), uint8(0), uint8(0), "", uint8(whoAdmin), "", "application/json", "", "", body)
		f.Add(uint16(i), uint8(0), uint8(1), "", uint8(whoAlice), "retry-1", "", "", "limit=2&cursor=a", body)
		f.Add(uint16(i), uint8(0), uint8(2), "x\x00y", uint8(whoAlice), "a\x00b", "application/json; charset=utf-8", "3:1", "vm=vm-a1&wait=1ms", body)
	}
	// Issue 23's reproductions: text Postgres cannot store, in bodies, in
	// list filters and cursors, in an Idempotency-Key.
	for _, c := range []struct{ target, query, body string }{
		{"POST /v1/vms/{id}/actions", "", `{"action":"migrate","host_id":"h\u0000x"}`},
		{"POST /v1/vms", "", `{"name":"web-1","offering":"sm\u0000all"}`},
		{"POST /v1/jobs/{id}/cancel", "", `{"reason":"a\u0000b"}`},
		{"POST /v1/accounts", "", `{"id":"acct-x","name":"a\u0000b"}`},
		{"POST /v1/leases", "", `{"name":"l","zone_id":"z\u0000","end":"` + leaseEnd + `","reservations":[{"min_hosts":1,"max_hosts":1}]}`},
		{"POST /v1/offerings", "", `{"name":"tiny","cpu":1,"memory_mb":512,"host_tags":["\u0000"]}`},
		{"GET /v1/vms", "cursor=%00&state=%ff&host=%c3%28", ""},
		{"GET /v1/jobs", "vm=%00&state=x%00", ""},
		{"GET /v1/alerts", "vm=%ff", ""},
		{"GET /v1/leases", "cursor=%00", ""},
		{"GET /v1/accounts", "cursor=%ff", ""},
		{"GET /v1/hosts", "cursor=%00", ""},
		{"POST /v1/pools", "", `{"name":"p","scope":"Zone","path":"/a\u0000b","capacity_gb":1,"zone_id":"z\u0000"}`},
		{"POST /v1/templates", "", `{"name":"t","format":"raw","size_gb":1,"os_type":"\u0000"}`},
		{"POST /v1/networks", "", `{"name":"n","cidr":"10.0.0.0/24","gateway":"10.0.0.1","zone_id":"z\u0000"}`},
		{"POST /v1/vms", "", `{"name":"web-1","offering":"small","template":"t\u0000","networks":["\u0000"]}`},
		{"GET /v1/volumes", "vm=%00&cursor=%ff", ""},
		{"GET /v1/pools", "zone=%00", ""},
	} {
		f.Add(uint16(slices.Index(targets, c.target)), uint8(0), uint8(0), "", uint8(whoAdmin), "", "", "", c.query, []byte(c.body))
	}
	f.Add(uint16(0), uint8(3), uint8(3), "\xff\xfe", uint8(whoGarbage), "\xc3\x28", "text/plain", "x:y", "cursor=%00&state=%ff", []byte(`{"name":"a\u0000b","offering":"small"}`))

	f.Fuzz(func(t *testing.T, target uint16, method, fill uint8, noise string, who uint8, idem, ctype, lastID, query string, body []byte) {
		var logs bytes.Buffer
		e := newMatrixEnvWith(t, gateway.Config{
			Logger:    slog.New(slog.NewTextHandler(&logs, nil)),
			Events:    gateway.NewFanout(slog.New(slog.NewTextHandler(io.Discard, nil)), 100),
			History:   fakeHistory{},
			Capacity:  fakeCapacity{},
			PollEvery: time.Millisecond,
			Heartbeat: 5 * time.Millisecond,
		})
		var deadLetters []string
		e.pub.OnPublish = func(r schemas.Record) {
			if why := undecodable(r); why != "" {
				deadLetters = append(deadLetters, why)
			}
			e.rm.ProjectAccounts(r)
		}

		routeMethod, path := splitTarget(targets[int(target)%len(targets)])
		req := httptest.NewRequest("GET", "http://gw/", bytes.NewReader(body))
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
		defer cancel()
		req = req.WithContext(ctx)
		req.Method = pick(method, routeMethod)
		req.URL.Path = fillPath(e, path, fill, noise)
		req.URL.RawQuery = query
		if key := e.keyOf(who, noise); key != "" {
			req.Header.Set("Authorization", key)
		}
		for name, v := range map[string]string{"Idempotency-Key": idem, "Content-Type": ctype, "Last-Event-ID": lastID} {
			if v != "" {
				req.Header.Set(name, v)
			}
		}
		rec := httptest.NewRecorder()
		// A request that outlives its context by far blocks the fuzzer:
		// crash with every goroutine's stack, so that the input is kept.
		hung := time.AfterFunc(5*time.Second, func() {
			buf := make([]byte, 1<<20)
			panic(fmt.Sprintf("%s %q?%q still running after 5 s:\n%s", req.Method, req.URL.Path, query, buf[:runtime.Stack(buf, true)]))
		})
		e.h.ServeHTTP(rec, req)
		hung.Stop()
		if rec.Code >= 500 {
			t.Fatalf("%s %q?%q: %d %s\nlog:\n%s", req.Method, req.URL.Path, query, rec.Code, rec.Body.String(), logs.String())
		}
		if len(deadLetters) > 0 {
			t.Fatalf("%s %q answered %d and published what its consumers would dead-letter: %s", req.Method, req.URL.Path, rec.Code, strings.Join(deadLetters, "; "))
		}
	})
}

// fuzzTargets are the router's routes and the unversioned ones, as
// "METHOD /path".
func fuzzTargets(tb testing.TB) []string {
	routes := gateway.New(gateway.Config{}, gatewaytest.NewReadModel(), &gatewaytest.Recorder{}).Routes()
	var missing []string
	for _, r := range routes {
		if !matrixHas(r) {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		tb.Fatalf("routes without a seed in matrixRoutes: %v", missing)
	}
	return append(routes, "GET /healthz", "GET /readyz", "GET /v1/openapi.json", "GET /v1/nowhere")
}

func matrixHas(route string) bool {
	for _, r := range matrixRoutes {
		if r.method+" "+r.path == route {
			return true
		}
	}
	return false
}

func splitTarget(target string) (method, path string) {
	method, path, _ = strings.Cut(target, " ")
	return method, path
}

// fuzzMethods are what pick chooses from besides the route's own method:
// every method of the API, some it has not, and ones no client should send.
var fuzzMethods = []string{"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "BREW", "get"}

func pick(n uint8, own string) string {
	if int(n) == 0 || int(n) > len(fuzzMethods) {
		return own
	}
	return fuzzMethods[n-1]
}

// fillPath fills the route's {id} and {key}: with the caller's resources,
// another account's, random bytes, or the caller's with random bytes after.
func fillPath(e *matrixEnv, path string, fill uint8, noise string) string {
	r := route{path: path}
	switch fill % 4 {
	case 1:
		return r.fill("acct-b", e)
	case 2:
		for _, v := range []string{"{id}", "{key}"} {
			path = strings.ReplaceAll(path, v, noise)
		}
		return path
	case 3:
		return r.fill("acct-a", e) + "/" + noise
	}
	return r.fill("acct-a", e)
}

// Who calls.
const (
	whoNone = iota
	whoAdmin
	whoAlice
	whoBob
	whoUnknown
	whoGarbage
	whoCount
)

// keyOf is the Authorization header of who.
func (e *matrixEnv) keyOf(who uint8, noise string) string {
	switch who % whoCount {
	case whoAdmin:
		return "Bearer " + e.admin
	case whoAlice:
		return "Bearer " + e.alice
	case whoBob:
		return "Bearer " + e.bob
	case whoUnknown:
		return "Bearer " + e.unknownKey
	case whoGarbage:
		return "Bearer " + noise
	}
	return ""
}

// codec is the records' codec, as the consumers decode them.
var codec = schemas.NewCodec(nil)

// undecodable says why a consumer would dead-letter r instead of applying
// it (a key, header or field that is not text, an id field that is not an
// id: the records' rules), or "".
func undecodable(r schemas.Record) string {
	texts := []string{r.Key}
	for k, v := range r.Headers {
		texts = append(texts, k, v)
	}
	for _, s := range texts {
		if err := schemas.CheckText(s); err != nil {
			return fmt.Sprintf("%s key or header %+q: %v", r.Topic, s, err)
		}
	}
	b, err := codec.Encode(context.Background(), r.Value)
	if err == nil {
		_, err = codec.Decode(context.Background(), b)
	}
	if err != nil {
		return fmt.Sprintf("%s %T: %v", r.Topic, r.Value, err)
	}
	return ""
}

// fakeHistory is an empty ClickHouse history.
type fakeHistory struct{}

func (fakeHistory) VmHistory(context.Context, string, int) ([]journal.VmEvent, error) {
	return nil, nil
}
func (fakeHistory) VmAt(context.Context, string, time.Time) (journal.VmSnapshot, error) {
	return journal.VmSnapshot{}, nil
}
func (fakeHistory) JobJournal(context.Context, string) ([]journal.Entry, error) { return nil, nil }
func (fakeHistory) Query(context.Context, string, int) (journal.Table, error) {
	return journal.Table{Columns: []string{"1"}, Rows: [][]string{{"1"}}}, nil
}

// fakeCapacity is a zone of one cluster, refusing text as Postgres does.
type fakeCapacity struct{}

func (fakeCapacity) ZoneCapacity(_ context.Context, zone string) ([]readmodel.ClusterCapacity, error) {
	if err := gatewaytest.TextError(zone); err != nil {
		return nil, err
	}
	return []readmodel.ClusterCapacity{{ClusterID: "c1", Hosts: 1}}, nil
}

func (fakeCapacity) HostPlacement(_ context.Context, host string) (readmodel.HostPlacement, error) {
	return readmodel.HostPlacement{}, gatewaytest.TextError(host)
}
