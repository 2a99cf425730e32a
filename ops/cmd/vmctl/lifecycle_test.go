package main

import (
	"bytes"
	"io"
	"log/slog"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/gateway/gatewaytest"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
	"github.com/vmplane/vmplane/schemas/actions"
)

// TestEveryActionIsACommand runs the command of every action of the
// catalog, every flag set, against the real gateway and checks the record
// it published: the action's command with each parameter in its field.
// A flag that clashed with vmctl's own would panic here.
func TestEveryActionIsACommand(t *testing.T) {
	rm := gatewaytest.NewReadModel()
	rm.PutOffering(readmodel.Offering{ID: "off-small", Name: "small", CPU: 1, MemoryMB: 1024})
	// No allowed_actions yet: the gateway lets the processor judge.
	rm.PutVM(readmodel.VM{ID: "vm-1", Account: "acct-a"})
	rm.PutTemplate(readmodel.Template{ID: "tiny-linux", Name: "tiny-linux", Format: "qcow2", SizeMB: 1024})
	key, id, hash, err := gateway.NewAPIKey()
	if err != nil {
		t.Fatal(err)
	}
	rm.PutAPIKey(readmodel.APIKey{KeyID: id, AccountID: "acct-a", Role: gateway.RoleUser, Hash: hash})
	pub := &gatewaytest.Recorder{}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := httptest.NewServer(gateway.New(gateway.Config{Logger: quiet}, rm, pub).Handler())
	t.Cleanup(srv.Close)
	env := map[string]string{"VMPLANE_API": srv.URL, "VMPLANE_API_KEY": key}
	getenv := func(k string) string { return env[k] }

	var help bytes.Buffer
	if code := run(t.Context(), []string{"vm", "--help"}, getenv, &help, io.Discard); code != exitOK {
		t.Fatalf("vm --help: exit %d", code)
	}
	for _, a := range actions.Catalog {
		args := []string{"vm", actionVerb(a), "vm-1"}
		want := map[string]any{}
		for _, p := range a.Params {
			switch p.Kind {
			case actions.KindBool:
				args = append(args, "--"+p.Flag)
				want[p.Name] = true
			case actions.KindOffering:
				args = append(args, "--"+p.Flag, "small")
				want[p.Name] = "off-small"
			case actions.KindInt:
				args = append(args, "--"+p.Flag, "10")
				want[p.Name] = int64(10)
			case actions.KindString:
				if a.Command == "Rebuild" && p.Name == "image" {
					// A rebuild's image is a template of the catalog.
					args = append(args, "--"+p.Flag, "tiny-linux")
					want[p.Name] = "tiny-linux"
					continue
				}
				fallthrough
			default:
				args = append(args, "--"+p.Flag, "x-"+p.Flag)
				want[p.Name] = "x-" + p.Flag
			}
		}
		var out, errb bytes.Buffer
		if code := run(t.Context(), args, getenv, &out, &errb); code != exitOK {
			t.Fatalf("vmctl %s: exit %d: %s", strings.Join(args, " "), code, errb.String())
		}
		recs := pub.Records()
		v := recs[len(recs)-1].Value
		if got := schemas.TypeName(v); got != a.Command {
			t.Errorf("vmctl %s published %s, want %s", strings.Join(args, " "), got, a.Command)
			continue
		}
		for name, w := range want {
			f := avroField(t, v, name)
			if o, ok := f.(schemas.Offering); ok {
				f = o.ID
			}
			if f != w {
				t.Errorf("vmctl %s: %s = %v, want %v", strings.Join(args, " "), name, f, w)
			}
		}
		if !strings.Contains(help.String(), "\n  "+actionVerb(a)+" ") {
			t.Errorf("vm --help does not list %s:\n%s", actionVerb(a), help.String())
		}
	}
}

func TestRequiredParameter(t *testing.T) {
	var out, errb bytes.Buffer
	getenv := func(k string) string { return map[string]string{"VMPLANE_API_KEY": "k"}[k] }
	if code := run(t.Context(), []string{"vm", "resize", "vm-1"}, getenv, &out, &errb); code != exitUsage ||
		!strings.Contains(errb.String(), "resize needs --offering") {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
}

// avroField is the field of record v whose Avro name is name.
func avroField(t *testing.T, v any, name string) any {
	t.Helper()
	rv := reflect.ValueOf(v).Elem()
	for i := range rv.NumField() {
		if rv.Type().Field(i).Tag.Get("avro") == name {
			return rv.Field(i).Interface()
		}
	}
	t.Fatalf("%T has no field %s", v, name)
	return nil
}
