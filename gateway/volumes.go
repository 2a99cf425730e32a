package gateway

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas/actions"
)

// Volumes are a VM's (the VM processor keeps them in its record): they are
// read here, and changed through the VM's actions (attach_volume,
// detach_volume, resize_volume, snapshot_volume, delete_volume).

// listVolumes is GET /v1/volumes: the caller's volumes (an admin's: every
// account's), ?vm= narrowing them to a VM's; deleted ones with
// ?deleted=true.
func (s *Server) listVolumes(w http.ResponseWriter, r *http.Request) error {
	page, err := pageOf(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := readmodel.VolumeFilter{Account: principalOf(r.Context()).scope(), VmID: q.Get("vm")}
	switch q.Get("deleted") {
	case "", "false":
	case "true":
		f.Deleted = true
	default:
		e := errorf(http.StatusBadRequest, codeInvalidRequest, "query parameter \"deleted\" must be true or false")
		e.Details = map[string]any{"parameter": "deleted"}
		return e
	}
	rows, err := s.rm.Volumes(r.Context(), f, page.ask())
	if err != nil {
		return fmt.Errorf("list volumes: %w", err)
	}
	rows, next := cutPage(page, rows, func(v readmodel.Volume) string { return v.ID })
	out := api.List[api.Volume]{Items: make([]api.Volume, len(rows)), Next: next}
	for i, v := range rows {
		out.Items[i] = volumeJSON(v)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// getVolume is GET /v1/volumes/{id}, with its snapshots; another account's
// volume is a 404.
func (s *Server) getVolume(w http.ResponseWriter, r *http.Request) error {
	id := mux.Vars(r)["id"]
	v, err := s.rm.Volume(r.Context(), id)
	if errors.Is(err, readmodel.ErrNotFound) || err == nil && !principalOf(r.Context()).owns(v.Account) {
		return notFound("volume", id)
	}
	if err != nil {
		return fmt.Errorf("read volume %s: %w", id, err)
	}
	writeJSON(w, http.StatusOK, volumeJSON(v))
	return nil
}

// volumeAction is POST /v1/volumes/{id}/actions: the VM action of the
// volume's VM that names the volume, as POST /v1/vms/{id}/actions with
// volume_id would be; an action that takes no volume is a 422.
func (s *Server) volumeAction(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var req api.VolumeActionRequest
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	id := mux.Vars(r)["id"]
	if a, ok := actions.ByName(req.Action); ok {
		if _, takes := a.Param("volume_id"); !takes {
			e := fieldError("action", "action %q takes no volume; POST /v1/vms/{id}/actions is the way", req.Action)
			e.Details["actions"] = volumeActions()
			return e
		}
	}
	a, args, err := validateAction(api.ActionRequest{Action: req.Action, VolumeID: &id, SizeGB: req.SizeGB, SnapshotName: req.SnapshotName})
	if err != nil {
		return err
	}
	v, err := s.rm.Volume(r.Context(), id)
	if errors.Is(err, readmodel.ErrNotFound) || err == nil && !principalOf(r.Context()).owns(v.Account) {
		return notFound("volume", id)
	}
	if err != nil {
		return fmt.Errorf("read volume %s: %w", id, err)
	}
	return s.submit(w, r, body, s.actionIssuer(v.VmID, a, args))
}

// volumeActions are the names of the actions that take a volume.
func volumeActions() []string {
	var out []string
	for _, a := range actions.Catalog {
		if _, ok := a.Param("volume_id"); ok {
			out = append(out, a.Name)
		}
	}
	return out
}
