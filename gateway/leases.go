package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

const (
	maxReservations = 16
	maxLeaseHosts   = 1000
	// startSlack is how far in the past a start may be, for clocks that
	// disagree a little; the lease then starts at once.
	startSlack = time.Minute
)

func invalid(field, format string, args ...any) error {
	e := errorf(http.StatusUnprocessableEntity, codeValidation, format, args...)
	e.Details = map[string]any{"field": field}
	return e
}

// parseWhen reads "now" or an RFC 3339 time.
func parseWhen(field, v string, now time.Time) (time.Time, error) {
	if v == "" || strings.EqualFold(v, "now") {
		return now, nil
	}
	at, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, invalid(field, "%s must be \"now\" or an RFC 3339 time such as 2026-05-01T10:00:00Z", field)
	}
	return at, nil
}

func reservationSpecs(rs []api.ReservationRequest) ([]schemas.ReservationSpec, error) {
	if len(rs) > maxReservations {
		return nil, invalid("reservations", "at most %d reservations", maxReservations)
	}
	out := make([]schemas.ReservationSpec, len(rs))
	for i, r := range rs {
		spec, err := reservationSpec(fmt.Sprintf("reservations[%d]", i), r)
		if err != nil {
			return nil, err
		}
		out[i] = spec
	}
	return out, nil
}

// reservationSpec checks one reservation, given under vmplane's names or
// Blazar's (blazar.go); its messages name the fields as they were given.
func reservationSpec(field string, r api.ReservationRequest) (schemas.ReservationSpec, error) {
	at := field + "."
	minHosts, minName, err := hostCount(at, "min_hosts", r.MinHosts, "min", r.Min)
	if err != nil {
		return schemas.ReservationSpec{}, err
	}
	maxHosts, maxName, err := hostCount(at, "max_hosts", r.MaxHosts, "max", r.Max)
	if err != nil {
		return schemas.ReservationSpec{}, err
	}
	switch {
	case minHosts < 1 || minHosts > maxLeaseHosts:
		return schemas.ReservationSpec{}, invalid(at+minName, "%s%s must be a whole number from 1 to %d", at, minName, maxLeaseHosts)
	case maxHosts == 0:
		maxHosts = minHosts
	case maxHosts < minHosts || maxHosts > maxLeaseHosts:
		return schemas.ReservationSpec{}, invalid(at+maxName, "%s%s must be a whole number from %s (%d) to %d, or left out for %s",
			at, maxName, minName, minHosts, maxLeaseHosts, minName)
	}
	props, err := reservationProperties(at, r)
	if err != nil {
		return schemas.ReservationSpec{}, err
	}
	for k, v := range props {
		if k == "" || len(k) > 255 || len(v) > 255 {
			return schemas.ReservationSpec{}, invalid(at+"host_properties", "%shost_properties: keys 1..255 and values up to 255 characters", at)
		}
	}
	return schemas.ReservationSpec{MinHosts: int32(minHosts), MaxHosts: int32(maxHosts), HostProperties: props}, nil
}

// leases returns the lease read model, which the Postgres reader has.
func (s *Server) leases() (LeaseReader, error) {
	lr, ok := s.rm.(LeaseReader)
	if !ok {
		return nil, errorf(http.StatusServiceUnavailable, codeUnavailable, "lease read model not configured")
	}
	return lr, nil
}

// visibleLease returns a lease the caller may see, projected or as its
// create was accepted; another project's lease is a 404 like a missing one.
func (s *Server) visibleLease(ctx context.Context, id string) (readmodel.Lease, error) {
	lr, err := s.leases()
	if err != nil {
		return readmodel.Lease{}, err
	}
	l, err := lookUp(ctx, s.accepted, readmodel.AcceptedLease, id, lr.Lease)
	if errors.Is(err, readmodel.ErrNotFound) || err == nil && !principalOf(ctx).owns(l.Project) {
		return readmodel.Lease{}, notFound("lease", id)
	}
	if err != nil {
		return readmodel.Lease{}, fmt.Errorf("read lease %s: %w", id, err)
	}
	return l, nil
}

func leaseJSON(l readmodel.Lease) api.Lease {
	out := api.Lease{ID: l.ID, Name: l.Name, ZoneID: l.ZoneID, Project: l.Project, Status: l.Status, Degraded: l.Degraded,
		Start: l.Start.UTC(), End: l.End.UTC(), Reason: l.Reason, CreatedAt: l.CreatedAt.UTC(), UpdatedAt: l.UpdatedAt.UTC(),
		Reservations: make([]api.LeaseReservation, len(l.Reservations))}
	for i, r := range l.Reservations {
		out.Reservations[i] = api.LeaseReservation{ID: r.ID, Status: r.Status, MinHosts: r.MinHosts, MaxHosts: r.MaxHosts,
			HostProperties: nonNilMap(r.HostProperties), Hosts: nonNil(r.Hosts), MissingResources: r.MissingResources,
			ResourcesChanged: r.ResourcesChanged}
	}
	return out
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// publishLease writes a lease command keyed by its zone.
func (s *Server) publishLease(ctx context.Context, zone, commandID string, v any) error {
	rec := schemas.Record{Topic: schemas.TopicLeaseCommands, Key: zone, Value: v, Headers: map[string]string{"command_id": commandID}}
	if err := s.pub.Publish(ctx, rec); err != nil {
		s.log.Error("publish lease command", "request_id", requestID(ctx), "command_id", commandID, "err", err)
		return errorf(http.StatusServiceUnavailable, codeUnavailable, "the command could not be written to the log; retry (request %s)", requestID(ctx))
	}
	return nil
}

func writeLeaseAccepted(w http.ResponseWriter, l api.Lease) {
	w.Header().Set("Location", "/v1/leases/"+l.ID)
	writeJSON(w, http.StatusAccepted, l)
}

// createLease is POST /v1/leases. The lease processor allocates the hosts:
// the answer is 202 with the lease as asked (PENDING, no hosts yet), which
// GET, PUT and DELETE find at once (accepted.go); GET then shows it
// PENDING or ACTIVE with its hosts, or ERROR with the reason when the
// calendar had no room or the lease policy refused it (longer than the
// maximum, or past the account's quota, naming the usage and the quota).
func (s *Server) createLease(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var req api.LeaseRequest
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	p := principalOf(r.Context())
	now := s.now().UTC()
	project := p.Account
	switch {
	case !validName(req.Name):
		return invalid("name", "name must be 1-%d of a-z, 0-9 and -", maxNameLen)
	case req.Project != "" && req.Project != p.Account && !p.admin():
		return invalid("project", "only an admin may lease hosts for another account")
	case req.Project != "":
		project = req.Project
	}
	zone := req.ZoneID
	if zone == "" {
		zone = s.cfg.ZoneID
	}
	start, err := parseWhen("start", req.Start, now)
	if err != nil {
		return err
	}
	if start.Before(now.Add(-startSlack)) {
		return invalid("start", "start is in the past; use \"now\" or a later time")
	}
	start = maxTime(start, now)
	if req.End == "" {
		return invalid("end", "end is required (an RFC 3339 time)")
	}
	end, err := parseWhen("end", req.End, now)
	if err != nil {
		return err
	}
	if !end.After(start) {
		return invalid("end", "end must be after start")
	}
	if len(req.Reservations) == 0 {
		return invalid("reservations", "a lease needs at least one reservation, e.g. {\"min_hosts\": 1, \"max_hosts\": 2}")
	}
	specs, err := reservationSpecs(req.Reservations)
	if err != nil {
		return err
	}
	id, commandID := "lease-"+s.newID(), s.newID()
	// The lease processor holds the lease to the account's quota and the
	// maximum length, which an admin may exceed; a refused lease turns
	// ERROR with the reason.
	cmd := &schemas.CreateLease{CommandID: commandID, LeaseID: id, ZoneID: zone, Project: project, Name: req.Name,
		Start: start.UnixMilli(), End: end.UnixMilli(), Reservations: specs, IssuedAt: now.UnixMilli(), Admin: p.admin(),
		Caller: commandCaller(r.Context())}
	l := readmodel.Lease{ID: id, Name: req.Name, ZoneID: zone, Project: project, Status: leasePending, Start: start, End: end,
		CreatedAt: now, UpdatedAt: now, Version: -1, Reservations: make([]readmodel.LeaseReservation, len(specs))}
	for i, sp := range specs {
		l.Reservations[i] = readmodel.LeaseReservation{Status: "pending", MinHosts: sp.MinHosts, MaxHosts: sp.MaxHosts,
			HostProperties: sp.HostProperties}
	}
	if err := s.acceptLease(r.Context(), l); err != nil {
		return err
	}
	if err := s.publishLease(r.Context(), zone, commandID, cmd); err != nil {
		return err
	}
	writeLeaseAccepted(w, leaseJSON(l))
	return nil
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// listLeases is GET /v1/leases: a user's project's leases, or every lease
// for an admin.
func (s *Server) listLeases(w http.ResponseWriter, r *http.Request) error {
	page, err := pageOf(r)
	if err != nil {
		return err
	}
	lr, err := s.leases()
	if err != nil {
		return err
	}
	rows, err := lr.Leases(r.Context(), principalOf(r.Context()).scope(), page.ask())
	if err != nil {
		return fmt.Errorf("list leases: %w", err)
	}
	rows, next := cutPage(page, rows, func(l readmodel.Lease) string { return l.ID })
	out := api.List[api.Lease]{Items: make([]api.Lease, len(rows)), Next: next}
	for i, l := range rows {
		out.Items[i] = leaseJSON(l)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// getLease is GET /v1/leases/{id}.
func (s *Server) getLease(w http.ResponseWriter, r *http.Request) error {
	l, err := s.visibleLease(r.Context(), mux.Vars(r)["id"])
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, leaseJSON(l))
	return nil
}

// updateLease is PUT /v1/leases/{id}: change the dates or host counts. The
// answer is 202 with the lease as it stands; the processor applies the
// update all or nothing, and a failed one is an update_failed event with
// the lease left as it was.
func (s *Server) updateLease(w http.ResponseWriter, r *http.Request) error {
	l, err := s.visibleLease(r.Context(), mux.Vars(r)["id"])
	if err != nil {
		return err
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var req api.LeaseUpdate
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	now := s.now().UTC()
	if req.Start == "" && req.End == "" && len(req.Reservations) == 0 {
		return invalid("start", "give start, end or reservations to change")
	}
	cmd := &schemas.UpdateLease{LeaseID: l.ID, ZoneID: l.ZoneID, Project: l.Project, IssuedAt: now.UnixMilli(),
		Admin: principalOf(r.Context()).admin(), Caller: commandCaller(r.Context())}
	if req.Start != "" {
		start, err := parseWhen("start", req.Start, now)
		if err != nil {
			return err
		}
		if start.Before(now.Add(-startSlack)) {
			return invalid("start", "start is in the past; use \"now\" or a later time")
		}
		cmd.Start = maxTime(start, now).UnixMilli()
	}
	if req.End != "" {
		end, err := parseWhen("end", req.End, now)
		if err != nil {
			return err
		}
		if !end.After(now) {
			return invalid("end", "end must be in the future")
		}
		cmd.End = end.UnixMilli()
	}
	if len(req.Reservations) > 0 {
		if len(req.Reservations) != len(l.Reservations) && len(l.Reservations) > 0 {
			return invalid("reservations", "the lease has %d reservations; give one entry for each", len(l.Reservations))
		}
		if cmd.Reservations, err = reservationSpecs(req.Reservations); err != nil {
			return err
		}
	}
	cmd.CommandID = s.newID()
	if err := s.publishLease(r.Context(), l.ZoneID, cmd.CommandID, cmd); err != nil {
		return err
	}
	writeLeaseAccepted(w, leaseJSON(l))
	return nil
}

// deleteLease is DELETE /v1/leases/{id}: an active lease stops the
// project's VMs on its hosts first.
func (s *Server) deleteLease(w http.ResponseWriter, r *http.Request) error {
	l, err := s.visibleLease(r.Context(), mux.Vars(r)["id"])
	if err != nil {
		return err
	}
	commandID := s.newID()
	cmd := &schemas.DeleteLease{CommandID: commandID, LeaseID: l.ID, ZoneID: l.ZoneID, Project: l.Project,
		IssuedAt: s.now().UnixMilli(), Caller: commandCaller(r.Context())}
	if err := s.publishLease(r.Context(), l.ZoneID, commandID, cmd); err != nil {
		return err
	}
	writeLeaseAccepted(w, leaseJSON(l))
	return nil
}

// leaseEvents is GET /v1/leases/{id}/events: the lease's notifications
// (status changes, healing, host reservability) in log order.
func (s *Server) leaseEvents(w http.ResponseWriter, r *http.Request) error {
	l, err := s.visibleLease(r.Context(), mux.Vars(r)["id"])
	if err != nil {
		return err
	}
	page, err := pageOf(r)
	if err != nil {
		return err
	}
	lr, err := s.leases()
	if err != nil {
		return err
	}
	rows, err := lr.LeaseEvents(r.Context(), l.ID, page.ask())
	if err != nil {
		return fmt.Errorf("lease events %s: %w", l.ID, err)
	}
	rows, next := cutPage(page, rows, func(e readmodel.LeaseEvent) string { return e.Seq })
	out := api.List[api.LeaseEvent]{Items: make([]api.LeaseEvent, len(rows)), Next: next}
	for i, e := range rows {
		out.Items[i] = api.LeaseEvent{Seq: e.Seq, Event: e.Event, Status: e.Status, Degraded: e.Degraded, HostID: e.HostID,
			Detail: e.Detail, CommandID: e.CommandID, At: e.At.UTC()}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
