package vm

import (
	"slices"
	"testing"

	"github.com/vmplane/vmplane/schemas"
)

func TestAllowedActions(t *testing.T) {
	tests := []struct {
		vm, task string
		want     []string
	}{
		{StateActive, "", []string{"reboot", "stop", "rebuild", "pause", "suspend", "rescue", "snapshot", "resize", "migrate", "terminate"}},
		{StateResized, "", []string{"confirm_resize", "revert_resize", "reboot", "stop", "terminate"}},
		{StateStopped, "", []string{"start", "migrate", "resize", "terminate"}},
		{StatePaused, "", []string{"unpause", "rescue", "terminate"}},
		{StateSuspended, "", []string{"resume", "rescue", "terminate"}},
		{StateRescued, "", []string{"unrescue", "reboot", "stop", "rebuild", "pause", "suspend", "terminate"}},
		{StateBuilding, "", []string{"terminate"}},
		{StateError, "", []string{"terminate"}},
		{StateDeleted, "", []string{"terminate"}},
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

func TestTerminateAlwaysAllowed(t *testing.T) {
	for vm := range actionTable {
		for _, task := range []string{"", TaskSpawning, TaskDeleting} {
			if !IsAllowed(ActTerminate, vm, task) {
				t.Errorf("terminate not allowed in %s/%q", vm, task)
			}
		}
	}
}

// Every action of the table is a command the topic carries, so the table
// cannot name an action that has no record.
func TestTableNamesCommands(t *testing.T) {
	spec, _ := schemas.TopicByName(schemas.TopicVmCommands)
	for vm, actions := range actionTable {
		for _, a := range actions {
			if !spec.Carries(a) {
				t.Errorf("%s allows %s, which is no command", vm, a)
			}
			v, ok := schemas.New(a)
			if !ok {
				t.Fatalf("no record %s", a)
			}
			if name, _, ok := commandOf(v); !ok || name != a {
				t.Errorf("commandOf(%s) = %q, %v", a, name, ok)
			}
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
