package gateway

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

// listOfferings is GET /v1/offerings (any role): the catalog is small, so
// it is one page.
func (s *Server) listOfferings(w http.ResponseWriter, r *http.Request) error {
	rows, err := s.rm.Offerings(r.Context())
	if err != nil {
		return fmt.Errorf("list offerings: %w", err)
	}
	out := api.List[api.Offering]{Items: make([]api.Offering, len(rows))}
	for i, o := range rows {
		out.Items[i] = offeringJSON(o)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// updateOffering is PATCH /v1/offerings/{id} (admin), by id or name: it
// publishes the offering with the fields the request sets changed, under
// its id, to catalog.v1. Deploys read the offering from the read model and
// embed it, so a VM deployed once the projector has the change uses it
// (its planner, HA, host tags), and a VM deployed before keeps what it was
// deployed with. CPU and memory are the size of the offering's VMs: a
// request that changes either is refused, and a new offering is the way,
// as in CloudStack. Like a create, two updates racing are decided by the
// log: the later write wins whole.
func (s *Server) updateOffering(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var req api.OfferingUpdate
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	cur, err := s.catalogOffering(r, mux.Vars(r)["id"])
	if err != nil {
		return err
	}
	next, err := patchOffering(cur, req)
	if err != nil {
		return err
	}
	if next.Name != cur.Name {
		if err := s.nameFree(r.Context(), next.Name, cur.ID); err != nil {
			return err
		}
	}
	o := schemas.Offering{ID: cur.ID, Name: next.Name, CPU: cur.CPU, MemoryMB: cur.MemoryMB, HA: next.HA,
		DeploymentPlanner: next.DeploymentPlanner, PlannerMode: next.PlannerMode, HostTags: next.HostTags}
	so := &schemas.ServiceOffering{Offering: o, CreatedAt: cur.CreatedAt.UnixMilli(), StorageTags: next.StorageTags,
		Caller: commandCaller(r.Context())}
	rec := schemas.Record{Topic: schemas.TopicCatalog, Key: o.ID, Value: so}
	if err := s.publish(r.Context(), rec); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, publishedOffering(so))
	return nil
}

// patchOffering applies an update to an offering and validates the result
// as a create would be; a change of size is refused, naming the field.
func patchOffering(cur readmodel.Offering, req api.OfferingUpdate) (api.OfferingRequest, error) {
	for _, f := range []struct {
		field   string
		changed bool
	}{
		{"cpu", req.CPU != nil && *req.CPU != cur.CPU},
		{"memory_mb", req.MemoryMB != nil && *req.MemoryMB != cur.MemoryMB},
	} {
		if field := f.field; f.changed {
			e := errorf(http.StatusUnprocessableEntity, codeValidation,
				"%s of offering %q cannot change: its VMs run at its size; create a new offering (POST /v1/offerings) and resize VMs to it",
				field, cur.Name)
			e.Details = map[string]any{"field": field}
			return api.OfferingRequest{}, e
		}
	}
	next := api.OfferingRequest{Name: cur.Name, CPU: cur.CPU, MemoryMB: cur.MemoryMB, HA: cur.HA,
		DeploymentPlanner: cur.DeploymentPlanner, PlannerMode: cur.PlannerMode, HostTags: cur.HostTags,
		StorageTags: cur.StorageTags}
	set(&next.Name, req.Name)
	set(&next.HA, req.HA)
	set(&next.DeploymentPlanner, req.DeploymentPlanner)
	set(&next.PlannerMode, req.PlannerMode)
	set(&next.HostTags, req.HostTags)
	set(&next.StorageTags, req.StorageTags)
	return next, validateOffering(next)
}

// set stores *v in dst when v is set.
func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// deleteOffering is DELETE /v1/offerings/{id} (admin), by id or name: it
// publishes the offering's removal to catalog.v1, and answers the offering
// as it was. It is refused (409) while VMs that are not expunged use the
// offering, Deleted ones included, since they may be recovered. The count
// is the read model's: a deploy of the offering the projector has not
// shown yet is not counted, and the offering may go from under it. That
// VM is not harmed, since it embeds its offering, but it then names one
// the catalog no longer has.
func (s *Server) deleteOffering(w http.ResponseWriter, r *http.Request) error {
	cur, err := s.catalogOffering(r, mux.Vars(r)["id"])
	if err != nil {
		return err
	}
	n, err := s.rm.OfferingVMs(r.Context(), cur.ID)
	if err != nil {
		return fmt.Errorf("count vms of offering %s: %w", cur.ID, err)
	}
	if n > 0 {
		e := errorf(http.StatusConflict, codeInvalidState, "offering %q is used by %d VMs that are not expunged", cur.Name, n)
		e.Details = map[string]any{"vms": n}
		return e
	}
	o := commandOffering(cur)
	rec := schemas.Record{Topic: schemas.TopicCatalog, Key: o.ID,
		Value: &schemas.ServiceOffering{Offering: o, Deleted: true, CreatedAt: cur.CreatedAt.UnixMilli(), StorageTags: cur.StorageTags,
			Caller: commandCaller(r.Context())}}
	if err := s.publish(r.Context(), rec); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, offeringJSON(cur))
	return nil
}

// catalogOffering reads the offering of an id or name, or a 404.
func (s *Server) catalogOffering(r *http.Request, idOrName string) (readmodel.Offering, error) {
	o, err := s.rm.Offering(r.Context(), idOrName)
	if errors.Is(err, readmodel.ErrNotFound) {
		return readmodel.Offering{}, notFound("offering", idOrName)
	}
	if err != nil {
		return readmodel.Offering{}, fmt.Errorf("read offering %s: %w", idOrName, err)
	}
	return o, nil
}
