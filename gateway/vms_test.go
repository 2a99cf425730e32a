package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/schemas"
)

func TestDeployPublishesAndAnswers202(t *testing.T) {
	e := newEnv(t, gateway.Config{ZoneID: "zone-9"})
	rec := e.do("POST", "/v1/vms", e.alice, map[string]any{"name": "web-2", "offering": "small", "affinity_group": "web"},
		"X-Request-Id", "req-deploy-1")
	wantStatus(t, rec, http.StatusAccepted)

	job := decode[api.Job](t, rec)
	if rec.Header().Get("Location") != "/v1/jobs/"+job.ID {
		t.Fatalf("Location %q, job id %q", rec.Header().Get("Location"), job.ID)
	}
	if job.Type != "Deploy" || job.State != "pending" || job.FinishedAt != nil || job.CreatedAt.IsZero() || !strings.HasPrefix(job.VmID, "vm-") {
		t.Fatalf("job = %+v", job)
	}
	if !strings.Contains(rec.Body.String(), `"finished_at":null`) {
		t.Fatalf("finished_at not null in %s", rec.Body.String())
	}

	recs := e.pub.Records()
	if len(recs) != 1 {
		t.Fatalf("%d records published, want 1", len(recs))
	}
	r := recs[0]
	if r.Topic != schemas.TopicVmCommands || r.Key != job.VmID || r.Headers["command_id"] != job.ID {
		t.Fatalf("record topic %s key %s headers %v; job %+v", r.Topic, r.Key, r.Headers, job)
	}
	d, ok := r.Value.(*schemas.Deploy)
	if !ok {
		t.Fatalf("value is %T", r.Value)
	}
	want := schemas.Deploy{
		VmCommand: schemas.VmCommand{CommandID: job.ID, VmID: job.VmID, Account: "acct-a", Origin: "api", IssuedAt: d.IssuedAt,
			Caller: schemas.Caller{Account: "acct-a", KeyID: keyIDOf(t, e.alice), RequestID: "req-deploy-1"}},
		Name: "web-2", ZoneID: "zone-9", AffinityGroup: "web",
		Offering: schemas.Offering{ID: "off-small", Name: "small", CPU: 1, MemoryMB: 1024, HostTags: []string{"ssd"}},
	}
	if d.IssuedAt == 0 || !equalJSON(t, *d, want) {
		t.Fatalf("deploy = %+v\nwant     %+v", *d, want)
	}
}

// TestCommandsNameTheirCaller: an admin acting on a user's VM writes the
// VM's owner as the command's account and itself as its caller, with the
// request id the gateway made when the client sent none; a host command
// and a setting name their caller too.
func TestCommandsNameTheirCaller(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	rec := e.do("POST", "/v1/vms/vm-a1/actions", e.admin, map[string]any{"action": "stop"})
	wantStatus(t, rec, http.StatusAccepted)
	rec2 := e.do("POST", "/v1/hosts/host-1/actions", e.admin, map[string]string{"action": "disable"}, "X-Request-Id", "req-host-1")
	wantStatus(t, rec2, http.StatusAccepted)
	recs := e.pub.Records()
	if len(recs) != 2 {
		t.Fatalf("%d records published, want 2", len(recs))
	}
	stop, ok := recs[0].Value.(*schemas.Stop)
	if !ok {
		t.Fatalf("value is %T", recs[0].Value)
	}
	want := schemas.Caller{Account: "ops", KeyID: keyIDOf(t, e.admin), RequestID: rec.Header().Get("X-Request-Id")}
	if stop.Account != "acct-a" || stop.Caller != want || want.RequestID == "" {
		t.Fatalf("stop account %q caller %+v, want acct-a and %+v", stop.Account, stop.Caller, want)
	}
	dis, ok := recs[1].Value.(*schemas.DisableHost)
	if !ok {
		t.Fatalf("value is %T", recs[1].Value)
	}
	if want.RequestID = "req-host-1"; dis.Caller != want {
		t.Fatalf("disable host caller %+v, want %+v", dis.Caller, want)
	}
	// An operator's setting names its caller too.
	rec3 := e.do("PUT", "/v1/settings/ping.timeout", e.admin, map[string]any{"value": "20s"}, "X-Request-Id", "req-set-1")
	if rec3.Code >= 300 {
		t.Fatalf("PUT setting: %d %s", rec3.Code, rec3.Body)
	}
	set, ok := e.pub.Records()[2].Value.(*schemas.SettingChanged)
	if want.RequestID = "req-set-1"; !ok || set.Caller != want {
		t.Fatalf("setting %+v, want caller %+v", e.pub.Records()[2].Value, want)
	}
}

func keyIDOf(t *testing.T, key string) string {
	t.Helper()
	id, ok := gateway.ParseAPIKey(key)
	if !ok {
		t.Fatalf("bad key %q", key)
	}
	return id
}

func TestDeployHAFollowsOfferingUnlessGiven(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	for _, tc := range []struct {
		body map[string]any
		ha   bool
	}{
		{map[string]any{"name": "a", "offering": "off-ha"}, true},
		{map[string]any{"name": "b", "offering": "ha-medium", "ha": false}, false},
		{map[string]any{"name": "c", "offering": "small"}, false},
		{map[string]any{"name": "d", "offering": "small", "ha": true}, true},
	} {
		wantStatus(t, e.do("POST", "/v1/vms", e.alice, tc.body), http.StatusAccepted)
		recs := e.pub.Records()
		if d := recs[len(recs)-1].Value.(*schemas.Deploy); d.HA != tc.ha {
			t.Errorf("%v: ha = %v, want %v", tc.body, d.HA, tc.ha)
		}
	}
}

func TestDeployValidation(t *testing.T) {
	e := newEnv(t, gateway.Config{MaxBodyBytes: 256})
	for _, tc := range []struct {
		name, body, ctype string
		status            int
		field             string
	}{
		{"unknown field", `{"name":"a","offering":"small","colour":"red"}`, "", 422, "colour"},
		{"name missing", `{"offering":"small"}`, "", 422, "name"},
		{"name upper case", `{"name":"Web","offering":"small"}`, "", 422, "name"},
		{"name too long", `{"name":"` + strings.Repeat("a", 64) + `","offering":"small"}`, "", 422, "name"},
		{"offering missing", `{"name":"a"}`, "", 422, "offering"},
		{"offering unknown", `{"name":"a","offering":"huge"}`, "", 422, "offering"},
		{"ha not a bool", `{"name":"a","offering":"small","ha":"yes"}`, "", 422, "ha"},
		{"bad affinity group", `{"name":"a","offering":"small","affinity_group":"A B"}`, "", 422, "affinity_group"},
		{"not an object", `[1,2]`, "", 422, ""},
		{"malformed", `{"name":`, "", 400, ""},
		{"two objects", `{"name":"a","offering":"small"}{}`, "", 400, ""},
		{"empty", ``, "", 400, ""},
		{"form content type", `{"name":"a","offering":"small"}`, "application/x-www-form-urlencoded", 415, ""},
		{"too large", `{"name":"a","offering":"small","affinity_group":"` + strings.Repeat("a", 300) + `"}`, "", 413, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hdr []string
			if tc.ctype != "" {
				hdr = []string{"Content-Type", tc.ctype}
			}
			rec := e.do("POST", "/v1/vms", e.alice, tc.body, hdr...)
			wantStatus(t, rec, tc.status)
			eb := decode[api.ErrorResponse](t, rec)
			if eb.Error.Code == "" || eb.Error.Message == "" {
				t.Fatalf("error shape missing code/message: %s", rec.Body.String())
			}
			if tc.field != "" && eb.Error.Details["field"] != tc.field {
				t.Fatalf("details.field = %v, want %q (%s)", eb.Error.Details["field"], tc.field, eb.Error.Message)
			}
		})
	}
	if n := len(e.pub.Records()); n != 0 {
		t.Fatalf("%d records published by invalid requests", n)
	}
}

func TestGetVMWithETag(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	rec := e.do("GET", "/v1/vms/vm-a1", e.alice, nil)
	wantStatus(t, rec, http.StatusOK)
	// vm-a1 has a volume and a NIC: rows of their own, in its tag.
	etag := rec.Header().Get("ETag")
	if !strings.HasPrefix(etag, `"42-`) {
		t.Fatalf("ETag %q, want \"42-<storage>\"", etag)
	}
	vm := decode[api.VM](t, rec)
	if vm.ID != "vm-a1" || vm.VmState != "Active" || vm.HostID != "host-1" || vm.Epoch != 3 || vm.CPU != 1 || vm.ZoneID != "zone-1" || len(vm.AllowedActions) != len(activeActions) {
		t.Fatalf("vm = %+v", vm)
	}
	for _, tc := range []struct {
		inm    string
		status int
	}{
		{etag, http.StatusNotModified},
		{`W/` + etag, http.StatusNotModified},
		{`"41", ` + etag, http.StatusNotModified},
		{`*`, http.StatusNotModified},
		{`"41"`, http.StatusOK},
		{`"42"`, http.StatusOK},
	} {
		rec := e.do("GET", "/v1/vms/vm-a1", e.alice, nil, "If-None-Match", tc.inm)
		wantStatus(t, rec, tc.status)
		if tc.status == http.StatusNotModified && rec.Body.Len() != 0 {
			t.Fatalf("304 with a body: %q", rec.Body.String())
		}
	}
	// A volume grown leaves the VM's row as it was, not its answer.
	v, _ := e.rm.Volume(t.Context(), "vol-a1")
	v.SizeMB *= 2
	e.rm.PutVolume(v)
	rec = e.do("GET", "/v1/vms/vm-a1", e.alice, nil, "If-None-Match", etag)
	wantStatus(t, rec, http.StatusOK)
	if got := decode[api.VM](t, rec); len(got.Volumes) != 1 || got.Volumes[0].SizeGB != 2 || rec.Header().Get("ETag") == etag {
		t.Fatalf("after the resize: ETag %q, volumes %+v", rec.Header().Get("ETag"), got.Volumes)
	}
}
