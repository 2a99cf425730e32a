package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"time"

	"github.com/gorilla/mux"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
	"github.com/vmplane/vmplane/schemas/settings"
)

// hostActions maps the API's action names to host.commands.v1 commands.
var hostActions = map[string]func(schemas.HostCommand) any{
	"enable":                  func(c schemas.HostCommand) any { return &schemas.EnableHost{HostCommand: c} },
	"disable":                 func(c schemas.HostCommand) any { return &schemas.DisableHost{HostCommand: c} },
	"prepare_for_maintenance": func(c schemas.HostCommand) any { return &schemas.PrepareForMaintenance{HostCommand: c} },
	"cancel_maintenance":      func(c schemas.HostCommand) any { return &schemas.CancelMaintenance{HostCommand: c} },
	"remove":                  func(c schemas.HostCommand) any { return &schemas.RemoveHost{HostCommand: c} },
	"unmanage":                func(c schemas.HostCommand) any { return &schemas.UnmanageHost{HostCommand: c} },
	"manage":                  func(c schemas.HostCommand) any { return &schemas.ManageHost{HostCommand: c} },
}

func hostActionNames() []string {
	names := make([]string, 0, len(hostActions))
	for n := range hostActions {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// listHosts is GET /v1/hosts (admin).
func (s *Server) listHosts(w http.ResponseWriter, r *http.Request) error {
	page, err := pageOf(r)
	if err != nil {
		return err
	}
	rows, err := s.rm.Hosts(r.Context(), page.ask())
	if err != nil {
		return fmt.Errorf("list hosts: %w", err)
	}
	rows, next := cutPage(page, rows, func(h readmodel.Host) string { return h.ID })
	hs, err := s.hostSettings(r.Context())
	if err != nil {
		return err
	}
	out := api.List[api.Host]{Items: make([]api.Host, len(rows)), Next: next}
	for i, h := range rows {
		out.Items[i] = hs.hostJSON(h)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// getHost is GET /v1/hosts/{id} (admin).
func (s *Server) getHost(w http.ResponseWriter, r *http.Request) error {
	h, err := s.host(r)
	if err != nil {
		return err
	}
	hs, err := s.hostSettings(r.Context())
	if err != nil {
		return err
	}
	out := api.HostDetail{Host: hs.hostJSON(h), Allocations: []api.HostAllocation{}}
	if cr := s.capacityReader(); cr != nil {
		p, err := cr.HostPlacement(r.Context(), h.ID)
		if err != nil {
			return fmt.Errorf("placement of host %s: %w", h.ID, err)
		}
		if p.Planner != "" {
			out.Reservation = &api.HostReservation{Planner: p.Planner, ResourceUsage: p.ResourceUsage, Account: p.ReservedFor}
		}
		for _, a := range p.Allocations {
			out.Allocations = append(out.Allocations, api.HostAllocation{VmID: a.VmID, Account: a.Account, CPU: a.CPU, MemoryMB: a.MemoryMB, At: a.At.UTC()})
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// hostAction is POST /v1/hosts/{id}/actions (admin): the command goes to
// host.commands.v1 keyed by host. A removed host takes no more commands;
// every other check (e.g. cancel_maintenance on a host not in maintenance)
// is the host processor's, which alone sees the host's current state.
func (s *Server) hostAction(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var req api.HostActionRequest
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	build, ok := hostActions[req.Action]
	if !ok {
		e := errorf(http.StatusUnprocessableEntity, codeValidation, "unknown host action %q", req.Action)
		e.Details = map[string]any{"field": "action", "allowed": hostActionNames()}
		return e
	}
	h, err := s.host(r)
	if err != nil {
		return err
	}
	if h.Status == "Removed" {
		return errorf(http.StatusConflict, codeInvalidState, "host %s is removed", h.ID)
	}
	hs, err := s.hostSettings(r.Context())
	if err != nil {
		return err
	}
	now := s.now().UTC()
	cmd := schemas.HostCommand{CommandID: s.newID(), HostID: h.ID, Account: principalOf(r.Context()).Account, IssuedAt: now.UnixMilli(),
		Caller: commandCaller(r.Context())}
	value := build(cmd)
	rec := schemas.Record{Topic: schemas.TopicHostCommands, Key: h.ID, Value: value,
		Headers: map[string]string{"command_id": cmd.CommandID}}
	if err := s.publish(r.Context(), rec); err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/hosts/"+h.ID)
	writeJSON(w, http.StatusAccepted, api.HostCommandAccepted{CommandID: cmd.CommandID, HostID: h.ID, Action: req.Action,
		Command: schemas.TypeName(value), AcceptedAt: now, Host: hs.hostJSON(h)})
	return nil
}

// addHost is POST /v1/hosts (admin): AddHost for a host the read model
// does not know or shows Removed; a known host is a 409.
func (s *Server) addHost(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var req api.HostAddRequest
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	if req.ID == "" {
		return fieldError("id", "field %q is required", "id")
	}
	h, err := s.rm.Host(r.Context(), req.ID)
	switch {
	case err == nil && h.Status != "Removed":
		return errorf(http.StatusConflict, codeConflict, "host %s is known (%s/%s); remove it first to add it again", h.ID, h.Status, h.ResourceState)
	case err != nil && !errors.Is(err, readmodel.ErrNotFound):
		return fmt.Errorf("read host %s: %w", req.ID, err)
	}
	now := s.now().UTC()
	cmd := schemas.HostCommand{CommandID: s.newID(), HostID: req.ID, Account: principalOf(r.Context()).Account, IssuedAt: now.UnixMilli(),
		Caller: commandCaller(r.Context())}
	value := &schemas.AddHost{HostCommand: cmd, Name: req.Name, ZoneID: req.ZoneID, PodID: req.PodID, ClusterID: req.ClusterID, Hypervisor: req.Hypervisor}
	rec := schemas.Record{Topic: schemas.TopicHostCommands, Key: req.ID, Value: value, Headers: map[string]string{"command_id": cmd.CommandID}}
	if err := s.publish(r.Context(), rec); err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/hosts/"+req.ID)
	writeJSON(w, http.StatusAccepted, api.HostCommandAccepted{CommandID: cmd.CommandID, HostID: req.ID, Action: "add",
		Command: schemas.TypeName(value), AcceptedAt: now, Host: api.Host{ID: req.ID, Name: req.Name, ZoneID: req.ZoneID,
			PodID: req.PodID, ClusterID: req.ClusterID, Hypervisor: req.Hypervisor, Status: "Creating", ResourceState: "Enabled"}})
	return nil
}

// host reads the host of the route, 404 when the read model has none.
func (s *Server) host(r *http.Request) (readmodel.Host, error) {
	id := mux.Vars(r)["id"]
	h, err := s.rm.Host(r.Context(), id)
	if errors.Is(err, readmodel.ErrNotFound) {
		return h, notFound("host", id)
	}
	if err != nil {
		return h, fmt.Errorf("read host %s: %w", id, err)
	}
	return h, nil
}

func (s *Server) capacityReader() CapacityReader {
	if s.cfg.Capacity != nil {
		return s.cfg.Capacity
	}
	cr, _ := s.rm.(CapacityReader)
	return cr
}

// hostSettings are the operator settings a host's JSON takes besides the
// host's row: the over-commit ratios placement applies, and how far
// last_ping_at may lag behind the agent's last ping.
type hostSettings struct {
	v   settings.Values
	lag time.Duration
}

// hostSettings reads the settings in effect; there are few rows.
func (s *Server) hostSettings(ctx context.Context) (*hostSettings, error) {
	rows, err := s.rm.Settings(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("read settings: %w", err)
	}
	hs := &hostSettings{}
	for _, row := range rows {
		// A row the catalogue refuses is ignored, as every processor does.
		_ = hs.v.Apply(row.Name, row.Scope, row.ScopeID, row.Value)
	}
	// The host processor republishes an Up host's unchanged status at its
	// first ping after the refresh period (processors/host ping.go).
	ping := hs.v.Duration(settings.PingInterval, "", "", s.cfg.PingInterval)
	hs.lag = settings.StatusRefresh(ping) + ping
	return hs, nil
}

// hostJSON renders a host with the over-commit ratios placement applies to
// it (processors/placement ledger.go): the host's own when it reports one,
// else the setting of its cluster, zone or the global one, else the
// default, and the capacity they give.
func (hs *hostSettings) hostJSON(h readmodel.Host) api.Host {
	cpuRatio, memRatio := h.CPUOvercommit, h.MemOvercommit
	if cpuRatio <= 0 {
		cpuRatio = hs.v.Float(settings.CPUOverprovisioning, h.ZoneID, h.ClusterID, schemas.DefaultCPUOvercommit)
	}
	if memRatio <= 0 {
		memRatio = hs.v.Float(settings.MemOverprovisioning, h.ZoneID, h.ClusterID, schemas.DefaultMemOvercommit)
	}
	out := api.Host{
		ID: h.ID, Name: h.Name, ZoneID: h.ZoneID, PodID: h.PodID, ClusterID: h.ClusterID,
		Hypervisor: h.Hypervisor, Status: h.Status, ResourceState: h.ResourceState, Reservable: h.Reservable,
		CPU: h.CPU, MemoryMB: h.MemoryMB, UsedCPU: h.UsedCPU, UsedMemoryMB: h.UsedMemoryMB,
		CPUOvercommit: cpuRatio, CPUCapacity: schemas.Overcommitted(int64(h.CPU), cpuRatio),
		MemOvercommit: memRatio, MemoryCapacityMB: schemas.Overcommitted(h.MemoryMB, memRatio),
		Tags:    nonNil(slices.Clone(h.Tags)),
		VMCount: h.VMCount, LastPingLagSeconds: int64(hs.lag / time.Second), UpdatedAt: h.UpdatedAt.UTC(),
	}
	if h.LastPingAt != nil {
		t := h.LastPingAt.UTC()
		out.LastPingAt = &t
	}
	return out
}
