package schemas

import (
	"reflect"
	"strings"
	"testing"

	"github.com/vmplane/vmplane/schemas/actions"
)

// TestActionsAreCommands holds the catalog of schemas/actions to the
// topic table and the record types: every action is a command of
// vm.commands.v1, every command there but Deploy is an action, and every
// parameter is a field of the command of the type its kind says.
func TestActionsAreCommands(t *testing.T) {
	kindType := map[string]reflect.Type{
		actions.KindBool:     reflect.TypeFor[bool](),
		actions.KindString:   reflect.TypeFor[string](),
		actions.KindOffering: reflect.TypeFor[Offering](),
		actions.KindInt:      reflect.TypeFor[int64](),
	}
	spec, _ := TopicByName(TopicVmCommands)
	commands := map[string]bool{}
	for _, a := range actions.Catalog {
		commands[a.Command] = true
		if !spec.Carries(a.Command) {
			t.Errorf("action %s: %s is no command of %s", a.Name, a.Command, TopicVmCommands)
		}
		v, ok := New(a.Command)
		if !ok {
			t.Fatalf("action %s: no record %s", a.Name, a.Command)
		}
		if _, ok := v.(VmCommandRecord); !ok {
			t.Errorf("action %s: %s does not embed VmCommand", a.Name, a.Command)
		}
		for _, p := range a.Params {
			f, ok := fieldByAvroName(reflect.TypeOf(v).Elem(), p.Name)
			if !ok {
				t.Errorf("action %s: %s has no field %s", a.Name, a.Command, p.Name)
				continue
			}
			if want := kindType[p.Kind]; f.typ != want {
				t.Errorf("action %s: parameter %s of kind %q is a %s field", a.Name, p.Name, p.Kind, f.typ)
			}
		}
	}
	for _, c := range spec.Types {
		// A deploy has a route of its own; a CancelJob acts on a job, not
		// on a VM, and is no job itself.
		if c != "Deploy" && c != "CancelJob" && !commands[c] {
			t.Errorf("command %s of %s is no action of the catalog", c, TopicVmCommands)
		}
	}
}

func TestNewVmCommand(t *testing.T) {
	c := VmCommand{CommandID: "c1", VmID: "vm1", Account: "acme", Origin: OriginAPI, IssuedAt: 7}
	off := Offering{ID: "off-2", Name: "medium", CPU: 2, MemoryMB: 2048}
	tests := []struct {
		action string
		args   map[string]any
		want   any
		err    string
	}{
		{"stop", map[string]any{"force": true}, &Stop{VmCommand: c, Force: true}, ""},
		{"stop", nil, &Stop{VmCommand: c}, ""},
		{"start", map[string]any{"host_id": "h2"}, &Start{VmCommand: c, HostID: "h2"}, ""},
		{"snapshot", map[string]any{"snapshot_name": "nightly"}, &Snapshot{VmCommand: c, SnapshotName: "nightly"}, ""},
		{"resize", map[string]any{"offering": off}, &Resize{VmCommand: c, Offering: off}, ""},
		{"confirm_resize", map[string]any{}, &ConfirmResize{VmCommand: c}, ""},
		{"pause", map[string]any{"force": true}, nil, `takes no parameter "force"`},
		{"stop", map[string]any{"force": "yes"}, nil, `parameter "force" is string, want bool`},
		{"resize", map[string]any{"offering": "medium"}, nil, `parameter "offering" is string`},
		{"reboot", map[string]any{"hard": nil}, nil, `parameter "hard" is <nil>`},
	}
	for _, tt := range tests {
		a, ok := actions.ByName(tt.action)
		if !ok {
			t.Fatalf("no action %s", tt.action)
		}
		got, err := NewVmCommand(a, c, tt.args)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s %v: error %v, want %q", tt.action, tt.args, err, tt.err)
		case tt.err == "" && err != nil:
			t.Errorf("%s %v: %v", tt.action, tt.args, err)
		case tt.err == "" && !reflect.DeepEqual(got, tt.want):
			t.Errorf("%s %v = %#v, want %#v", tt.action, tt.args, got, tt.want)
		}
	}
}

// Every action builds a command that encodes.
func TestEveryActionEncodes(t *testing.T) {
	c := VmCommand{CommandID: "c1", VmID: "vm1", Account: "acme", Origin: OriginAPI}
	for _, a := range actions.Catalog {
		v, err := NewVmCommand(a, c, nil)
		if err != nil {
			t.Fatalf("%s: %v", a.Name, err)
		}
		if TypeName(v) != a.Command || *v.Common() != c {
			t.Errorf("%s built %T with %+v", a.Name, v, *v.Common())
		}
		if _, err := Marshal(v); err != nil {
			t.Errorf("%s: %v", a.Name, err)
		}
	}
}
