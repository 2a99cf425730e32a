package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/gorilla/mux"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

// validateOffering checks a create request; the error names the field.
func validateOffering(req api.OfferingRequest) error {
	bad := func(field, format string, args ...any) error {
		e := errorf(http.StatusUnprocessableEntity, codeValidation, format, args...)
		e.Details = map[string]any{"field": field}
		return e
	}
	switch {
	case !validName(req.Name):
		return bad("name", "name must be 1-%d of a-z, 0-9 and -", maxNameLen)
	case req.CPU <= 0 || req.CPU > 1024:
		return bad("cpu", "cpu must be 1..1024")
	case req.MemoryMB <= 0 || req.MemoryMB > 16<<20:
		return bad("memory_mb", "memory_mb must be 1..%d", 16<<20)
	case req.DeploymentPlanner != "" && !slices.ContainsFunc(schemas.Planners, func(p schemas.PlannerSpec) bool { return p.Name == req.DeploymentPlanner }):
		return bad("deployment_planner", "unknown planner %q (GET /v1/planners lists them)", req.DeploymentPlanner)
	case req.PlannerMode != "" && req.PlannerMode != schemas.PlannerModeStrict && req.PlannerMode != schemas.PlannerModePreferred:
		return bad("planner_mode", "planner_mode must be %s or %s", schemas.PlannerModeStrict, schemas.PlannerModePreferred)
	}
	for _, t := range req.HostTags {
		if !validName(t) {
			return bad("host_tags", "host tag %q must be of a-z, 0-9 and -", t)
		}
	}
	for _, t := range req.StorageTags {
		if !validName(t) {
			return bad("storage_tags", "storage tag %q must be of a-z, 0-9 and -", t)
		}
	}
	return nil
}

// createOffering is POST /v1/offerings (admin): it publishes the offering
// to catalog.v1; it is listed once the projector has it. The offering is
// embedded in each Deploy, so changing the catalog later never changes a
// placed VM.
//
// The offering's id is made of its name ("off-" + name), so that the log
// itself keeps names unique: catalog.v1 is compacted by id, so two creates
// of one name racing past the check below (on two gateways, before the
// projector has either) are one offering, the later write winning, never
// two offerings of one name.
func (s *Server) createOffering(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var req api.OfferingRequest
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	if err := validateOffering(req); err != nil {
		return err
	}
	id := offeringID(req.Name)
	if err := s.nameFree(r.Context(), req.Name, ""); err != nil {
		return err
	}
	o := schemas.Offering{ID: id, Name: req.Name, CPU: req.CPU, MemoryMB: req.MemoryMB, HA: req.HA,
		DeploymentPlanner: req.DeploymentPlanner, PlannerMode: req.PlannerMode, HostTags: req.HostTags}
	so := &schemas.ServiceOffering{Offering: o, CreatedAt: s.now().UnixMilli(), StorageTags: req.StorageTags,
		Caller: commandCaller(r.Context())}
	rec := schemas.Record{Topic: schemas.TopicCatalog, Key: o.ID, Value: so}
	if err := s.publish(r.Context(), rec); err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/offerings/"+o.ID)
	writeJSON(w, http.StatusCreated, publishedOffering(so))
	return nil
}

// publishedOffering is the answer to a create or update: the offering as
// published, before the projector has it.
func publishedOffering(so *schemas.ServiceOffering) api.Offering {
	o := so.Offering
	return api.Offering{ID: o.ID, Name: o.Name, CPU: o.CPU, MemoryMB: o.MemoryMB, HA: o.HA,
		DeploymentPlanner: o.DeploymentPlanner, PlannerMode: o.PlannerMode, HostTags: nonNil(o.HostTags),
		StorageTags: nonNil(so.StorageTags)}
}

// nameFree refuses (409) an offering name that another offering than self
// ("" for none) has, or whose id ("off-" + name) another has: a create of
// that name later would then overwrite that offering.
func (s *Server) nameFree(ctx context.Context, name, self string) error {
	for _, key := range []string{name, offeringID(name)} {
		o, err := s.rm.Offering(ctx, key)
		switch {
		case errors.Is(err, readmodel.ErrNotFound):
		case err != nil:
			return fmt.Errorf("read offering %s: %w", key, err)
		case o.ID != self:
			return errorf(http.StatusConflict, codeInvalidState, "offering %q exists", name)
		}
	}
	return nil
}

// offeringID is the id of the offering named name, as the dev stack's
// seeded offerings have it.
func offeringID(name string) string { return "off-" + name }

// getOffering is GET /v1/offerings/{id} (any role), by id or name.
func (s *Server) getOffering(w http.ResponseWriter, r *http.Request) error {
	id := mux.Vars(r)["id"]
	o, err := s.rm.Offering(r.Context(), id)
	if errors.Is(err, readmodel.ErrNotFound) {
		return notFound("offering", id)
	}
	if err != nil {
		return fmt.Errorf("read offering %s: %w", id, err)
	}
	writeJSON(w, http.StatusOK, offeringJSON(o))
	return nil
}

// listPlanners is GET /v1/planners (any role).
func (s *Server) listPlanners(w http.ResponseWriter, _ *http.Request) error {
	out := api.List[api.Planner]{Items: make([]api.Planner, len(schemas.Planners))}
	for i, p := range schemas.Planners {
		out.Items[i] = api.Planner{Name: p.Name, ResourceUsage: p.ResourceUsage, Description: p.Description,
			Default: p.Name == schemas.DefaultPlanner}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// zoneCapacity is GET /v1/zones/{id}/capacity (admin).
func (s *Server) zoneCapacity(w http.ResponseWriter, r *http.Request) error {
	cr := s.cfg.Capacity
	if cr == nil {
		cr, _ = s.rm.(CapacityReader)
	}
	if cr == nil {
		return errorf(http.StatusServiceUnavailable, codeUnavailable, "capacity read model not configured")
	}
	zone := mux.Vars(r)["id"]
	rows, err := cr.ZoneCapacity(r.Context(), zone)
	if err != nil {
		return fmt.Errorf("zone capacity %s: %w", zone, err)
	}
	pools, err := s.rm.Pools(r.Context(), zone)
	if err != nil {
		return fmt.Errorf("zone capacity %s: %w", zone, err)
	}
	if len(rows) == 0 && len(pools) == 0 {
		return notFound("zone", zone)
	}
	out := api.ZoneCapacity{ZoneID: zone, Clusters: make([]api.ClusterCapacity, len(rows)), Pools: make([]api.Pool, len(pools))}
	for i, p := range pools {
		out.Pools[i] = poolJSON(p)
	}
	t := &out.Total
	for i, c := range rows {
		cc := api.ClusterCapacity{PodID: c.PodID, ClusterID: c.ClusterID, Hosts: c.Hosts, ReservableHosts: c.ReservableHosts,
			ReservedHosts: c.ReservedHosts, DedicatedHosts: c.Dedicated, CPU: c.CPU, UsedCPU: c.UsedCPU, FreeCPU: c.FreeCPU,
			MemoryMB: c.MemoryMB, UsedMemoryMB: c.UsedMemoryMB, FreeMemoryMB: c.FreeMemoryMB}
		out.Clusters[i] = cc
		t.Hosts += cc.Hosts
		t.ReservableHosts += cc.ReservableHosts
		t.ReservedHosts += cc.ReservedHosts
		t.DedicatedHosts += cc.DedicatedHosts
		t.CPU += cc.CPU
		t.UsedCPU += cc.UsedCPU
		t.FreeCPU += cc.FreeCPU
		t.MemoryMB += cc.MemoryMB
		t.UsedMemoryMB += cc.UsedMemoryMB
		t.FreeMemoryMB += cc.FreeMemoryMB
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
