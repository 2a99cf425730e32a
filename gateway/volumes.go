package gateway

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/readmodel"
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
