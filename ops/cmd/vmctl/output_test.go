package main

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/gateway/gatewaytest"
	"github.com/vmplane/vmplane/readmodel"
)

// TestEveryListIsAJSONArray: each list prints a JSON array, [] when
// empty, never null or the API's page.
func TestEveryListIsAJSONArray(t *testing.T) {
	rm := gatewaytest.NewReadModel()
	key, id, hash, err := gateway.NewAPIKey()
	if err != nil {
		t.Fatal(err)
	}
	rm.PutAPIKey(readmodel.APIKey{KeyID: id, AccountID: "ops", Role: gateway.RoleAdmin, Hash: hash})
	srv := httptest.NewServer(gateway.New(gateway.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, rm, &gatewaytest.Recorder{}).Handler())
	t.Cleanup(srv.Close)
	env := map[string]string{"VMPLANE_API": srv.URL, "VMPLANE_API_KEY": key}
	for _, args := range [][]string{
		{"vm", "list"}, {"job", "list"}, {"alert", "list"}, {"host", "list"}, {"offering", "list"}, {"template", "list"},
		{"pool", "list"}, {"network", "list"}, {"volume", "list"}, {"planner", "list"}, {"settings", "list"},
	} {
		code, out, errs := vmctl(t, env, append(args, "-o", "json")...)
		var rows []map[string]any
		if code != exitOK || !strings.HasPrefix(out, "[") || json.Unmarshal([]byte(out), &rows) != nil || rows == nil {
			t.Errorf("vmctl %s -o json: exit %d: %q %s", strings.Join(args, " "), code, out, errs)
			continue
		}
		if args[1] == "list" && args[0] != "planner" && args[0] != "settings" && out != "[]\n" {
			t.Errorf("vmctl %s -o json on an empty read model: %q", strings.Join(args, " "), out)
		}
	}
}

func TestOutputFormatsAndColumns(t *testing.T) {
	s := newStack(t)
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	s.rm.PutVM(readmodel.VM{ID: "vm-2", Name: "db-1", Account: "acct-a", Offering: "small", CPU: 2, MemoryMB: 2048, VmState: "Stopped",
		CreatedAt: t0, UpdatedAt: t0})
	for _, tc := range []struct {
		args []string
		want string
	}{
		// Filters reach the gateway; an empty answer is [].
		{[]string{"vm", "list", "--state", "Deleted", "-o", "json"}, "[]\n"},
		{[]string{"vm", "list", "--state", "Stopped", "-o", "value", "-c", "id", "-c", "vm_state"}, "vm-2 Stopped\n"},
		{[]string{"vm", "list", "--host", "host-2", "-o", "value", "-c", "id"}, "vm-1\n"},
		// -c keeps the fields named, in that order; numbers stay numbers.
		{[]string{"vm", "list", "--state", "Stopped", "-o", "json", "-c", "name", "-c", "cpu"}, "[\n  {\n    \"name\": \"db-1\",\n    \"cpu\": 2\n  }\n]\n"},
		{[]string{"vm", "list", "--state", "Stopped", "-o", "yaml", "-c", "name", "-c", "cpu", "-c", "created_at"},
			"- name: db-1\n  cpu: 2\n  created_at: \"2026-05-01T10:00:00Z\"\n"},
		{[]string{"vm", "list", "-c", "id", "--column", "name"}, "ID    NAME\nvm-1  web-1\nvm-2  db-1\n"},
		{[]string{"vm", "list", "-c", "id,name", "-c", "vm_state"}, "ID    NAME   VM_STATE\nvm-1  web-1  Active\nvm-2  db-1   Stopped\n"},
		{[]string{"vm", "get", "vm-2", "-c", "id", "-c", "host_id"}, "id:       vm-2\nhost_id:  -\n"},
		{[]string{"vm", "get", "vm-2", "-o", "value", "-c", "name", "-c", "memory_mb"}, "db-1\n2048\n"},
		{[]string{"offering", "get", "small", "-o", "value", "-c", "id"}, "off-small\n"},
		{[]string{"job", "list", "--vm", "vm-2", "-o", "json"}, "[]\n"},
		{[]string{"vm", "snapshots", "vm-2", "-o", "json"}, "[]\n"},
		{[]string{"alert", "list", "--vm", "vm-2", "--open", "-o", "json"}, "[]\n"},
		// --wait with -o value prints the finished job's fields alone.
		{[]string{"vm", "deploy", "--name", "w-3", "--offering", "small", "--wait", "-o", "value", "-c", "type", "-c", "state"}, "Deploy\nsucceeded\n"},
		// --by-key is the API's ?key= (--key is the caller's own key).
		{[]string{"job", "list", "--by-key", "no-such-key", "-o", "json"}, "[]\n"},
		{[]string{"job", "list", "--by-key", userKeyID(t, s.user), "-o", "value", "-c", "type"}, "Deploy\n"},
	} {
		code, out, errs := s.run(t, s.user, tc.args...)
		if code != exitOK || out != tc.want {
			t.Errorf("vmctl %s: exit %d\n got %q\nwant %q\n%s", strings.Join(tc.args, " "), code, out, tc.want, errs)
		}
	}
	// The YAML is the JSON's data.
	code, out, _ := s.run(t, s.user, "vm", "get", "vm-1", "-o", "yaml")
	var v map[string]any
	if code != exitOK || yaml.Unmarshal([]byte(out), &v) != nil || v["id"] != "vm-1" || v["memory_mb"] != 0 || v["allowed_actions"] == nil {
		t.Errorf("vm get -o yaml: exit %d:\n%s", code, out)
	}
	// A column the wire type does not have is a usage error naming those
	// it has; one it has but left out (omitempty) is null.
	if code, _, errs := s.run(t, s.user, "vm", "list", "-c", "nope"); code != exitUsage || !strings.Contains(errs, `unknown column "nope"; columns: id, name, account`) {
		t.Errorf("-c nope: exit %d %s", code, errs)
	}
	if code, out, _ := s.run(t, s.user, "vm", "get", "vm-2", "-o", "json", "-c", "task_state", "-c", "host_status"); code != exitOK ||
		!strings.Contains(out, `"host_status": null`) {
		t.Errorf("-c of a field left out: exit %d %s", code, out)
	}
}

func userKeyID(t *testing.T, key string) string {
	t.Helper()
	id, ok := gateway.ParseAPIKey(key)
	if !ok {
		t.Fatalf("%q is no API key", key)
	}
	return id
}
