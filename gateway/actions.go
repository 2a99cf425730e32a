package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

// ActionRequest is api.ActionRequest, the body of POST /v1/vms/{id}/actions,
// under the name the action table's rows give it.
type ActionRequest = api.ActionRequest

// actionSpec is one action of DESIGN §5.2: its command type and the
// parameters it takes. build gets the resolved offering for resize.
type actionSpec struct {
	command string
	params  []string
	build   func(c schemas.VmCommand, a ActionRequest, off schemas.Offering) any
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// actions maps the API's lower snake case names to commands. The names are
// the ones allowed_actions uses, so the pre-check compares like with like.
var actions = map[string]actionSpec{
	"start": {"Start", []string{"host_id"}, func(c schemas.VmCommand, a ActionRequest, _ schemas.Offering) any {
		return &schemas.Start{VmCommand: c, HostID: deref(a.HostID)}
	}},
	"stop": {"Stop", []string{"force"}, func(c schemas.VmCommand, a ActionRequest, _ schemas.Offering) any {
		return &schemas.Stop{VmCommand: c, Force: deref(a.Force)}
	}},
	"reboot": {"Reboot", []string{"hard"}, func(c schemas.VmCommand, a ActionRequest, _ schemas.Offering) any {
		return &schemas.Reboot{VmCommand: c, Hard: deref(a.Hard)}
	}},
	"pause": {"Pause", nil, func(c schemas.VmCommand, _ ActionRequest, _ schemas.Offering) any {
		return &schemas.Pause{VmCommand: c}
	}},
	"unpause": {"Unpause", nil, func(c schemas.VmCommand, _ ActionRequest, _ schemas.Offering) any {
		return &schemas.Unpause{VmCommand: c}
	}},
	"suspend": {"Suspend", nil, func(c schemas.VmCommand, _ ActionRequest, _ schemas.Offering) any {
		return &schemas.Suspend{VmCommand: c}
	}},
	"resume": {"Resume", nil, func(c schemas.VmCommand, _ ActionRequest, _ schemas.Offering) any {
		return &schemas.Resume{VmCommand: c}
	}},
	"rescue": {"Rescue", []string{"image"}, func(c schemas.VmCommand, a ActionRequest, _ schemas.Offering) any {
		return &schemas.Rescue{VmCommand: c, Image: deref(a.Image)}
	}},
	"unrescue": {"Unrescue", nil, func(c schemas.VmCommand, _ ActionRequest, _ schemas.Offering) any {
		return &schemas.Unrescue{VmCommand: c}
	}},
	"rebuild": {"Rebuild", []string{"image"}, func(c schemas.VmCommand, a ActionRequest, _ schemas.Offering) any {
		return &schemas.Rebuild{VmCommand: c, Image: deref(a.Image)}
	}},
	"snapshot": {"Snapshot", []string{"snapshot_name"}, func(c schemas.VmCommand, a ActionRequest, _ schemas.Offering) any {
		return &schemas.Snapshot{VmCommand: c, SnapshotName: deref(a.SnapshotName)}
	}},
	"migrate": {"Migrate", []string{"host_id"}, func(c schemas.VmCommand, a ActionRequest, _ schemas.Offering) any {
		return &schemas.Migrate{VmCommand: c, HostID: deref(a.HostID)}
	}},
	"resize": {"Resize", []string{"offering"}, func(c schemas.VmCommand, _ ActionRequest, off schemas.Offering) any {
		return &schemas.Resize{VmCommand: c, Offering: off}
	}},
	"confirm_resize": {"ConfirmResize", nil, func(c schemas.VmCommand, _ ActionRequest, _ schemas.Offering) any {
		return &schemas.ConfirmResize{VmCommand: c}
	}},
	"revert_resize": {"RevertResize", nil, func(c schemas.VmCommand, _ ActionRequest, _ schemas.Offering) any {
		return &schemas.RevertResize{VmCommand: c}
	}},
	"terminate": {"Terminate", nil, func(c schemas.VmCommand, _ ActionRequest, _ schemas.Offering) any {
		return &schemas.Terminate{VmCommand: c}
	}},
}

// ActionNames returns the action names, sorted.
func ActionNames() []string {
	names := make([]string, 0, len(actions))
	for n := range actions {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// vmAction is POST /v1/vms/{id}/actions.
func (s *Server) vmAction(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var req ActionRequest
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	spec, err := validateAction(req)
	if err != nil {
		return err
	}
	return s.submit(w, r, body, s.actionIssuer(mux.Vars(r)["id"], req, spec))
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
	req := ActionRequest{Action: "terminate"}
	return s.submit(w, r, body, s.actionIssuer(mux.Vars(r)["id"], req, actions["terminate"]))
}

func validateAction(req ActionRequest) (actionSpec, error) {
	if req.Action == "" {
		e := errorf(http.StatusUnprocessableEntity, codeValidation, "field \"action\" is required")
		e.Details = map[string]any{"field": "action", "actions": ActionNames()}
		return actionSpec{}, e
	}
	spec, ok := actions[req.Action]
	if !ok {
		e := errorf(http.StatusUnprocessableEntity, codeValidation, "unknown action %q", req.Action)
		e.Details = map[string]any{"field": "action", "actions": ActionNames()}
		return actionSpec{}, e
	}
	for _, p := range req.Params() {
		if !slices.Contains(spec.params, p) {
			e := errorf(http.StatusUnprocessableEntity, codeValidation, "field %q does not apply to action %q", p, req.Action)
			e.Details = map[string]any{"field": p}
			return actionSpec{}, e
		}
	}
	if req.Action == "resize" && deref(req.Offering) == "" {
		e := errorf(http.StatusUnprocessableEntity, codeValidation, "action \"resize\" needs field \"offering\"")
		e.Details = map[string]any{"field": "offering"}
		return actionSpec{}, e
	}
	return spec, nil
}

// actionIssuer checks the VM (visible to the caller, action allowed by the
// read model) and builds the command.
func (s *Server) actionIssuer(vmID string, req ActionRequest, spec actionSpec) issueFunc {
	return func(ctx context.Context, commandID string, now time.Time) (schemas.Record, api.Job, error) {
		vm, err := s.visibleVM(ctx, vmID)
		if err != nil {
			return schemas.Record{}, api.Job{}, err
		}
		// An empty list means the read model has not heard of the VM's
		// state yet: let the processor decide.
		if len(vm.AllowedActions) > 0 && !slices.Contains(vm.AllowedActions, req.Action) {
			e := errorf(http.StatusConflict, codeInvalidState, "action %q is not allowed while VM %s is %s%s",
				req.Action, vm.ID, vm.VmState, inTask(vm.TaskState))
			e.Details = map[string]any{"allowed_actions": vm.AllowedActions, "vm_state": vm.VmState, "task_state": vm.TaskState}
			return schemas.Record{}, api.Job{}, e
		}
		var off schemas.Offering
		if req.Offering != nil {
			if off, err = s.offering(ctx, *req.Offering); err != nil {
				return schemas.Record{}, api.Job{}, err
			}
		}
		v := spec.build(vmCommand(commandID, vm.ID, vm.Account, now), req, off)
		return commandRecord(vm.ID, v), pendingJob(commandID, vm.ID, spec.command, now), nil
	}
}

func inTask(taskState string) string {
	if taskState == "" {
		return ""
	}
	return " (" + taskState + ")"
}

// visibleVM reads a VM the caller may see; another account's VM is a 404.
func (s *Server) visibleVM(ctx context.Context, id string) (readmodel.VM, error) {
	vm, err := s.rm.VM(ctx, id)
	if errors.Is(err, readmodel.ErrNotFound) || err == nil && !principalOf(ctx).owns(vm.Account) {
		return readmodel.VM{}, notFound("VM", id)
	}
	if err != nil {
		return readmodel.VM{}, fmt.Errorf("read vm %s: %w", id, err)
	}
	return vm, nil
}
