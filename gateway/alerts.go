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

// listAlerts is GET /v1/alerts[?vm=&host=&zone=&kind=&acked=]: the
// caller's alerts (every alert for an admin, the hosts' among them), by id.
func (s *Server) listAlerts(w http.ResponseWriter, r *http.Request) error {
	page, err := pageOf(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := readmodel.AlertFilter{Account: principalOf(r.Context()).scope(), VmID: q.Get("vm"), HostID: q.Get("host"),
		ZoneID: q.Get("zone"), Kind: q.Get("kind")}
	switch v := q.Get("acked"); v {
	case "":
	case "true", "false":
		acked := v == "true"
		f.Acked = &acked
	default:
		return errorf(http.StatusBadRequest, codeValidation, "acked must be true or false, not %q", clip(v, 40))
	}
	rows, err := s.rm.Alerts(r.Context(), f, page.ask())
	if err != nil {
		return fmt.Errorf("list alerts: %w", err)
	}
	rows, next := cutPage(page, rows, func(a readmodel.Alert) string { return a.ID })
	out := api.List[api.Alert]{Items: make([]api.Alert, len(rows)), Next: next}
	for i, a := range rows {
		out.Items[i] = alertJSON(a)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// getAlert is GET /v1/alerts/{id}: an alert the caller may see (another
// account's, or a host's for a user, is a 404).
func (s *Server) getAlert(w http.ResponseWriter, r *http.Request) error {
	a, err := s.visibleAlert(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, alertJSON(a))
	return nil
}

// ackAlert is POST /v1/alerts/{id}/ack: the caller takes the alert in hand.
// The acknowledgement goes to alert.acks.v1, keyed by the alert; the alert
// shows it once the read model has it. An alert acknowledged already keeps
// its first acknowledgement and is answered as it is (200), so a retried
// request changes nothing.
func (s *Server) ackAlert(w http.ResponseWriter, r *http.Request) error {
	a, err := s.visibleAlert(r)
	if err != nil {
		return err
	}
	if a.AckedAt != nil {
		writeJSON(w, http.StatusOK, alertJSON(a))
		return nil
	}
	now := s.now().UTC()
	by := principalOf(r.Context()).Account
	rec := schemas.Record{Topic: schemas.TopicAlertAcks, Key: a.ID,
		Value: &schemas.AlertAcknowledged{AlertID: a.ID, By: by, Account: a.Account, At: now.UnixMilli(), Caller: commandCaller(r.Context())}}
	if err := s.publish(r.Context(), rec); err != nil {
		return err
	}
	a.AckedBy, a.AckedAt = by, &now
	writeJSON(w, http.StatusAccepted, alertJSON(a))
	return nil
}

// visibleAlert reads the alert of the route, 404 when it does not exist or
// belongs to someone else: a user sees the alerts of their account, an
// admin every alert.
func (s *Server) visibleAlert(r *http.Request) (readmodel.Alert, error) {
	id := mux.Vars(r)["id"]
	a, err := s.rm.Alert(r.Context(), id)
	switch {
	case errors.Is(err, readmodel.ErrNotFound), err == nil && !principalOf(r.Context()).owns(a.Account):
		return readmodel.Alert{}, notFound("alert", id)
	case err != nil:
		return readmodel.Alert{}, fmt.Errorf("read alert %s: %w", id, err)
	}
	return a, nil
}

func alertJSON(a readmodel.Alert) api.Alert {
	out := api.Alert{ID: a.ID, Kind: a.Kind, VmID: a.VmID, HostID: a.HostID, JobID: a.JobID, ZoneID: a.ZoneID,
		Message: a.Message, At: a.At.UTC(), AckedBy: a.AckedBy}
	if a.AckedAt != nil {
		t := a.AckedAt.UTC()
		out.AckedAt = &t
	}
	return out
}
