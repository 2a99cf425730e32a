package schemas

import (
	"fmt"
	"reflect"
	"sort"
)

// VmAction is one action on an existing VM, as the API takes it (POST
// /v1/vms/{id}/actions) and vmctl offers it (vmctl vm NAME ID): the name the
// API and allowed_actions use, the command it becomes on vm.commands.v1 and
// the parameters it takes. The catalog is the vocabulary the gateway
// validates against and builds commands from, and that vmctl makes its
// verbs and flags of; which states allow an action, and what its job does,
// the VM processor decides (docs/design.md §5.2), and a test there holds
// its action table to this catalog.
type VmAction struct {
	// Name is the record name in lower snake case: confirm_resize.
	Name string
	// Command is the record name of the command on vm.commands.v1.
	Command string
	Params  []ActionParam
	// Doc says in a few words what the action does.
	Doc string
}

// ActionParam is a parameter of an action: a field of the API's request
// and of the command record, by the same name.
type ActionParam struct {
	// Name is the JSON field of the request and the Avro field of the
	// command.
	Name string
	// Kind is ParamBool, ParamString or ParamOffering.
	Kind string
	// Required: the action is refused without a non-empty value.
	Required bool
	// Flag is vmctl's flag for it, without the dashes.
	Flag string
	Doc  string
}

// Kinds of action parameters: what the request carries and what the
// command's field holds.
const (
	// ParamBool is a JSON boolean into a bool field.
	ParamBool = "bool"
	// ParamString is a JSON string into a string field.
	ParamString = "string"
	// ParamOffering is an offering's name or id in the request; the
	// gateway looks it up in the catalog and the command carries the
	// Offering itself.
	ParamOffering = "offering"
)

// VmActions is the catalog of VM actions, in the order usage texts list
// them. Deploy is no action here: it makes a VM (POST /v1/vms) rather than
// act on one.
var VmActions = []VmAction{
	{Name: "start", Command: "Start", Doc: "power on a Stopped VM", Params: []ActionParam{
		{Name: "host_id", Kind: ParamString, Flag: "host", Doc: "host to start on; empty lets placement choose"}}},
	{Name: "stop", Command: "Stop", Doc: "power off a VM", Params: []ActionParam{
		{Name: "force", Kind: ParamBool, Flag: "force", Doc: "power off at once instead of a guest shutdown"}}},
	{Name: "reboot", Command: "Reboot", Doc: "restart a running VM", Params: []ActionParam{
		{Name: "hard", Kind: ParamBool, Flag: "hard", Doc: "reset instead of a guest reboot"}}},
	{Name: "pause", Command: "Pause", Doc: "freeze a running VM in memory"},
	{Name: "unpause", Command: "Unpause", Doc: "resume a Paused VM"},
	{Name: "suspend", Command: "Suspend", Doc: "save a running VM to disk and stop it"},
	{Name: "resume", Command: "Resume", Doc: "restore a Suspended VM"},
	{Name: "rescue", Command: "Rescue", Doc: "boot a VM from a rescue image", Params: []ActionParam{
		{Name: "image", Kind: ParamString, Flag: "image", Doc: "rescue image; empty for the default"}}},
	{Name: "unrescue", Command: "Unrescue", Doc: "return a Rescued VM to its own disk"},
	{Name: "rebuild", Command: "Rebuild", Doc: "reinstall a VM's root disk", Params: []ActionParam{
		{Name: "image", Kind: ParamString, Flag: "image", Doc: "image to rebuild from; empty for the VM's own"}}},
	{Name: "snapshot", Command: "Snapshot", Doc: "take a disk snapshot of a VM", Params: []ActionParam{
		{Name: "snapshot_name", Kind: ParamString, Flag: "name", Doc: "snapshot name"}}},
	{Name: "migrate", Command: "Migrate", Doc: "move a VM to another host", Params: []ActionParam{
		{Name: "host_id", Kind: ParamString, Flag: "host", Doc: "destination host; empty lets placement choose"}}},
	{Name: "resize", Command: "Resize", Doc: "change a VM's offering", Params: []ActionParam{
		{Name: "offering", Kind: ParamOffering, Required: true, Flag: "offering", Doc: "new offering, name or id"}}},
	{Name: "confirm_resize", Command: "ConfirmResize", Doc: "keep a Resized VM's new size"},
	{Name: "revert_resize", Command: "RevertResize", Doc: "restore a Resized VM's old size"},
	{Name: "terminate", Command: "Terminate", Doc: "delete a VM; always allowed"},
}

// VmActionByName returns the action of an API name.
func VmActionByName(name string) (VmAction, bool) {
	for _, a := range VmActions {
		if a.Name == name {
			return a, true
		}
	}
	return VmAction{}, false
}

// VmActionNames returns the API names of the actions, sorted.
func VmActionNames() []string {
	names := make([]string, len(VmActions))
	for i, a := range VmActions {
		names[i] = a.Name
	}
	sort.Strings(names)
	return names
}

// Param returns the parameter of the action named name.
func (a VmAction) Param(name string) (ActionParam, bool) {
	for _, p := range a.Params {
		if p.Name == name {
			return p, true
		}
	}
	return ActionParam{}, false
}

// NewCommand returns the action's command record with the common fields c
// and the parameters in args, by name: a bool for ParamBool, a string for
// ParamString, an Offering for ParamOffering. A parameter left out keeps
// its zero value. An argument the action does not take, or of another
// type, is an error.
func (a VmAction) NewCommand(c VmCommand, args map[string]any) (VmCommandRecord, error) {
	v, ok := New(a.Command)
	if !ok {
		return nil, fmt.Errorf("action %s: no record %s", a.Name, a.Command)
	}
	cmd, ok := v.(VmCommandRecord)
	if !ok {
		return nil, fmt.Errorf("action %s: %s is no VM command", a.Name, a.Command)
	}
	*cmd.Common() = c
	rv := reflect.ValueOf(v).Elem()
	for name, arg := range args {
		if _, ok := a.Param(name); !ok {
			return nil, fmt.Errorf("action %s takes no parameter %q", a.Name, name)
		}
		f, ok := fieldByAvroName(rv.Type(), name)
		if !ok {
			return nil, fmt.Errorf("action %s: %s has no field %q", a.Name, a.Command, name)
		}
		av := reflect.ValueOf(arg)
		if !av.IsValid() || av.Type() != f.typ {
			return nil, fmt.Errorf("action %s: parameter %q is %T, want %s", a.Name, name, arg, f.typ)
		}
		rv.FieldByIndex(f.index).Set(av)
	}
	return cmd, nil
}

func fieldByAvroName(t reflect.Type, name string) (field, bool) {
	for _, f := range fieldsOf(t) {
		if f.name == name {
			return f, true
		}
	}
	return field{}, false
}

// VmCommandRecord is a pointer to any command of vm.commands.v1.
type VmCommandRecord interface {
	// Common returns the fields every command carries.
	Common() *VmCommand
}

// Common returns c itself. Every command type embeds VmCommand and so has
// it, which lets a reader reach the common fields of any command without a
// switch over the command types.
func (c *VmCommand) Common() *VmCommand { return c }
