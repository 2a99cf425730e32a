package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

func TestCancelJobPublishesCancelJob(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	e.rm.PutJob(readmodel.Job{ID: "job-m1", VmID: "vm-a1", Account: "acct-a", Type: "Migrate", State: "running", TaskState: "Migrating", CreatedAt: t0})
	rec := e.do("POST", "/v1/jobs/job-m1/cancel", e.alice, map[string]any{"reason": "wrong host"})
	wantStatus(t, rec, http.StatusAccepted)
	job := decode[api.Job](t, rec)
	if job.ID != "job-m1" || job.State != "running" || rec.Header().Get("Location") != "/v1/jobs/job-m1" {
		t.Fatalf("job %+v, Location %q", job, rec.Header().Get("Location"))
	}
	recs := e.pub.Records()
	if len(recs) != 1 {
		t.Fatalf("%d records published, want 1", len(recs))
	}
	r := recs[0]
	c, ok := r.Value.(*schemas.CancelJob)
	if !ok || r.Topic != schemas.TopicVmCommands || r.Key != "vm-a1" {
		t.Fatalf("record %s key %s value %T", r.Topic, r.Key, r.Value)
	}
	if c.JobID != "job-m1" || c.VmID != "vm-a1" || c.Account != "acct-a" || c.Reason != "wrong host" || c.CommandID != r.Headers["command_id"] ||
		c.CommandID == "" || c.IssuedAt == 0 || !strings.HasPrefix(c.By, "key ") || !strings.HasSuffix(c.By, " of account acct-a") {
		t.Fatalf("cancel = %+v, headers %v", *c, r.Headers)
	}

	// A body is optional; an admin cancels any account's job.
	e.rm.PutJob(readmodel.Job{ID: "job-q", VmID: "vm-a1", Account: "acct-a", Type: "Stop", State: "pending", CreatedAt: t0})
	wantStatus(t, e.do("POST", "/v1/jobs/job-q/cancel", e.admin, nil), http.StatusAccepted)
	if c := e.pub.Records()[1].Value.(*schemas.CancelJob); c.JobID != "job-q" || !strings.HasSuffix(c.By, " of account ops") {
		t.Fatalf("admin's cancel = %+v", *c)
	}
}

func TestCancelJobRefusals(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	e.rm.PutJob(readmodel.Job{ID: "job-t", VmID: "vm-a1", Account: "acct-a", Type: "Terminate", State: "running", CreatedAt: t0})
	e.rm.PutJob(readmodel.Job{ID: "job-drain", Type: "PrepareForMaintenance", State: "running", CreatedAt: t0})
	e.rm.PutJob(readmodel.Job{ID: "job-c", VmID: "vm-a1", Account: "acct-a", Type: "Reboot", State: "cancelled", Reason: "Cancelled by terminate job t1", CreatedAt: t0, FinishedAt: &t0})
	for _, tc := range []struct {
		name, path, key string
		body            any
		status          int
		code, state     string
	}{
		{"unknown job", "/v1/jobs/job-nope/cancel", e.alice, nil, 404, "not_found", ""},
		{"another account's job", "/v1/jobs/job-b1/cancel", e.alice, nil, 404, "not_found", ""},
		{"a job that succeeded", "/v1/jobs/job-a1/cancel", e.alice, nil, 409, "invalid_state", "succeeded"},
		{"a job cancelled already", "/v1/jobs/job-c/cancel", e.alice, nil, 409, "invalid_state", "cancelled"},
		{"a terminate", "/v1/jobs/job-t/cancel", e.alice, nil, 409, "invalid_state", "running"},
		{"a host's maintenance", "/v1/jobs/job-drain/cancel", e.admin, nil, 409, "invalid_state", "running"},
		{"a host's maintenance, for a user", "/v1/jobs/job-drain/cancel", e.alice, nil, 404, "not_found", ""},
		{"an unknown field", "/v1/jobs/job-t/cancel", e.alice, `{"why":"x"}`, 422, "validation_failed", ""},
		{"a reason that is not text", "/v1/jobs/job-t/cancel", e.alice, "{\"reason\":\"a\\u0000b\"}", 422, "validation_failed", ""},
		{"a reason too long", "/v1/jobs/job-t/cancel", e.alice, map[string]any{"reason": strings.Repeat("x", 501)}, 422, "validation_failed", ""},
	} {
		rec := e.do("POST", tc.path, tc.key, tc.body)
		if rec.Code != tc.status {
			t.Errorf("%s: status %d, want %d: %s", tc.name, rec.Code, tc.status, rec.Body)
			continue
		}
		er := decode[api.ErrorResponse](t, rec)
		if er.Error.Code != tc.code || tc.state != "" && er.Error.Details["state"] != tc.state {
			t.Errorf("%s: error %+v", tc.name, er.Error)
		}
	}
	if n := len(e.pub.Records()); n != 0 {
		t.Fatalf("%d records published for refused cancels", n)
	}
}
