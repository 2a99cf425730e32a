package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/gateway/gatewaytest"
	"github.com/vmplane/vmplane/projectors/journal"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

// TestOpenAPIDescribesEveryAnswer: every route of the matrix, asked by an
// admin with something in every list behind it, answers as the served
// document says: its documented status, and a body whose fields are those
// of the route's schema, required ones included, or no body where the
// document has none; and every body a route accepted holds only fields of
// its documented request. The routes with two answers are asked for both,
// and those a user may be refused answer the documented error.
func TestOpenAPIDescribesEveryAnswer(t *testing.T) {
	e := answersEnv(t)
	rec := e.do("GET", "/v1/openapi.json", "", nil)
	wantStatus(t, rec, http.StatusOK)
	var doc struct {
		Paths      map[string]map[string]operation `json:"paths"`
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	var asks []ask
	for _, r := range matrixRoutes {
		asks = append(asks, ask{r, r.fill("acct-a", e)})
	}
	asks = append(asks,
		ask{route{method: "GET", path: "/v1/vms/{id}/history"}, "/v1/vms/vm-a1/history?at=2026-05-01T10:00:30Z"},
		ask{route{method: "GET", path: "/v1/jobs/{id}/journal"}, "/v1/jobs/job-gone/journal"})
	for _, r := range asks {
		op, ok := doc.Paths[r.path][strings.ToLower(r.method)]
		if !ok {
			t.Errorf("%s %s is not in the document", r.method, r.path)
			continue
		}
		if _, stream := op.Responses["200"].Content["text/event-stream"]; !stream {
			r.check(t, e, doc.Components.Schemas, op) // a stream's events are no JSON document
		}
	}
}

// ask is a route of the matrix and the URL it is asked at.
type ask struct {
	route
	url string
}

// check asks the route as an admin, and as a user refused where one is,
// and holds the request and the answers to op.
func (r ask) check(t *testing.T, e *matrixEnv, comps map[string]any, op operation) {
	t.Helper()
	status, ok := op.success()
	if !ok {
		t.Errorf("%s %s: the document has no success status", r.method, r.path)
		return
	}
	var body any
	if r.body != "" {
		body = r.body
		media, ok := op.RequestBody.Content["application/json"]
		if !ok {
			t.Errorf("%s %s takes a body the document does not describe", r.method, r.path)
		}
		for _, msg := range gateway.MatchSchema(comps, media.Schema, jsonOf(t, []byte(r.body)), false) {
			t.Errorf("%s %s, request: %s", r.method, r.url, msg)
		}
	}
	rec := e.do(r.method, r.url, e.admin, body)
	media, documented := op.Responses[status].Content["application/json"]
	switch {
	case status != strconv.Itoa(rec.Code):
		t.Errorf("%s %s: %d, the document says %s: %s", r.method, r.url, rec.Code, status, rec.Body)
		return
	case !documented && rec.Body.Len() > 0:
		t.Errorf("%s %s: the document has no answer, the route answers %s", r.method, r.url, rec.Body)
	case documented:
		for _, msg := range gateway.MatchSchema(comps, media.Schema, jsonOf(t, rec.Body.Bytes()), false) {
			t.Errorf("%s %s: %s", r.method, r.url, msg)
		}
	}
	if r.admin || r.owned {
		denied := e.do(r.method, r.fill("acct-b", e), e.alice, body)
		resp, ok := op.Responses[strconv.Itoa(denied.Code)]
		if !ok {
			resp = op.Responses["default"]
		}
		for _, msg := range gateway.MatchSchema(comps, resp.Content["application/json"].Schema, jsonOf(t, denied.Body.Bytes()), false) {
			t.Errorf("%s %s refused (%d): %s", r.method, r.path, denied.Code, msg)
		}
	}
}

func jsonOf(t *testing.T, raw []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Errorf("%v: %s", err, raw)
	}
	return v
}

// operation is what the test reads of an operation of the document.
type operation struct {
	RequestBody struct {
		Content map[string]struct{ Schema any }
	} `json:"requestBody"`
	Responses map[string]struct {
		Content map[string]struct{ Schema any }
	}
}

// success is the operation's one 2xx status.
func (o operation) success() (string, bool) {
	for s := range o.Responses {
		if strings.HasPrefix(s, "2") {
			return s, true
		}
	}
	return "", false
}

// answersEnv is the matrix's env with something behind every route: steps,
// alerts, a lease with its reservation and events, a zone's capacity, a
// host's placement and the ClickHouse history of vm-a1 and of a job the
// read model no longer has (job-gone).
func answersEnv(t *testing.T) *matrixEnv {
	t.Helper()
	cfg := gateway.Config{RatePerSecond: -1, AnonRatePerSecond: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		History: fixedHistory{}, Capacity: fixedCapacity{}}
	m := newMatrixEnvWith(t, cfg)
	m.rm.AddStep(readmodel.JobStep{JobID: "job-a1", Seq: 1, TaskState: "Spawning", Step: "StartVm", Text: "StartVm sent to host-1", At: t0})
	// A job still running, so that its cancel is accepted.
	m.rm.PutJob(readmodel.Job{ID: "job-a1", VmID: "vm-a1", Account: "acct-a", Type: "Deploy", State: "running", TaskState: "Spawning", CreatedAt: t0})
	m.rm.PutAlert(readmodel.Alert{ID: "al-1", Kind: "HostDown", VmID: "vm-a1", HostID: "host-1", Account: "acct-a", Message: "host-1 is down", At: t0})
	l, _ := m.rm.Lease(t.Context(), "lease-a")
	l.Reservations = []readmodel.LeaseReservation{{ID: "res-1", Status: "active", MinHosts: 1, MaxHosts: 2,
		HostProperties: map[string]string{"gpu": "a100"}, Hosts: []string{"host-1"}}}
	m.rm.PutLease(l)
	events := []readmodel.LeaseEvent{{Seq: "zone-1/1", LeaseID: "lease-a", Event: "start_lease", Status: "ACTIVE", HostID: "host-1", CommandID: "c1", At: t0}}
	m.h = gateway.New(cfg, withLeaseEvents{m.rm, events}, m.pub).Handler()
	return m
}

// withLeaseEvents is the in-memory read model with lease events, which it
// does not keep itself.
type withLeaseEvents struct {
	*gatewaytest.ReadModel
	events []readmodel.LeaseEvent
}

func (w withLeaseEvents) LeaseEvents(context.Context, string, readmodel.Page) ([]readmodel.LeaseEvent, error) {
	return w.events, nil
}

// fixedHistory is a ClickHouse history of one event of vm-a1 and the
// journal of job-gone, which the read model no longer has.
type fixedHistory struct{}

func (fixedHistory) VmHistory(context.Context, string, int) ([]journal.VmEvent, error) {
	return []journal.VmEvent{{At: t0, Type: "VmStateChanged", JobID: "job-a1", VmState: "Active", PowerState: "PowerOn",
		HostID: "host-1", Reason: "deployed", Payload: `{"Account":"acct-a"}`}}, nil
}

func (fixedHistory) VmAt(_ context.Context, id string, at time.Time) (journal.VmSnapshot, error) {
	return journal.VmSnapshot{At: at, Since: t0, PendingJob: "job-a1", State: schemas.VmStateChanged{VmID: id, Name: "web-1",
		Account: "acct-a", VmState: "Active", AllowedActions: []string{"stop"}, CreatedAt: t0.UnixMilli(), UpdatedAt: t0.UnixMilli()}}, nil
}

func (fixedHistory) JobJournal(_ context.Context, id string) ([]journal.Entry, error) {
	return []journal.Entry{{JobID: id, Kind: "accepted", Account: "acct-a", Obj: `{"host_id":"host-1"}`, At: t0},
		{JobID: id, Seq: 1_000_000, Kind: "succeeded", Account: "acct-a", VmState: "Active", At: t0}}, nil
}

func (fixedHistory) Query(context.Context, string, int) (journal.Table, error) {
	return journal.Table{Columns: []string{"n"}, Rows: [][]string{{"1"}}}, nil
}

// fixedCapacity is a zone of two clusters and host-1 reserved with one VM.
type fixedCapacity struct{}

func (fixedCapacity) ZoneCapacity(context.Context, string) ([]readmodel.ClusterCapacity, error) {
	return []readmodel.ClusterCapacity{{PodID: "pod-1", ClusterID: "c1", Hosts: 2, ReservableHosts: 1, CPU: 64, UsedCPU: 1, FreeCPU: 63},
		{ClusterID: "c2", Hosts: 1}}, nil
}

func (fixedCapacity) HostPlacement(context.Context, string) (readmodel.HostPlacement, error) {
	return readmodel.HostPlacement{Planner: "FirstFitPlanner", ResourceUsage: "Shared", ReservedFor: "acct-a",
		Allocations: []readmodel.Allocation{{VmID: "vm-a1", Account: "acct-a", CPU: 1, MemoryMB: 1024, At: t0}}}, nil
}

// TestOpenAPIServers: the document names its server, relative to where it
// is served (the gateway's origin, whatever its address), since its paths
// carry /v1; a client generated from it needs no base URL of its own.
func TestOpenAPIServers(t *testing.T) {
	rec := answersEnv(t).do("GET", "/v1/openapi.json", "", nil)
	wantStatus(t, rec, http.StatusOK)
	var doc struct {
		Servers []struct{ URL string } `json:"servers"`
		Paths   map[string]any         `json:"paths"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Servers) != 1 || doc.Servers[0].URL != "/" {
		t.Fatalf("servers %+v, want one, /", doc.Servers)
	}
	if _, ok := doc.Paths["/v1/vms"]; !ok {
		t.Fatalf("paths do not carry /v1: the server URL / would miss it")
	}
}
