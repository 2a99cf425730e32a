package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/internal/telemetry"
)

// series returns the labels of family name's series on Default.
func series(t *testing.T, name string) []map[string]string {
	t.Helper()
	mfs, err := telemetry.Default.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			out = append(out, l)
		}
	}
	return out
}

// TestLatencyLeavesOutStreams: every documented route has its series from
// the start; an event stream and a long-poll are counted, but their
// duration, the client's choice, is not a latency.
func TestLatencyLeavesOutStreams(t *testing.T) {
	f := gateway.NewFanout(slog.New(slog.NewTextHandler(io.Discard, nil)), 10)
	e := newEnv(t, gateway.Config{Events: f})
	deploys := telemetry.HTTPRequests.With("/v1/vms", "POST", "202")
	_ = deploys.Value() // present before any deploy: the check is the scrape below
	found := false
	for _, l := range series(t, "vmplane_http_requests_total") {
		found = found || (l["route"] == "/v1/vms" && l["method"] == "POST" && l["code"] == "202")
	}
	if !found {
		t.Fatal("POST /v1/vms has no series before its first request")
	}

	getVM := telemetry.HTTPSeconds.With("/v1/vms/{id}", "GET")
	before := getVM.Count()
	wantStatus(t, e.do("GET", "/v1/vms/vm-a1", e.alice, nil), http.StatusOK)
	if getVM.Count() != before+1 {
		t.Fatal("a GET of a VM was not timed")
	}

	getJob := telemetry.HTTPSeconds.With("/v1/jobs/{id}", "GET")
	polls := telemetry.HTTPRequests.With("/v1/jobs/{id}", "GET", "200")
	jobsBefore, pollsBefore := getJob.Count(), polls.Value()
	wantStatus(t, e.do("GET", "/v1/jobs/job-a1?wait=5s", e.alice, nil), http.StatusOK)
	if getJob.Count() != jobsBefore || polls.Value() != pollsBefore+1 {
		t.Fatalf("a long-poll: timed %d, counted %v; want it counted, not timed", getJob.Count()-jobsBefore, polls.Value()-pollsBefore)
	}

	streams := telemetry.HTTPRequests.With("/v1/events", "GET", "200")
	streamsBefore := streams.Value()
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, "GET", "/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+e.alice)
	opened := make(chan struct{})
	go func() {
		defer close(opened)
		deadline := time.Now().Add(2 * time.Second)
		for telemetry.HTTPStreams.With("/v1/events").Value() != 1 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}()
	e.h.ServeHTTP(httptest.NewRecorder(), req)
	<-opened
	if streams.Value() != streamsBefore+1 {
		t.Fatal("the stream was not counted")
	}
	if open := telemetry.HTTPStreams.With("/v1/events").Value(); open != 0 {
		t.Fatalf("%v streams open after it ended", open)
	}
	for _, l := range series(t, "vmplane_http_request_seconds") {
		if l["route"] == "/v1/events" || l["route"] == "/v1/jobs/{id}/events" {
			t.Fatalf("a stream route has a latency series: %v", l)
		}
	}
}

// TestRequestLogNamesKeyAndJob: the request's log line names the caller's
// key id (never the key) and the job it started or asked about.
func TestRequestLogNamesKeyAndJob(t *testing.T) {
	var buf bytes.Buffer
	e := newEnv(t, gateway.Config{Logger: telemetry.NewJSONLogger(&buf, slog.LevelInfo)})
	aliceID, _ := gateway.ParseAPIKey(e.alice)
	rec := e.do("POST", "/v1/vms/vm-a1/actions", e.alice, map[string]string{"action": "reboot"})
	wantStatus(t, rec, http.StatusAccepted)
	job := decode[api.Job](t, rec)
	wantStatus(t, e.do("GET", "/v1/jobs/job-a1", e.alice, nil), http.StatusOK)
	wantStatus(t, e.do("GET", "/v1/vms", "", nil), http.StatusUnauthorized)
	wantStatus(t, e.do("POST", "/v1/vms/vm-a1/actions", e.alice, map[string]string{"action": "fly"}), http.StatusUnprocessableEntity)

	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		if m["msg"] == "http request" {
			lines = append(lines, m)
		}
	}
	if len(lines) != 4 {
		t.Fatalf("%d request lines: %v", len(lines), lines)
	}
	if lines[0]["key_id"] != aliceID || lines[0]["job_id"] != job.ID || job.ID == "" {
		t.Errorf("action: key_id %v job_id %v, want %s and %s", lines[0]["key_id"], lines[0]["job_id"], aliceID, job.ID)
	}
	if lines[1]["key_id"] != aliceID || lines[1]["job_id"] != "job-a1" {
		t.Errorf("job read: %v", lines[1])
	}
	if _, ok := lines[2]["key_id"]; ok {
		t.Errorf("a request without a key names one: %v", lines[2])
	}
	if _, ok := lines[3]["job_id"]; ok {
		t.Errorf("a refused action names a job: %v", lines[3])
	}
	if strings.Contains(buf.String(), e.alice) {
		t.Error("the key itself is in the log")
	}
}
