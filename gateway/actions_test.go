package gateway_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
	"github.com/vmplane/vmplane/schemas/actions"
)

func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(ja) == string(jb)
}

func TestEveryActionMapsToItsCommand(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	// No allowed_actions yet: the read model defers to the processor.
	e.rm.PutVM(readmodel.VM{ID: "vm-new", Account: "acct-a"})
	want := map[string]string{
		"start": "Start", "stop": "Stop", "reboot": "Reboot", "pause": "Pause", "unpause": "Unpause",
		"suspend": "Suspend", "resume": "Resume", "rescue": "Rescue", "unrescue": "Unrescue",
		"rebuild": "Rebuild", "snapshot": "Snapshot", "migrate": "Migrate", "resize": "Resize",
		"confirm_resize": "ConfirmResize", "revert_resize": "RevertResize", "terminate": "Terminate",
		"revert_snapshot": "RevertSnapshot", "delete_snapshot": "DeleteSnapshot", "recover": "Recover",
		"attach_volume": "AttachVolume", "detach_volume": "DetachVolume", "resize_volume": "ResizeVolume",
		"snapshot_volume": "SnapshotVolume", "delete_volume": "DeleteVolume",
	}
	if names := gateway.ActionNames(); len(names) != len(want) {
		t.Fatalf("%d actions, want %d: %v", len(names), len(want), names)
	}
	for _, name := range gateway.ActionNames() {
		body := map[string]any{"action": name}
		switch name {
		case "resize":
			body["offering"] = "ha-medium"
		case "revert_snapshot", "delete_snapshot":
			body["snapshot_name"] = "before"
		case "resize_volume":
			body["volume_id"], body["size_gb"] = "vol-1", 20
		case "detach_volume", "snapshot_volume", "delete_volume":
			body["volume_id"] = "vol-1"
		}
		rec := e.do("POST", "/v1/vms/vm-new/actions", e.alice, body)
		wantStatus(t, rec, http.StatusAccepted)
		job := decode[api.Job](t, rec)
		recs := e.pub.Records()
		r := recs[len(recs)-1]
		if got := schemas.TypeName(r.Value); got != want[name] || job.Type != want[name] {
			t.Errorf("%s published %s, job type %s; want %s", name, got, job.Type, want[name])
		}
		if r.Key != "vm-new" || r.Headers["command_id"] != job.ID || rec.Header().Get("Location") != "/v1/jobs/"+job.ID {
			t.Errorf("%s: key %s headers %v location %s job %s", name, r.Key, r.Headers, rec.Header().Get("Location"), job.ID)
		}
		if _, err := schemas.Marshal(r.Value); err != nil {
			t.Errorf("%s: the published value does not encode: %v", name, err)
		}
	}
}

func TestActionParameters(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	wantStatus(t, e.do("POST", "/v1/vms/vm-a1/actions", e.alice, `{"action":"stop","force":true}`), http.StatusAccepted)
	recs := e.pub.Records()
	stop, ok := recs[0].Value.(*schemas.Stop)
	if !ok || !stop.Force || stop.Account != "acct-a" || stop.Origin != "api" || stop.VmID != "vm-a1" {
		t.Fatalf("stop = %#v", recs[0].Value)
	}
	// An admin acting on a user's VM issues the command for the VM's account.
	wantStatus(t, e.do("POST", "/v1/vms/vm-b1/actions", e.admin, `{"action":"start","host_id":"host-1"}`), http.StatusAccepted)
	start := e.pub.Records()[1].Value.(*schemas.Start)
	if start.Account != "acct-b" || start.HostID != "host-1" {
		t.Fatalf("start = %+v", start)
	}
	wantStatus(t, e.do("POST", "/v1/vms/vm-a1/actions", e.alice, `{"action":"resize","offering":"ha-medium"}`), http.StatusAccepted)
	resize := e.pub.Records()[2].Value.(*schemas.Resize)
	if resize.Offering.ID != "off-ha" || resize.Offering.CPU != 2 {
		t.Fatalf("resize = %+v", resize)
	}
}

func TestActionRefusals(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	for _, tc := range []struct {
		name, body string
		status     int
		code       string
		field      string
	}{
		{"not allowed in state", `{"action":"start"}`, 409, "invalid_state", ""},
		{"unknown action", `{"action":"explode"}`, 422, "validation_failed", "action"},
		{"action missing", `{"force":true}`, 422, "validation_failed", "action"},
		{"unknown field", `{"action":"stop","forse":true}`, 422, "validation_failed", "forse"},
		{"parameter of another action", `{"action":"stop","host_id":"h"}`, 422, "validation_failed", "host_id"},
		{"resize without offering", `{"action":"resize"}`, 422, "validation_failed", "offering"},
		{"resize to unknown offering", `{"action":"resize","offering":"huge"}`, 422, "validation_failed", "offering"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := e.do("POST", "/v1/vms/vm-a1/actions", e.alice, tc.body)
			wantStatus(t, rec, tc.status)
			eb := decode[api.ErrorResponse](t, rec)
			if eb.Error.Code != tc.code {
				t.Fatalf("code %q, want %q", eb.Error.Code, tc.code)
			}
			if tc.field != "" && eb.Error.Details["field"] != tc.field {
				t.Fatalf("details.field %v, want %s", eb.Error.Details["field"], tc.field)
			}
			if tc.status == http.StatusConflict {
				got, _ := json.Marshal(eb.Error.Details["allowed_actions"])
				want, _ := json.Marshal(activeActions)
				if string(got) != string(want) {
					t.Fatalf("allowed_actions %s, want %s", got, want)
				}
			}
		})
	}
	if n := len(e.pub.Records()); n != 0 {
		t.Fatalf("%d records published by refused actions", n)
	}
}

func TestDeleteIsTerminate(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	rec := e.do("DELETE", "/v1/vms/vm-a1", e.alice, nil)
	wantStatus(t, rec, http.StatusAccepted)
	job := decode[api.Job](t, rec)
	if _, ok := e.pub.Records()[0].Value.(*schemas.Terminate); !ok || job.Type != "Terminate" {
		t.Fatalf("published %T, job %+v", e.pub.Records()[0].Value, job)
	}
}

func TestPublishFailureIs503(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	e.pub.Err = errors.New("broker down")
	rec := e.do("POST", "/v1/vms/vm-a1/actions", e.alice, `{"action":"stop"}`, "Idempotency-Key", "k1")
	wantStatus(t, rec, http.StatusServiceUnavailable)
	if eb := decode[api.ErrorResponse](t, rec); eb.Error.Code != "unavailable" {
		t.Fatalf("code %q", eb.Error.Code)
	}
	// The failed attempt must not pin the key: the retry does the work.
	e.pub.Err = nil
	wantStatus(t, e.do("POST", "/v1/vms/vm-a1/actions", e.alice, `{"action":"stop"}`, "Idempotency-Key", "k1"), http.StatusAccepted)
	if n := len(e.pub.Records()); n != 1 {
		t.Fatalf("%d records, want 1", n)
	}
}

// api.ActionRequest carries every parameter of the catalog, as a pointer field
// of its JSON name and kind, and nothing else: the gateway reads the
// parameters from it by name.
func TestActionRequestCarriesTheCatalog(t *testing.T) {
	kindType := map[string]reflect.Type{
		actions.KindBool: reflect.TypeFor[*bool](), actions.KindString: reflect.TypeFor[*string](), actions.KindOffering: reflect.TypeFor[*string](),
		actions.KindInt: reflect.TypeFor[*int64](),
	}
	fields := map[string]reflect.Type{}
	rt := reflect.TypeFor[api.ActionRequest]()
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		fields[name] = rt.Field(i).Type
	}
	params := map[string]bool{"action": true}
	for _, a := range actions.Catalog {
		for _, p := range a.Params {
			params[p.Name] = true
			if fields[p.Name] != kindType[p.Kind] {
				t.Errorf("action %s: field %s of the request is %v, want %v", a.Name, p.Name, fields[p.Name], kindType[p.Kind])
			}
		}
	}
	for name := range fields {
		if !params[name] {
			t.Errorf("field %s of the request is no parameter of any action", name)
		}
	}
}

// Every parameter of every action reaches its field of the command.
func TestEveryParameterReachesItsCommand(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	e.rm.PutVM(readmodel.VM{ID: "vm-new", Account: "acct-a"})
	for _, a := range actions.Catalog {
		body := map[string]any{"action": a.Name}
		want := map[string]any{}
		for _, p := range a.Params {
			switch p.Kind {
			case actions.KindBool:
				body[p.Name], want[p.Name] = true, true
			case actions.KindOffering:
				body[p.Name], want[p.Name] = "ha-medium", "off-ha"
			case actions.KindInt:
				body[p.Name], want[p.Name] = 7, int64(7)
			case actions.KindString:
				if a.Command == "Rebuild" && p.Name == "image" {
					// A rebuild's image is a template, by name or id.
					body[p.Name], want[p.Name] = "tiny-linux", "tiny-linux"
					continue
				}
				fallthrough
			default:
				body[p.Name], want[p.Name] = "x-"+p.Name, "x-"+p.Name
			}
		}
		wantStatus(t, e.do("POST", "/v1/vms/vm-new/actions", e.alice, body), http.StatusAccepted)
		recs := e.pub.Records()
		v := reflect.ValueOf(recs[len(recs)-1].Value).Elem()
		for i := range v.NumField() {
			name := v.Type().Field(i).Tag.Get("avro")
			w, ok := want[name]
			if !ok {
				continue
			}
			got := v.Field(i).Interface()
			if o, ok := got.(schemas.Offering); ok {
				got = o.ID
			}
			if got != w {
				t.Errorf("%s: %s = %v, want %v", a.Name, name, got, w)
			}
			delete(want, name)
		}
		if len(want) != 0 {
			t.Errorf("%s: %s has no field for %v", a.Name, v.Type().Name(), want)
		}
	}
}
