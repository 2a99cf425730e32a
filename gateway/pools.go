package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strings"

	"github.com/gorilla/mux"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

// Storage pools are the placement processor's (it claims their capacity in
// the zone's ledger): the gateway writes the desired state of the whole
// pool, UpdateStoragePool, to placement.requests.v1 under the zone, and
// placement applies or refuses it; either way StoragePoolChanged shows the
// outcome (a refusal as the pool's last_error).

// maxPoolGB bounds a pool's capacity (1 EiB), far below what MiB in an
// int64 holds.
const maxPoolGB = 1 << 30

var poolScopes = []string{schemas.PoolScopeZone, schemas.PoolScopeCluster, schemas.PoolScopeHost}

var poolStates = []string{schemas.PoolUp, schemas.PoolMaintenance, schemas.PoolFailed, schemas.PoolDisabled}

// parsePool decodes and validates a POST /v1/pools body, zone left out
// being zone; the id left out is pool-<zone>-<name>.
func parsePool(body []byte, zone string) (api.PoolRequest, error) {
	var req api.PoolRequest
	if err := decodeStrict(body, &req); err != nil {
		return req, err
	}
	if req.ZoneID == "" {
		req.ZoneID = zone
	}
	if req.ID == "" {
		req.ID = "pool-" + req.ZoneID + "-" + req.Name
	}
	if !validName(req.Name) {
		return req, fieldError("name", "field \"name\" must be 1 to %d characters of a-z, 0-9 and -", maxNameLen)
	}
	if err := schemas.CheckID(req.ID); err != nil {
		return req, fieldError("id", "field \"id\" is not an id: %v", err)
	}
	if err := checkScope(req.Scope, req.ClusterID, req.HostID); err != nil {
		return req, err
	}
	if len(req.Path) > 1024 || !path.IsAbs(req.Path) || path.Clean(req.Path) != req.Path || req.Path == "/" ||
		strings.ContainsAny(req.Path, ",\n\r\t ") {
		// A comma or a space would split QEMU's -drive option, where an
		// agent refuses them: a pool they are in could take no volume.
		return req, fieldError("path", "field \"path\" must be an absolute, clean directory path other than /, of at most 1024 bytes, without commas or white space")
	}
	if err := checkPoolSize(req.CapacityGB, 0); err != nil {
		return req, err
	}
	return req, checkTags(req.Tags)
}

// checkScope holds a pool's scope to the ids it needs.
func checkScope(scope, cluster, host string) error {
	switch {
	case !slices.Contains(poolScopes, scope):
		return fieldError("scope", "field \"scope\" must be Zone, Cluster or Host")
	case scope == schemas.PoolScopeCluster && cluster == "":
		return fieldError("cluster_id", "a Cluster pool needs field \"cluster_id\"")
	case scope == schemas.PoolScopeHost && host == "":
		return fieldError("host_id", "a Host pool needs field \"host_id\"")
	case scope != schemas.PoolScopeCluster && cluster != "":
		return fieldError("cluster_id", "field \"cluster_id\" is for a Cluster pool only")
	case scope != schemas.PoolScopeHost && host != "":
		return fieldError("host_id", "field \"host_id\" is for a Host pool only")
	}
	return nil
}

// checkPoolSize refuses a capacity out of range or below what the pool's
// volumes use.
func checkPoolSize(gb, usedMB int64) error {
	if gb <= 0 || gb > maxPoolGB {
		return fieldError("capacity_gb", "field \"capacity_gb\" must be 1..%d", maxPoolGB)
	}
	if gb*mbPerGB < usedMB {
		return fieldError("capacity_gb", "field \"capacity_gb\" is below what the pool's volumes use (%d MiB)", usedMB)
	}
	return nil
}

func checkTags(tags []string) error {
	for _, t := range tags {
		if !validName(t) {
			return fieldError("tags", "tag %q must be 1 to %d characters of a-z, 0-9 and -", t, maxNameLen)
		}
	}
	return nil
}

// listPools is GET /v1/pools (admin), ?zone= narrowing them.
func (s *Server) listPools(w http.ResponseWriter, r *http.Request) error {
	rows, err := s.rm.Pools(r.Context(), r.URL.Query().Get("zone"))
	if err != nil {
		return fmt.Errorf("list pools: %w", err)
	}
	out := api.List[api.Pool]{Items: make([]api.Pool, len(rows))}
	for i, p := range rows {
		out.Items[i] = poolJSON(p)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// getPool is GET /v1/pools/{id} (admin), a refused creation included.
func (s *Server) getPool(w http.ResponseWriter, r *http.Request) error {
	p, err := s.storagePool(r, false)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, poolJSON(p))
	return nil
}

// createPool is POST /v1/pools (admin). An id or a name the zone's pools
// have is a 409.
func (s *Server) createPool(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	req, err := parsePool(body, s.cfg.ZoneID)
	if err != nil {
		return err
	}
	if p, err := s.rm.Pool(r.Context(), req.ID); err == nil && p.Applied {
		return errorf(http.StatusConflict, codeInvalidState, "pool %s exists", req.ID)
	} else if err != nil && !errors.Is(err, readmodel.ErrNotFound) {
		return fmt.Errorf("read pool %s: %w", req.ID, err)
	}
	pools, err := s.rm.Pools(r.Context(), req.ZoneID)
	if err != nil {
		return fmt.Errorf("list pools: %w", err)
	}
	if i := slices.IndexFunc(pools, func(p readmodel.Pool) bool { return p.Name == req.Name }); i >= 0 {
		return errorf(http.StatusConflict, codeInvalidState, "zone %s has a pool named %q (%s)", req.ZoneID, req.Name, pools[i].ID)
	}
	u := &schemas.UpdateStoragePool{PoolID: req.ID, ZoneID: req.ZoneID, Name: req.Name, Scope: req.Scope,
		ClusterID: req.ClusterID, HostID: req.HostID, Path: req.Path, CapacityMB: req.CapacityGB * mbPerGB,
		Tags: req.Tags, State: schemas.PoolUp}
	w.Header().Set("Location", "/v1/pools/"+u.PoolID)
	return s.writePool(w, r, u, readmodel.Pool{})
}

// updatePool is PATCH /v1/pools/{id} (admin): capacity, tags or state.
func (s *Server) updatePool(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var req api.PoolUpdate
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	cur, err := s.storagePool(r, true)
	if err != nil {
		return err
	}
	u := desiredPool(cur)
	if req.CapacityGB != nil {
		if err := checkPoolSize(*req.CapacityGB, cur.UsedMB); err != nil {
			return err
		}
		u.CapacityMB = *req.CapacityGB * mbPerGB
	}
	if req.Tags != nil {
		if err := checkTags(*req.Tags); err != nil {
			return err
		}
		u.Tags = *req.Tags
	}
	if req.State != nil {
		if !slices.Contains(poolStates, *req.State) {
			return fieldError("state", "field \"state\" must be Up, Maintenance, Failed or Disabled")
		}
		u.State = *req.State
	}
	return s.writePool(w, r, u, cur)
}

// deletePool is DELETE /v1/pools/{id} (admin); refused (409) while volumes
// are on the pool.
func (s *Server) deletePool(w http.ResponseWriter, r *http.Request) error {
	cur, err := s.storagePool(r, true)
	if err != nil {
		return err
	}
	if cur.Volumes > 0 {
		e := errorf(http.StatusConflict, codeInvalidState, "pool %s holds %d volumes", cur.ID, cur.Volumes)
		e.Details = map[string]any{"volumes": cur.Volumes}
		return e
	}
	u := desiredPool(cur)
	u.Deleted = true
	return s.writePool(w, r, u, cur)
}

// desiredPool is the request that leaves pool p as it is.
func desiredPool(p readmodel.Pool) *schemas.UpdateStoragePool {
	return &schemas.UpdateStoragePool{PoolID: p.ID, ZoneID: p.ZoneID, Name: p.Name, Scope: p.Scope, ClusterID: p.ClusterID,
		HostID: p.HostID, Path: p.Path, CapacityMB: p.CapacityMB, Tags: slices.Clone(p.Tags), State: p.State}
}

// writePool writes u to placement.requests.v1 under its zone and answers
// 202 with the pool as asked (its use as cur had it).
func (s *Server) writePool(w http.ResponseWriter, r *http.Request, u *schemas.UpdateStoragePool, cur readmodel.Pool) error {
	now := s.now().UTC()
	u.RequestID, u.At, u.Caller = s.newID(), now.UnixMilli(), commandCaller(r.Context())
	rec := schemas.Record{Topic: schemas.TopicPlacementRequests, Key: u.ZoneID, Value: u,
		Headers: map[string]string{"command_id": u.RequestID}}
	if err := s.publish(r.Context(), rec); err != nil {
		return err
	}
	p := poolJSON(readmodel.Pool{ID: u.PoolID, ZoneID: u.ZoneID, Name: u.Name, Scope: u.Scope, ClusterID: u.ClusterID,
		HostID: u.HostID, Path: u.Path, CapacityMB: u.CapacityMB, UsedMB: cur.UsedMB, Volumes: cur.Volumes, Tags: u.Tags,
		State: u.State, Applied: true, UpdatedAt: now})
	writeJSON(w, http.StatusAccepted, api.PoolAccepted{RequestID: u.RequestID, Pool: p, Deleted: u.Deleted, At: now})
	return nil
}

// storagePool reads the pool of the route; with applied, a pool whose
// creation was refused is a 404 too.
func (s *Server) storagePool(r *http.Request, applied bool) (readmodel.Pool, error) {
	id := mux.Vars(r)["id"]
	p, err := s.rm.Pool(r.Context(), id)
	if errors.Is(err, readmodel.ErrNotFound) || err == nil && applied && !p.Applied {
		return p, notFound("pool", id)
	}
	if err != nil {
		return p, fmt.Errorf("read pool %s: %w", id, err)
	}
	return p, nil
}
