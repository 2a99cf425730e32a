package vm

import (
	"cmp"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
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
	// Snapshots as resources (snapshot.go) and the recovery of a Deleted
	// VM (recover.go).
	ActRevertSnapshot = "RevertSnapshot"
	ActDeleteSnapshot = "DeleteSnapshot"
	ActRecover        = "Recover"
	// The volume actions (volumes.go).
	ActAttachVolume   = "AttachVolume"
	ActDetachVolume   = "DetachVolume"
	ActResizeVolume   = "ResizeVolume"
	ActSnapshotVolume = "SnapshotVolume"
	ActDeleteVolume   = "DeleteVolume"
	// ActHARestart is no command anyone sends: the processor starts it
	// itself (origin internal) for an HA VM found off.
	ActHARestart = "HARestart"
)

// action is one row of the action table: all the processor knows of one
// action, so that a new action is a row and its flow.
type action struct {
	// name is the record name of the command on vm.commands.v1 and the
	// JobType of its jobs.
	name string
	// params are the command's fields (by Avro name) that its job keeps
	// in JobState.Params; ",omitempty" leaves out an empty string.
	params []string
	// allowed is the action's place in the allowed list of each
	// stationary state that allows it with no job in flight (docs/design.md §5.2).
	allowed places
	// always: allowed in every state, with a job in flight too, and last
	// in every list.
	always bool
	flow   flow
	// sends is the agent command of each phase of the flow that sends
	// one; a Tick sends it again while the answer is due.
	sends sends
	// check, when set, refuses a command the state allows but the VM
	// cannot carry out (a snapshot it does not have): a reason and detail
	// for JobRejected, or "" to go on. It runs when the job would start.
	check func(s *schemas.VmRecord, cmd any) (reason, detail string)
	// plan is how many steps the job takes when all goes well, for the
	// progress its steps show ("done" of "total" in their obj: the steps
	// before each); 0 for a job whose length its outcome decides.
	plan int32
}

// places maps a stationary state to an action's place in the state's
// allowed list, 1 first. One order for all states cannot be had: a Stopped
// VM lists migrate before resize, an Active one after.
type places map[string]int

// sends maps a phase to the agent command it sends.
type sends map[string]agentCommand

// agentCommand builds an agent command of the running job from ac, which
// holds the common fields and, as HostID, the host the job waits on; the
// command goes to ac.HostID, which it may change.
type agentCommand func(t *tx, ac *schemas.AgentCommand) any

// actionTable is the action table, one row per action. init fills it: the
// flows call back into the job machinery, which looks actions up here, and
// Go refuses such a cycle in a variable's initializer.
var actionTable []action

func init() {
	actionTable = []action{
		{name: ActDeploy, flow: deployFlow(), sends: sends{phaseSpawning: startVm, phaseCleanup: forceStopVm}, plan: 4},
		{name: ActStart, params: []string{"host_id,omitempty"}, allowed: places{StateStopped: 1},
			flow: startFlow(), sends: sends{phaseStarting: startVm, phaseCleanup: forceStopVm}},
		{name: ActStop, params: []string{"force"}, allowed: places{StateActive: 2, StateResized: 4, StateRescued: 3},
			flow: stopFlow(), sends: sends{phaseStopping: stopVm}},
		{name: ActReboot, params: []string{"hard"}, allowed: places{StateActive: 1, StateResized: 3, StateRescued: 2},
			flow:  simple(simpleAction{task: TaskRebooting, step: "reboot", text: "rebooting the VM"}),
			sends: acting(rebootVm)},
		{name: ActPause, allowed: places{StateActive: 4, StateRescued: 5},
			flow: simple(simpleAction{task: TaskPausing, step: "pause", text: "pausing the VM",
				power: schemas.PowerPaused, end: StatePaused}),
			sends: acting(pauseVm)},
		{name: ActUnpause, allowed: places{StatePaused: 1},
			flow: simple(simpleAction{task: TaskUnpausing, step: "unpause", text: "unpausing the VM",
				power: schemas.PowerOn, end: StateActive}),
			sends: acting(unpauseVm)},
		{name: ActSuspend, allowed: places{StateActive: 5, StateRescued: 6},
			flow: simple(simpleAction{task: TaskSuspending, step: "suspend", text: "suspending the VM",
				power: schemas.PowerSusp, end: StateSuspended}),
			sends: acting(suspendVm)},
		{name: ActResume, allowed: places{StateSuspended: 1},
			flow: simple(simpleAction{task: TaskResuming, step: "resume", text: "resuming the VM",
				power: schemas.PowerOn, end: StateActive}),
			sends: acting(resumeVm)},
		{name: ActRescue, params: []string{"image"}, allowed: places{StateActive: 6, StatePaused: 2, StateSuspended: 2},
			flow: simple(simpleAction{task: TaskRescuing, step: "rescue", text: "booting the VM from a rescue image",
				power: schemas.PowerOn, end: StateRescued}),
			sends: acting(rescueVm)},
		{name: ActUnrescue, allowed: places{StateRescued: 1},
			flow: simple(simpleAction{task: TaskUnrescuing, step: "unrescue", text: "booting the VM from its own disk again",
				power: schemas.PowerOn, end: StateActive}),
			sends: acting(unrescueVm)},
		{name: ActRebuild, params: []string{"image"}, allowed: places{StateActive: 3, StateRescued: 4},
			flow: simple(simpleAction{task: TaskRebuilding, step: "rebuild", text: "rebuilding the VM's root disk",
				power: schemas.PowerOn, end: StateActive, done: rebuilt}),
			sends: acting(rebuildVm)},
		{name: ActSnapshot, params: []string{"snapshot_name"}, allowed: places{StateActive: 7},
			flow: snapshotFlow(), sends: acting(snapshotVm), check: snapshotNew},
		{name: ActRevertSnapshot, params: []string{"snapshot_name"}, allowed: places{StateStopped: 4},
			flow: simple(simpleAction{task: TaskRevertingSnapshot, step: "revert-snapshot",
				text: "reverting the VM's disk to a snapshot"}),
			sends: acting(revertSnapshotVm), check: snapshotRevertible},
		{name: ActDeleteSnapshot, params: []string{"snapshot_name"}, allowed: places{StateActive: 10, StateStopped: 5},
			flow: simple(simpleAction{task: TaskDeletingSnapshot, step: "delete-snapshot",
				text: "deleting a snapshot of the VM", done: snapshotDeleted}),
			sends: acting(deleteSnapshotVm), check: snapshotKnown},
		{name: ActMigrate, params: []string{"host_id,omitempty"}, allowed: places{StateActive: 9, StateStopped: 2},
			flow: migrateFlow(), sends: sends{phaseMigrating: migrateVm}},
		{name: ActResize, params: []string{"offering"}, allowed: places{StateActive: 8, StateStopped: 3},
			flow: resizeFlow(), sends: resizeSends},
		{name: ActConfirmResize, allowed: places{StateResized: 1}, flow: confirmResizeFlow()},
		{name: ActRevertResize, allowed: places{StateResized: 2}, flow: revertResizeFlow(), sends: resizeSends},
		{name: ActTerminate, always: true,
			flow: terminateFlow(), sends: sends{phaseStopping: forceStopVm, phaseDestroying: destroyVm}},
		{name: ActRecover, allowed: places{StateDeleted: 1}, flow: recoverFlow()},
		{name: ActAttachVolume, params: []string{"volume_id", "volume_name", "size_gb"}, allowed: places{StateActive: 11, StateStopped: 6},
			flow: attachVolumeFlow(), sends: acting(attachVolumeVm), check: attachCheck},
		{name: ActDetachVolume, params: []string{"volume_id"}, allowed: places{StateActive: 12, StateStopped: 7},
			flow: detachVolumeFlow(), sends: acting(detachVolumeVm), check: detachCheck},
		{name: ActResizeVolume, params: []string{"volume_id", "size_gb"}, allowed: places{StateActive: 13, StateStopped: 8},
			flow: resizeVolumeFlow(), sends: acting(resizeVolumeVm), check: resizeVolumeCheck},
		{name: ActSnapshotVolume, params: []string{"volume_id", "snapshot_name"}, allowed: places{StateActive: 14, StateStopped: 9},
			flow: snapshotVolumeFlow(), sends: acting(snapshotVolumeVm), check: snapshotVolumeCheck},
		{name: ActDeleteVolume, params: []string{"volume_id"}, allowed: places{StateActive: 15, StateStopped: 10},
			flow: deleteVolumeFlow(), sends: acting(deleteVolumeVm), check: deleteVolumeCheck},
		{name: ActHARestart, params: []string{"avoid,omitempty", "stop_for,omitempty"},
			flow: haRestartFlow(), sends: sends{phaseStopping: forceStopVm, phaseStarting: startVm, phaseCleanup: forceStopVm}},
	}
	actionByName, allowedIn, alwaysAllowed = index(actionTable)
}

// Lookups derived from actionTable by index.
var (
	actionByName map[string]*action
	// allowedIn is the allowed list of each state some row names, for a
	// VM with no job in flight.
	allowedIn map[string][]string
	// alwaysAllowed is what every state allows, with a job in flight
	// too, and all that any other state allows.
	alwaysAllowed []string
)

func index(table []action) (byName map[string]*action, allowed map[string][]string, always []string) {
	type placed struct {
		at   int
		name string
	}
	byName = map[string]*action{}
	lists := map[string][]placed{}
	for i := range table {
		a := &table[i]
		byName[a.name] = a
		for state, at := range a.allowed {
			lists[state] = append(lists[state], placed{at, a.name})
		}
		if a.always {
			always = append(always, a.name)
		}
	}
	allowed = map[string][]string{}
	for state, l := range lists {
		slices.SortFunc(l, func(x, y placed) int { return cmp.Compare(x.at, y.at) })
		names := make([]string, 0, len(l)+len(always))
		for _, p := range l {
			names = append(names, p.name)
		}
		allowed[state] = append(names, always...)
	}
	return byName, allowed, always
}

// flowOf returns the flow of a job type.
func flowOf(jobType string) flow {
	a, ok := actionByName[jobType]
	if !ok {
		// A job type is a row's name: commandOf and startHA start jobs
		// of rows only.
		panic("vm: no flow for " + jobType)
	}
	return a.flow
}

// jobParams reads the fields of command v that the row names into job
// parameters; nil when there are none.
func (a *action) jobParams(v any) map[string]string {
	var out map[string]string
	rv := reflect.Indirect(reflect.ValueOf(v))
	for _, p := range a.params {
		name, omitEmpty := strings.CutSuffix(p, ",omitempty")
		f, ok := schemas.AvroField(rv, name)
		if !ok {
			continue
		}
		var s string
		switch f.Kind() {
		case reflect.Bool:
			s = strconv.FormatBool(f.Bool())
		case reflect.String:
			s = f.String()
			if s == "" && omitEmpty {
				continue
			}
		default:
			b, err := json.Marshal(f.Interface())
			if err != nil {
				continue
			}
			s = string(b)
		}
		if out == nil {
			out = map[string]string{}
		}
		out[name] = s
	}
	return out
}

// Allowed returns the actions a VM in vmState with taskState allows, as
// record names. Terminate is always allowed; with a job in flight it is the
// only one.
func Allowed(vmState, taskState string) []string {
	if taskState != "" {
		return alwaysAllowed
	}
	if a, ok := allowedIn[vmState]; ok {
		return a
	}
	return alwaysAllowed
}

// IsAllowed reports whether action is allowed in the given states.
func IsAllowed(action, vmState, taskState string) bool {
	return slices.Contains(Allowed(vmState, taskState), action)
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

// commandOf returns the row and the common fields of a command of
// vm.commands.v1, or ok false for any other record.
func commandOf(v any) (a *action, c schemas.VmCommand, ok bool) {
	cmd, isCommand := v.(schemas.VmCommandRecord)
	if !isCommand {
		return nil, schemas.VmCommand{}, false
	}
	if a, ok = actionByName[schemas.TypeName(v)]; !ok {
		return nil, schemas.VmCommand{}, false
	}
	return a, *cmd.Common(), true
}
