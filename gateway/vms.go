package gateway

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/gorilla/mux"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/readmodel"
)

// listVMs is GET /v1/vms: the caller's VMs (every VM for an admin), one page.
func (s *Server) listVMs(w http.ResponseWriter, r *http.Request) error {
	page, err := pageOf(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	rows, err := s.rm.FilterVMs(r.Context(), readmodel.VMFilter{Account: principalOf(r.Context()).scope(), VmState: q.Get("state"), HostID: q.Get("host")}, page.ask())
	if err != nil {
		return fmt.Errorf("list vms: %w", err)
	}
	rows, next := cutPage(page, rows, func(v readmodel.VM) string { return v.ID })
	ids := make([]string, len(rows))
	for i, v := range rows {
		ids[i] = v.ID
	}
	storage, err := s.rm.VMStorage(r.Context(), ids)
	if err != nil {
		return fmt.Errorf("list vms: %w", err)
	}
	out := api.List[api.VM]{Items: make([]api.VM, len(rows)), Next: next}
	for i, v := range rows {
		out.Items[i] = withStorage(vmJSON(v), storage[v.ID])
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// getVM is GET /v1/vms/{id}. The ETag is the row's version (the offset of
// the event that wrote it), so a client polling a VM pays nothing while it
// does not change.
func (s *Server) getVM(w http.ResponseWriter, r *http.Request) error {
	vm, err := s.visibleVM(r.Context(), mux.Vars(r)["id"])
	if err != nil {
		return err
	}
	storage, err := s.rm.VMStorage(r.Context(), []string{vm.ID})
	if err != nil {
		return fmt.Errorf("read vm %s: %w", vm.ID, err)
	}
	out := withStorage(vmJSON(vm), storage[vm.ID])
	// The host's status is part of the answer (powerUnseen), so of its
	// tag; and so are the volumes and NICs, rows of their own whose
	// changes leave the VM's version as it was.
	etag := strconv.FormatInt(vm.Version, 10)
	if powerUnseen(vm) {
		etag += "-" + vm.HostStatus
	}
	if len(out.Volumes)+len(out.Nics) > 0 {
		etag += "-" + storageTag(out)
	}
	etag = `"` + etag + `"`
	w.Header().Set("ETag", etag)
	if etagMatches(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// etagMatches implements If-None-Match's weak comparison over a list.
func etagMatches(header, etag string) bool {
	if header == "" {
		return false
	}
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}

// listSnapshots is GET /v1/vms/{id}/snapshots: the VM's snapshots, oldest
// first, as the projector has them.
func (s *Server) listSnapshots(w http.ResponseWriter, r *http.Request) error {
	vm, err := s.visibleVM(r.Context(), mux.Vars(r)["id"])
	if err != nil {
		return err
	}
	rows, err := s.rm.Snapshots(r.Context(), vm.ID)
	if err != nil {
		return fmt.Errorf("list snapshots of %s: %w", vm.ID, err)
	}
	out := api.List[api.Snapshot]{Items: make([]api.Snapshot, len(rows))}
	for i, sn := range rows {
		out.Items[i] = api.Snapshot{VmID: sn.VmID, Name: sn.Name, JobID: sn.JobID, TakenAt: sn.TakenAt.UTC()}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
