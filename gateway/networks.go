package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"

	"github.com/gorilla/mux"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

// Guest networks are the placement processor's, as pools are: it gives
// NICs their addresses in the zone's ledger. The gateway writes
// UpdateNetwork to placement.requests.v1 under the zone; NetworkChanged
// shows the outcome.

// Prefix lengths a network may have, as placement takes them: a /16 has
// 65,533 addresses for NICs; a /30 would have one beside its gateway and
// none for the DNS and DHCP addresses of QEMU's user-mode network.
const (
	minPrefix = 16
	maxPrefix = 29
)

// parseNetwork decodes and validates a POST /v1/networks body, zone left
// out being zone; the id left out is net-<zone>-<name>.
func parseNetwork(body []byte, zone string) (api.NetworkRequest, netip.Prefix, error) {
	var req api.NetworkRequest
	if err := decodeStrict(body, &req); err != nil {
		return req, netip.Prefix{}, err
	}
	if req.ZoneID == "" {
		req.ZoneID = zone
	}
	if req.ID == "" {
		req.ID = "net-" + req.ZoneID + "-" + req.Name
	}
	if !validName(req.Name) {
		return req, netip.Prefix{}, fieldError("name", "field \"name\" must be 1 to %d characters of a-z, 0-9 and -", maxNameLen)
	}
	if err := schemas.CheckID(req.ID); err != nil {
		return req, netip.Prefix{}, fieldError("id", "field \"id\" is not an id: %v", err)
	}
	p, err := netip.ParsePrefix(req.Cidr)
	if err != nil || !p.Addr().Is4() || p.Masked() != p || p.Bits() < minPrefix || p.Bits() > maxPrefix {
		return req, p, fieldError("cidr", "field \"cidr\" must be an IPv4 network of /%d to /%d, its address the network's (e.g. 10.1.0.0/24)", minPrefix, maxPrefix)
	}
	gw, err := netip.ParseAddr(req.Gateway)
	if err != nil || !p.Contains(gw) || gw == p.Addr() || gw == broadcast(p) {
		return req, p, fieldError("gateway", "field \"gateway\" must be an address of %s other than its network and broadcast addresses", p)
	}
	return req, p, nil
}

// broadcast is the last address of p.
func broadcast(p netip.Prefix) netip.Addr {
	a := p.Addr().As4()
	host := uint32(1)<<(32-p.Bits()) - 1
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3]) | host
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// listNetworks is GET /v1/networks (any role: a zone's networks are
// shared), ?zone= narrowing them.
func (s *Server) listNetworks(w http.ResponseWriter, r *http.Request) error {
	rows, err := s.rm.Networks(r.Context(), r.URL.Query().Get("zone"))
	if err != nil {
		return fmt.Errorf("list networks: %w", err)
	}
	out := api.List[api.Network]{Items: make([]api.Network, len(rows))}
	for i, n := range rows {
		out.Items[i] = networkJSON(n)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// getNetwork is GET /v1/networks/{id} (any role), by id or by name in the
// gateway's zone.
func (s *Server) getNetwork(w http.ResponseWriter, r *http.Request) error {
	n, err := s.guestNetwork(r, false)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, networkJSON(n))
	return nil
}

// createNetwork is POST /v1/networks (admin). An id or name the zone has,
// a CIDR that overlaps one of its networks, or a second default network
// is refused.
func (s *Server) createNetwork(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	req, prefix, err := parseNetwork(body, s.cfg.ZoneID)
	if err != nil {
		return err
	}
	if n, err := s.rm.Network(r.Context(), req.ZoneID, req.ID); err == nil && n.Applied {
		return errorf(http.StatusConflict, codeInvalidState, "network %s exists", req.ID)
	} else if err != nil && !errors.Is(err, readmodel.ErrNotFound) {
		return fmt.Errorf("read network %s: %w", req.ID, err)
	}
	nets, err := s.rm.Networks(r.Context(), req.ZoneID)
	if err != nil {
		return fmt.Errorf("list networks: %w", err)
	}
	for _, n := range nets {
		other, _ := netip.ParsePrefix(n.Cidr)
		switch {
		case n.Name == req.Name:
			return errorf(http.StatusConflict, codeInvalidState, "zone %s has a network named %q (%s)", req.ZoneID, req.Name, n.ID)
		case other.IsValid() && other.Overlaps(prefix):
			return fieldError("cidr", "field \"cidr\" %s overlaps network %s (%s)", prefix, n.ID, n.Cidr)
		case req.Default && n.Default:
			return errorf(http.StatusConflict, codeInvalidState, "zone %s has a default network: %s", req.ZoneID, n.ID)
		}
	}
	u := &schemas.UpdateNetwork{NetworkID: req.ID, ZoneID: req.ZoneID, Name: req.Name, Cidr: req.Cidr, Gateway: req.Gateway,
		Default: req.Default}
	w.Header().Set("Location", "/v1/networks/"+u.NetworkID)
	return s.writeNetwork(w, r, u, readmodel.Network{})
}

// deleteNetwork is DELETE /v1/networks/{id} (admin); refused (409) while
// NICs hold addresses of it.
func (s *Server) deleteNetwork(w http.ResponseWriter, r *http.Request) error {
	cur, err := s.guestNetwork(r, true)
	if err != nil {
		return err
	}
	if cur.Allocated > 0 {
		e := errorf(http.StatusConflict, codeInvalidState, "network %s has %d addresses in use", cur.ID, cur.Allocated)
		e.Details = map[string]any{"allocated": cur.Allocated}
		return e
	}
	u := &schemas.UpdateNetwork{NetworkID: cur.ID, ZoneID: cur.ZoneID, Name: cur.Name, Cidr: cur.Cidr, Gateway: cur.Gateway,
		Default: cur.Default, Deleted: true}
	return s.writeNetwork(w, r, u, cur)
}

// writeNetwork writes u to placement.requests.v1 under its zone and
// answers 202 with the network as asked.
func (s *Server) writeNetwork(w http.ResponseWriter, r *http.Request, u *schemas.UpdateNetwork, cur readmodel.Network) error {
	now := s.now().UTC()
	u.RequestID, u.At, u.Caller = s.newID(), now.UnixMilli(), commandCaller(r.Context())
	rec := schemas.Record{Topic: schemas.TopicPlacementRequests, Key: u.ZoneID, Value: u,
		Headers: map[string]string{"command_id": u.RequestID}}
	if err := s.publish(r.Context(), rec); err != nil {
		return err
	}
	n := networkJSON(readmodel.Network{ID: u.NetworkID, ZoneID: u.ZoneID, Name: u.Name, Cidr: u.Cidr, Gateway: u.Gateway,
		Default: u.Default, Size: cur.Size, Allocated: cur.Allocated, Applied: true, UpdatedAt: now})
	writeJSON(w, http.StatusAccepted, api.NetworkAccepted{RequestID: u.RequestID, Network: n, Deleted: u.Deleted, At: now})
	return nil
}

// guestNetwork reads the network of the route; with applied, a network
// whose creation was refused is a 404 too.
func (s *Server) guestNetwork(r *http.Request, applied bool) (readmodel.Network, error) {
	id := mux.Vars(r)["id"]
	n, err := s.rm.Network(r.Context(), s.cfg.ZoneID, id)
	if errors.Is(err, readmodel.ErrNotFound) || err == nil && applied && !n.Applied {
		return n, notFound("network", id)
	}
	if err != nil {
		return n, fmt.Errorf("read network %s: %w", id, err)
	}
	return n, nil
}
