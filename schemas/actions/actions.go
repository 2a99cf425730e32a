// Package actions is the catalog of the actions on an existing VM, as the
// API takes them (POST /v1/vms/{id}/actions) and vmctl offers them (vmctl
// vm NAME ID): for each, the name the API and allowed_actions use, the
// command it becomes on vm.commands.v1 and the parameters it takes. The
// gateway validates requests against it and builds their commands from it
// (schemas.NewVmCommand); vmctl makes its verbs, flags and usage of it.
// Which states allow an action, and what its job does, the VM processor
// decides (docs/design.md §5.2); tests hold its action table, and the
// record types, to this catalog.
//
// It is data and pure functions, and imports only the standard library, so
// that a client reads the catalog without schemas' codecs, whose set-up
// costs a process tens of milliseconds at start.
package actions

import "sort"

// Action is one VM action.
type Action struct {
	// Name is the command's record name in lower snake case:
	// confirm_resize.
	Name string
	// Command is the record name of the command on vm.commands.v1.
	Command string
	// Doc says in a few words what the action does.
	Doc    string
	Params []Param
}

// Param is a parameter of an action: a field of the API's request and of
// the command record, by the same name.
type Param struct {
	// Name is the JSON field of the request and the Avro field of the
	// command.
	Name string
	// Kind is KindBool, KindString, KindOffering or KindInt.
	Kind string
	// Required: the action is refused without a non-empty value.
	Required bool
	// Flag is vmctl's flag for it, without the dashes.
	Flag string
	Doc  string
}

// Kinds of parameters: what the request carries and what the command's
// field holds.
const (
	// KindBool is a JSON boolean into a bool field.
	KindBool = "bool"
	// KindString is a JSON string into a string field.
	KindString = "string"
	// KindOffering is an offering's name or id in the request; the gateway
	// looks it up and the command carries the schemas.Offering itself.
	KindOffering = "offering"
	// KindInt is a JSON integer into an int64 field.
	KindInt = "int"
)

// Catalog is every VM action, in the order usage texts list them. Deploy is
// no action here: it makes a VM (POST /v1/vms) rather than act on one.
var Catalog = []Action{
	{Name: "start", Command: "Start", Doc: "power on a Stopped VM", Params: []Param{
		{Name: "host_id", Kind: KindString, Flag: "host", Doc: "host to start on; empty lets placement choose"}}},
	{Name: "stop", Command: "Stop", Doc: "power off a VM", Params: []Param{
		{Name: "force", Kind: KindBool, Flag: "force", Doc: "power off at once instead of a guest shutdown"}}},
	{Name: "reboot", Command: "Reboot", Doc: "restart a running VM", Params: []Param{
		{Name: "hard", Kind: KindBool, Flag: "hard", Doc: "reset instead of a guest reboot"}}},
	{Name: "pause", Command: "Pause", Doc: "freeze a running VM in memory"},
	{Name: "unpause", Command: "Unpause", Doc: "resume a Paused VM"},
	{Name: "suspend", Command: "Suspend", Doc: "save a running VM to disk and stop it"},
	{Name: "resume", Command: "Resume", Doc: "restore a Suspended VM"},
	{Name: "rescue", Command: "Rescue", Doc: "boot a VM from a rescue image", Params: []Param{
		{Name: "image", Kind: KindString, Flag: "image", Doc: "rescue image; empty for the default"}}},
	{Name: "unrescue", Command: "Unrescue", Doc: "return a Rescued VM to its own disk"},
	{Name: "rebuild", Command: "Rebuild", Doc: "reinstall a VM's root disk", Params: []Param{
		{Name: "image", Kind: KindString, Flag: "image", Doc: "image to rebuild from; empty for the VM's own"}}},
	{Name: "snapshot", Command: "Snapshot", Doc: "take a disk snapshot of a VM", Params: []Param{
		{Name: "snapshot_name", Kind: KindString, Flag: "name", Doc: "snapshot name, unique per VM; empty names it by its job id"}}},
	{Name: "revert_snapshot", Command: "RevertSnapshot", Doc: "return a Stopped VM's disk to a snapshot", Params: []Param{
		{Name: "snapshot_name", Kind: KindString, Required: true, Flag: "name", Doc: "snapshot name"}}},
	{Name: "delete_snapshot", Command: "DeleteSnapshot", Doc: "delete a VM's snapshot", Params: []Param{
		{Name: "snapshot_name", Kind: KindString, Required: true, Flag: "name", Doc: "snapshot name"}}},
	{Name: "migrate", Command: "Migrate", Doc: "move a VM to another host", Params: []Param{
		{Name: "host_id", Kind: KindString, Flag: "host", Doc: "destination host; empty lets placement choose"}}},
	{Name: "resize", Command: "Resize", Doc: "change a VM's offering", Params: []Param{
		{Name: "offering", Kind: KindOffering, Required: true, Flag: "offering", Doc: "new offering, name or id"}}},
	{Name: "confirm_resize", Command: "ConfirmResize", Doc: "keep a Resized VM's new size"},
	{Name: "revert_resize", Command: "RevertResize", Doc: "restore a Resized VM's old size"},
	{Name: "terminate", Command: "Terminate", Doc: "delete a VM; always allowed"},
	{Name: "recover", Command: "Recover", Doc: "bring a Deleted VM back, Stopped, before it is expunged"},
	{Name: "attach_volume", Command: "AttachVolume", Doc: "give a VM a data volume, new or its own detached one", Params: []Param{
		{Name: "volume_id", Kind: KindString, Flag: "volume", Doc: "a detached volume of the VM to attach again; empty for a new volume"},
		{Name: "volume_name", Kind: KindString, Flag: "name", Doc: "name of a new volume"},
		{Name: "size_gb", Kind: KindInt, Flag: "size", Doc: "size of a new volume, GiB"}}},
	{Name: "detach_volume", Command: "DetachVolume", Doc: "take a data volume off its VM, keeping it", Params: []Param{
		{Name: "volume_id", Kind: KindString, Required: true, Flag: "volume", Doc: "volume to detach"}}},
	{Name: "resize_volume", Command: "ResizeVolume", Doc: "grow a volume of a VM", Params: []Param{
		{Name: "volume_id", Kind: KindString, Required: true, Flag: "volume", Doc: "volume to grow"},
		{Name: "size_gb", Kind: KindInt, Required: true, Flag: "size", Doc: "new size, GiB"}}},
	{Name: "snapshot_volume", Command: "SnapshotVolume", Doc: "take a snapshot of one volume", Params: []Param{
		{Name: "volume_id", Kind: KindString, Required: true, Flag: "volume", Doc: "volume"},
		{Name: "snapshot_name", Kind: KindString, Flag: "name", Doc: "snapshot name, unique per volume; empty names it by its job id"}}},
	{Name: "delete_volume", Command: "DeleteVolume", Doc: "remove a detached data volume and free its pool", Params: []Param{
		{Name: "volume_id", Kind: KindString, Required: true, Flag: "volume", Doc: "detached volume to delete"}}},
}

// ByName returns the action of an API name.
func ByName(name string) (Action, bool) {
	for _, a := range Catalog {
		if a.Name == name {
			return a, true
		}
	}
	return Action{}, false
}

// Names returns the API names of the actions, sorted.
func Names() []string {
	names := make([]string, len(Catalog))
	for i, a := range Catalog {
		names[i] = a.Name
	}
	sort.Strings(names)
	return names
}

// Param returns the parameter of the action named name.
func (a Action) Param(name string) (Param, bool) {
	for _, p := range a.Params {
		if p.Name == name {
			return p, true
		}
	}
	return Param{}, false
}
