package vm

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/vmplane/vmplane/schemas"
	"github.com/vmplane/vmplane/schemas/actions"
)

func TestAllowedActions(t *testing.T) {
	tests := []struct {
		vm, task string
		want     []string
	}{
		{StateActive, "", []string{"reboot", "stop", "rebuild", "pause", "suspend", "rescue", "snapshot", "resize", "migrate",
			"delete_snapshot", "attach_volume", "detach_volume", "resize_volume", "snapshot_volume", "delete_volume", "terminate"}},
		{StateResized, "", []string{"confirm_resize", "revert_resize", "reboot", "stop", "terminate"}},
		{StateStopped, "", []string{"start", "migrate", "resize", "revert_snapshot", "delete_snapshot",
			"attach_volume", "detach_volume", "resize_volume", "snapshot_volume", "delete_volume", "terminate"}},
		{StatePaused, "", []string{"unpause", "rescue", "terminate"}},
		{StateSuspended, "", []string{"resume", "rescue", "terminate"}},
		{StateRescued, "", []string{"unrescue", "reboot", "stop", "rebuild", "pause", "suspend", "terminate"}},
		{StateBuilding, "", []string{"terminate"}},
		{StateError, "", []string{"terminate"}},
		{StateDeleted, "", []string{"recover", "terminate"}},
		{"NoSuchState", "", []string{"terminate"}},
		// A job in flight allows Terminate only, whatever the state.
		{StateActive, TaskStopping, []string{"terminate"}},
		{StateStopped, TaskScheduling, []string{"terminate"}},
	}
	for _, tt := range tests {
		if got := AllowedActions(tt.vm, tt.task); !slices.Equal(got, tt.want) {
			t.Errorf("AllowedActions(%q, %q) = %v, want %v", tt.vm, tt.task, got, tt.want)
		}
	}
}

// stationaryStates are the vm_states a VM rests in between jobs.
var stationaryStates = []string{StateBuilding, StateActive, StateResized, StateStopped, StatePaused, StateSuspended,
	StateRescued, StateError, StateDeleted}

func TestTerminateAlwaysAllowed(t *testing.T) {
	for _, vm := range stationaryStates {
		for _, task := range []string{"", TaskSpawning, TaskDeleting} {
			if !IsAllowed(ActTerminate, vm, task) {
				t.Errorf("terminate not allowed in %s/%q", vm, task)
			}
		}
	}
}

// The places of a state's actions number its list from 1 with no gap and
// no tie, so that no two rows claim one place and the order is the rows'.
func TestPlacesNumberEachList(t *testing.T) {
	seen := map[string]map[int]string{}
	for _, a := range actionTable {
		for state, at := range a.allowed {
			if !slices.Contains(stationaryStates, state) {
				t.Errorf("%s is allowed in %s, no stationary state", a.name, state)
			}
			if seen[state] == nil {
				seen[state] = map[int]string{}
			}
			if other, ok := seen[state][at]; ok {
				t.Errorf("%s and %s both take place %d in %s", other, a.name, at, state)
			}
			seen[state][at] = a.name
		}
	}
	for state, at := range seen {
		for i := 1; i <= len(at); i++ {
			if _, ok := at[i]; !ok {
				t.Errorf("%s lists %d actions but none at place %d", state, len(at), i)
			}
		}
	}
}

// Every command the topic carries but CancelJob (no job, no row:
// cancel.go) has a row that commandOf finds, and every row but the
// internal HARestart is such a command.
func TestTableNamesCommands(t *testing.T) {
	spec, _ := schemas.TopicByName(schemas.TopicVmCommands)
	for _, name := range spec.Types {
		if name == "CancelJob" {
			if _, _, ok := commandOf(&schemas.CancelJob{}); ok {
				t.Errorf("a CancelJob has a row")
			}
			continue
		}
		v, ok := schemas.New(name)
		if !ok {
			t.Fatalf("no record %s", name)
		}
		if a, _, ok := commandOf(v); !ok || a.name != name {
			t.Errorf("commandOf(%s) = %v, %v", name, a, ok)
		}
	}
	for _, a := range actionTable {
		if a.name != ActHARestart && !spec.Carries(a.name) {
			t.Errorf("row %s is no command", a.name)
		}
		// ConfirmResize and Recover end where they start: nothing to wait for.
		endsAtStart := a.name == ActConfirmResize || a.name == ActRecover
		if a.flow.start == nil || a.flow.advance == nil && !endsAtStart {
			t.Errorf("row %s has no flow", a.name)
		}
	}
	if _, _, ok := commandOf(&schemas.PowerReport{}); ok {
		t.Errorf("a power report is a command")
	}
}

// The table and the contract's catalog of actions agree: every action the
// API takes has a row under the same name, allowed somewhere, keeping the
// command's parameters, and every row a caller may send is in the catalog.
func TestTableMatchesTheCatalog(t *testing.T) {
	for _, c := range actions.Catalog {
		a, ok := actionByName[c.Command]
		if !ok {
			t.Errorf("catalog action %s has no row", c.Name)
			continue
		}
		if Snake(a.name) != c.Name {
			t.Errorf("row %s is %s in the API, the catalog says %s", a.name, Snake(a.name), c.Name)
		}
		if len(a.allowed) == 0 && !a.always {
			t.Errorf("row %s is allowed nowhere", a.name)
		}
		var kept []string
		for _, p := range a.params {
			name, _, _ := strings.Cut(p, ",")
			kept = append(kept, name)
		}
		var want []string
		for _, p := range c.Params {
			want = append(want, p.Name)
		}
		if !slices.Equal(kept, want) {
			t.Errorf("row %s keeps parameters %v, the catalog has %v", a.name, kept, want)
		}
	}
	for _, a := range actionTable {
		_, ok := actions.ByName(Snake(a.name))
		if api := len(a.allowed) > 0 || a.always; api != ok {
			t.Errorf("row %s: allowed somewhere %v, in the catalog %v", a.name, api, ok)
		}
	}
}

func TestJobParams(t *testing.T) {
	off := schemas.Offering{Name: "big", CPU: 4}
	offJSON, _ := json.Marshal(off)
	tests := []struct {
		v    any
		want map[string]string
	}{
		{&schemas.Stop{}, map[string]string{"force": "false"}},
		{&schemas.Reboot{Hard: true}, map[string]string{"hard": "true"}},
		{&schemas.Start{}, nil},
		{&schemas.Start{HostID: "h2"}, map[string]string{"host_id": "h2"}},
		{&schemas.Rescue{}, map[string]string{"image": ""}},
		{&schemas.Snapshot{SnapshotName: "n"}, map[string]string{"snapshot_name": "n"}},
		{&schemas.Resize{Offering: off}, map[string]string{paramOffering: string(offJSON)}},
		{&schemas.Pause{}, nil},
		{&haRequest{}, nil},
		{&haRequest{Avoid: "h1"}, map[string]string{"avoid": "h1"}},
	}
	for _, tt := range tests {
		name := schemas.TypeName(tt.v)
		if _, ok := tt.v.(*haRequest); ok {
			name = ActHARestart
		}
		if got := actionByName[name].jobParams(tt.v); !maps.Equal(got, tt.want) || (got == nil) != (tt.want == nil) {
			t.Errorf("jobParams(%#v) = %v, want %v", tt.v, got, tt.want)
		}
	}
}

func TestSnake(t *testing.T) {
	for in, want := range map[string]string{"Stop": "stop", "ConfirmResize": "confirm_resize", "RevertResize": "revert_resize", "": ""} {
		if got := Snake(in); got != want {
			t.Errorf("Snake(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLegacyState(t *testing.T) {
	on, off, unk := schemas.PowerOn, schemas.PowerOff, schemas.PowerUnknown
	tests := []struct{ vm, task, power, want string }{
		{StateBuilding, TaskScheduling, unk, "Starting"},
		{StateBuilding, TaskSpawning, unk, "Starting"},
		{StateStopped, TaskStarting, off, "Starting"},
		{StateActive, "", on, "Running"},
		{StateActive, "", unk, "Unknown"},
		{StateResized, "", on, "Running"},
		{StateRescued, "", on, "Running"},
		{StatePaused, "", schemas.PowerPaused, "Running"},
		{StateActive, TaskStopping, on, "Stopping"},
		{StateStopped, "", off, "Stopped"},
		{StateSuspended, "", schemas.PowerSusp, "Stopped"},
		{StateActive, TaskMigrating, on, "Migrating"},
		{StateActive, TaskRebooting, on, "Running"},
		{StateStopped, TaskSnapshotting, off, "Stopped"},
		{StateActive, TaskDeleting, on, "Stopping"},
		{StateStopped, TaskDeleting, off, "Destroyed"},
		{StateDeleted, "", off, "Destroyed"},
		{StateExpunged, "", off, "Expunging"},
		{StateError, "", unk, "Error"},
		{"", "", "", "Unknown"},
	}
	for _, tt := range tests {
		if got := LegacyState(tt.vm, tt.task, tt.power); got != tt.want {
			t.Errorf("LegacyState(%q, %q, %q) = %q, want %q", tt.vm, tt.task, tt.power, got, tt.want)
		}
	}
}

func TestConfigDefaults(t *testing.T) {
	got := New(Config{StallThreshold: 5}).Config()
	want := DefaultConfig()
	want.StallThreshold = 5
	if got != want {
		t.Errorf("New(partial).Config() = %+v, want %+v", got, want)
	}
}
