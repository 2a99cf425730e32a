package vm

import (
	"strings"

	"github.com/vmplane/vmplane/schemas"
)

// Action names are the record names of the commands on vm.commands.v1.
const (
	ActDeploy        = "Deploy"
	ActStart         = "Start"
	ActStop          = "Stop"
	ActReboot        = "Reboot"
	ActPause         = "Pause"
	ActUnpause       = "Unpause"
	ActSuspend       = "Suspend"
	ActResume        = "Resume"
	ActRescue        = "Rescue"
	ActUnrescue      = "Unrescue"
	ActRebuild       = "Rebuild"
	ActSnapshot      = "Snapshot"
	ActMigrate       = "Migrate"
	ActResize        = "Resize"
	ActConfirmResize = "ConfirmResize"
	ActRevertResize  = "RevertResize"
	ActTerminate     = "Terminate"
	// ActHARestart is no command anyone sends: the processor starts it
	// itself (origin internal) for an HA VM found off.
	ActHARestart = "HARestart"
)

// actionTable is DESIGN §5.2: the actions a VM allows in each stationary
// state when no job is in flight. It is the only place the rule lives;
// VmStateChanged carries its answer to the read model and the API.
var actionTable = map[string][]string{
	StateActive:    {ActReboot, ActStop, ActRebuild, ActPause, ActSuspend, ActRescue, ActSnapshot, ActResize, ActMigrate, ActTerminate},
	StateResized:   {ActConfirmResize, ActRevertResize, ActReboot, ActStop, ActTerminate},
	StateStopped:   {ActStart, ActMigrate, ActResize, ActTerminate},
	StatePaused:    {ActUnpause, ActRescue, ActTerminate},
	StateSuspended: {ActResume, ActRescue, ActTerminate},
	StateRescued:   {ActUnrescue, ActReboot, ActStop, ActRebuild, ActPause, ActSuspend, ActTerminate},
	StateBuilding:  {ActTerminate},
	StateError:     {ActTerminate},
	StateDeleted:   {ActTerminate},
}

// Allowed returns the actions a VM in vmState with taskState allows, as
// record names. Terminate is always allowed; with a job in flight it is the
// only one.
func Allowed(vmState, taskState string) []string {
	if taskState != "" {
		return []string{ActTerminate}
	}
	if a, ok := actionTable[vmState]; ok {
		return a
	}
	return []string{ActTerminate}
}

// IsAllowed reports whether action is allowed in the given states.
func IsAllowed(action, vmState, taskState string) bool {
	for _, a := range Allowed(vmState, taskState) {
		if a == action {
			return true
		}
	}
	return false
}

// AllowedActions returns Allowed in lower snake case (confirm_resize), the
// form events and the API carry.
func AllowedActions(vmState, taskState string) []string {
	a := Allowed(vmState, taskState)
	out := make([]string, len(a))
	for i, n := range a {
		out[i] = Snake(n)
	}
	return out
}

// Snake turns a record name into lower snake case: ConfirmResize → confirm_resize.
func Snake(name string) string {
	var b strings.Builder
	for i, r := range name {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// LegacyState derives CloudStack's VM state from the three axes, for API
// compatibility: Starting, Running, Stopping, Stopped, Migrating, Destroyed,
// Expunging, Error or Unknown.
func LegacyState(vmState, taskState, powerState string) string {
	switch taskState {
	case TaskScheduling, TaskNetworking, TaskBlockDeviceMapping, TaskSpawning, TaskStarting:
		return "Starting"
	case TaskStopping:
		return "Stopping"
	case TaskMigrating:
		return "Migrating"
	case TaskDeleting:
		if powerState == schemas.PowerOn {
			return "Stopping"
		}
		return "Destroyed"
	case "":
	default:
		// Reboot, pause, rescue, snapshot...: CloudStack keeps the VM in its
		// running or stopped state while such work is done.
		if powerState == schemas.PowerOff || vmState == StateStopped {
			return "Stopped"
		}
		return "Running"
	}
	switch vmState {
	case StateActive, StateResized, StateRescued, StatePaused:
		if powerState == schemas.PowerUnknown {
			return "Unknown"
		}
		return "Running"
	case StateStopped, StateSuspended:
		return "Stopped"
	case StateBuilding:
		return "Starting"
	case StateError:
		return "Error"
	case StateDeleted:
		return "Destroyed"
	case StateExpunged:
		return "Expunging"
	}
	return "Unknown"
}

// commandOf returns the action name and common fields of a vm.commands.v1
// value, or ok false for anything else.
func commandOf(v any) (action string, c schemas.VmCommand, ok bool) {
	switch x := v.(type) {
	case *schemas.Deploy:
		return ActDeploy, x.VmCommand, true
	case *schemas.Start:
		return ActStart, x.VmCommand, true
	case *schemas.Stop:
		return ActStop, x.VmCommand, true
	case *schemas.Reboot:
		return ActReboot, x.VmCommand, true
	case *schemas.Pause:
		return ActPause, x.VmCommand, true
	case *schemas.Unpause:
		return ActUnpause, x.VmCommand, true
	case *schemas.Suspend:
		return ActSuspend, x.VmCommand, true
	case *schemas.Resume:
		return ActResume, x.VmCommand, true
	case *schemas.Rescue:
		return ActRescue, x.VmCommand, true
	case *schemas.Unrescue:
		return ActUnrescue, x.VmCommand, true
	case *schemas.Rebuild:
		return ActRebuild, x.VmCommand, true
	case *schemas.Snapshot:
		return ActSnapshot, x.VmCommand, true
	case *schemas.Migrate:
		return ActMigrate, x.VmCommand, true
	case *schemas.Resize:
		return ActResize, x.VmCommand, true
	case *schemas.ConfirmResize:
		return ActConfirmResize, x.VmCommand, true
	case *schemas.RevertResize:
		return ActRevertResize, x.VmCommand, true
	case *schemas.Terminate:
		return ActTerminate, x.VmCommand, true
	}
	return "", schemas.VmCommand{}, false
}
