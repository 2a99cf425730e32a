package roles

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/internal/telemetry"
	"github.com/vmplane/vmplane/projectors/postgres"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

// TestOneTracePerJob deploys a VM through the real gateway, runtime,
// processors, sim agent and Postgres projector on kfake, and checks that
// the deploy is one trace holding spans of every hop, each a child of a
// span of the same trace.
func TestOneTracePerJob(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	telemetry.Install(tp)
	t.Cleanup(telemetry.Uninstall)

	l := newLifecycle(t)
	ctx := t.Context()
	key, keyID, hash, err := gateway.NewAPIKey()
	if err != nil {
		t.Fatal(err)
	}
	produce(t, l.cl, schemas.Record{Topic: schemas.TopicCatalog, Key: "off-small", Value: &schemas.ServiceOffering{
		Offering: schemas.Offering{ID: "off-small", Name: "small", CPU: 1, MemoryMB: 1024}, CreatedAt: time.Now().UnixMilli()}})
	produce(t, l.cl, schemas.Record{Topic: schemas.TopicAccounts, Key: "acme", Value: &schemas.AccountCreated{AccountID: "acme", Name: "acme"}})
	produce(t, l.cl, schemas.Record{Topic: schemas.TopicAccounts, Key: "acme", Value: &schemas.ApiKeyIssued{KeyID: keyID, AccountID: "acme", Role: "admin", Hash: hash}})

	rm, err := readmodel.NewReader(ctx, l.db.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rm.Close)
	pub, err := gateway.NewKafkaPublisher(l.kcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pub.Close)
	srv := httptest.NewServer(gateway.New(gateway.Config{ZoneID: "zone-1"}, rm, pub).Handler())
	t.Cleanup(srv.Close)

	// The projector must have the key and the offering before the deploy.
	var jobID string
	deadline := time.Now().Add(20 * time.Second)
	for jobID == "" {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/vms", strings.NewReader(`{"name":"traced","offering":"small"}`))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var job struct {
			ID string `json:"id"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&job)
		resp.Body.Close()
		if resp.StatusCode == http.StatusAccepted {
			jobID = job.ID
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("deploy answered %d", resp.StatusCode)
		}
		time.Sleep(200 * time.Millisecond)
	}
	l.succeeded(jobID)

	// The job's trace is the one of the gateway span of the deploy.
	want := map[string]bool{
		"gateway":                     false,
		"vmplane-processor-vm":        false,
		"vmplane-processor-placement": false,
		"vmplane-agent-test":          false,
		postgres.DefaultGroup:         false,
	}
	deadline = time.Now().Add(15 * time.Second)
	var spans tracetest.SpanStubs
	for {
		spans = exp.GetSpans()
		var traceID trace.TraceID
		for _, s := range spans {
			if s.Name == "POST /v1/vms" {
				traceID = s.SpanContext.TraceID()
			}
		}
		ids := map[trace.SpanID]bool{}
		for _, s := range spans {
			if s.SpanContext.TraceID() == traceID {
				ids[s.SpanContext.SpanID()] = true
			}
		}
		for k := range want {
			want[k] = false
		}
		orphans := 0
		for _, s := range spans {
			if !traceID.IsValid() || s.SpanContext.TraceID() != traceID {
				continue
			}
			if s.Name == "POST /v1/vms" {
				want["gateway"] = true
				continue
			}
			if !ids[s.Parent.SpanID()] {
				orphans++
			}
			for _, a := range s.Attributes {
				if a.Key == "messaging.consumer.group.name" {
					if _, ok := want[a.Value.AsString()]; ok {
						want[a.Value.AsString()] = true
					}
				}
			}
		}
		all := orphans == 0
		for _, seen := range want {
			all = all && seen
		}
		if all {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("trace %s: hops seen %v, %d span(s) whose parent is not in the trace", traceID, want, orphans)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
