package gateway

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
	"github.com/vmplane/vmplane/schemas/actions"
)

// requestArgs returns the parameters present in req, by JSON name, with
// their values. A field of api.ActionRequest is the parameter of the same
// name in the catalog of actions (schemas/actions); a test holds the two
// together.
func requestArgs(req api.ActionRequest) map[string]any {
	args := map[string]any{}
	rv := reflect.ValueOf(req)
	for i := range rv.NumField() {
		f := rv.Field(i)
		if f.Kind() != reflect.Pointer || f.IsNil() {
			continue
		}
		name, _, _ := strings.Cut(rv.Type().Field(i).Tag.Get("json"), ",")
		args[name] = f.Elem().Interface()
	}
	return args
}

// maxActionInt bounds an integer parameter of an action: each is a size in
// GiB (size_gb), and 64 TiB is more than any volume.
const maxActionInt = 64 << 10

// ActionNames returns the action names, sorted. They are the ones
// allowed_actions uses, so the pre-check compares like with like.
func ActionNames() []string { return actions.Names() }

// vmAction is POST /v1/vms/{id}/actions.
func (s *Server) vmAction(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var req api.ActionRequest
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	a, args, err := validateAction(req)
	if err != nil {
		return err
	}
	return s.submit(w, r, body, s.actionIssuer(mux.Vars(r)["id"], a, args))
}

// deleteVM is DELETE /v1/vms/{id}: terminate.
func (s *Server) deleteVM(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	if len(strings.TrimSpace(string(body))) != 0 {
		return errorf(http.StatusUnprocessableEntity, codeValidation, "DELETE takes no body")
	}
	terminate, _ := actions.ByName("terminate")
	return s.submit(w, r, body, s.actionIssuer(mux.Vars(r)["id"], terminate, nil))
}

// maxActionString bounds a string parameter of an action.
const maxActionString = 200

// validateAction finds the request's action in the catalog and checks its
// parameters: each one present must be the action's, each required one
// present and not empty.
func validateAction(req api.ActionRequest) (actions.Action, map[string]any, error) {
	if req.Action == "" {
		e := errorf(http.StatusUnprocessableEntity, codeValidation, "field \"action\" is required")
		e.Details = map[string]any{"field": "action", "actions": ActionNames()}
		return actions.Action{}, nil, e
	}
	a, ok := actions.ByName(req.Action)
	if !ok {
		e := errorf(http.StatusUnprocessableEntity, codeValidation, "unknown action %q", req.Action)
		e.Details = map[string]any{"field": "action", "actions": ActionNames()}
		return actions.Action{}, nil, e
	}
	args := requestArgs(req)
	for _, name := range slices.Sorted(maps.Keys(args)) {
		if _, ok := a.Param(name); !ok {
			e := errorf(http.StatusUnprocessableEntity, codeValidation, "field %q does not apply to action %q", name, a.Name)
			e.Details = map[string]any{"field": name}
			return actions.Action{}, nil, e
		}
	}
	for _, p := range a.Params {
		v, present := args[p.Name]
		if p.Required && (!present || v == "") {
			e := errorf(http.StatusUnprocessableEntity, codeValidation, "action %q needs field %q", a.Name, p.Name)
			e.Details = map[string]any{"field": p.Name}
			return actions.Action{}, nil, e
		}
		if n, ok := v.(int64); ok && p.Kind == actions.KindInt && (n <= 0 || n > maxActionInt) {
			return actions.Action{}, nil, fieldError(p.Name, "field %q must be 1..%d", p.Name, maxActionInt)
		}
		// A string parameter is a name, an id or an image: a snapshot name
		// keys a read-model row and names a snapshot inside a disk file,
		// where QEMU keeps 255 bytes at most.
		if s, ok := v.(string); ok && len(s) > maxActionString {
			return actions.Action{}, nil, fieldError(p.Name, "field %q is longer than %d bytes", p.Name, maxActionString)
		}
	}
	return a, args, nil
}

// actionIssuer checks the VM (visible to the caller, action allowed by the
// read model), looks up the offerings the arguments name and builds the
// command.
func (s *Server) actionIssuer(vmID string, a actions.Action, args map[string]any) issueFunc {
	return func(ctx context.Context, commandID string, now time.Time) (schemas.Record, api.Job, error) {
		vm, err := s.visibleVM(ctx, vmID)
		if err != nil {
			return schemas.Record{}, api.Job{}, err
		}
		// An empty list means the read model has not heard of the VM's
		// state yet: let the processor decide.
		if len(vm.AllowedActions) > 0 && !slices.Contains(vm.AllowedActions, a.Name) {
			e := errorf(http.StatusConflict, codeInvalidState, "action %q is not allowed while VM %s is %s%s",
				a.Name, vm.ID, vm.VmState, inTask(vm.TaskState))
			e.Details = map[string]any{"allowed_actions": vm.AllowedActions, "vm_state": vm.VmState, "task_state": vm.TaskState}
			return schemas.Record{}, api.Job{}, e
		}
		cmdArgs, err := s.lookUpArgs(ctx, a, args)
		if err != nil {
			return schemas.Record{}, api.Job{}, err
		}
		v, err := schemas.NewVmCommand(a, vmCommand(ctx, commandID, vm.ID, vm.Account, now), cmdArgs)
		if err != nil {
			return schemas.Record{}, api.Job{}, fmt.Errorf("build the command of %s: %w", a.Name, err)
		}
		return commandRecord(vm.ID, v), pendingJob(ctx, commandID, vm.ID, a.Command, now), nil
	}
}

// lookUpArgs resolves what an action's arguments name: an offering into
// the copy the command embeds, and a rebuild's image, a template's name or
// id, into the template's id.
func (s *Server) lookUpArgs(ctx context.Context, a actions.Action, args map[string]any) (map[string]any, error) {
	cmdArgs := maps.Clone(args)
	for _, p := range a.Params {
		name, ok := cmdArgs[p.Name].(string)
		switch {
		case !ok:
		case p.Kind == actions.KindOffering:
			off, err := s.offering(ctx, name)
			if err != nil {
				return nil, err
			}
			cmdArgs[p.Name] = off
		case a.Command == "Rebuild" && p.Name == "image" && name != "":
			t, err := s.template(ctx, p.Name, name)
			if err != nil {
				return nil, err
			}
			cmdArgs[p.Name] = t.ID
		}
	}
	return cmdArgs, nil
}

func inTask(taskState string) string {
	if taskState == "" {
		return ""
	}
	return " (" + taskState + ")"
}

// visibleVM reads a VM the caller may see, projected or as its deploy was
// accepted; another account's VM is a 404.
func (s *Server) visibleVM(ctx context.Context, id string) (readmodel.VM, error) {
	vm, err := s.vm(ctx, id)
	if errors.Is(err, readmodel.ErrNotFound) || err == nil && !principalOf(ctx).owns(vm.Account) {
		return readmodel.VM{}, notFound("VM", id)
	}
	if err != nil {
		return readmodel.VM{}, fmt.Errorf("read vm %s: %w", id, err)
	}
	return vm, nil
}
