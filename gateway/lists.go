package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/vmplane/vmplane/readmodel"
)

// Alert is the JSON of an alert.
type Alert struct {
	ID      string    `json:"id"`
	Kind    string    `json:"kind"`
	VmID    string    `json:"vm_id,omitempty"`
	HostID  string    `json:"host_id,omitempty"`
	JobID   string    `json:"job_id,omitempty"`
	Message string    `json:"message"`
	At      time.Time `json:"at"`
}

// listJobs is GET /v1/jobs[?vm=][&state=]: the caller's jobs (every job for
// an admin), by id.
func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) error {
	page, err := pageOf(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	rows, err := s.rm.Jobs(r.Context(), principalOf(r.Context()).scope(), q.Get("vm"), q.Get("state"), page.ask())
	if err != nil {
		return fmt.Errorf("list jobs: %w", err)
	}
	rows, next := cutPage(page, rows, func(j readmodel.Job) string { return j.ID })
	out := List[Job]{Items: make([]Job, len(rows)), Next: next}
	for i, j := range rows {
		out.Items[i] = jobJSON(j)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// jobJournal is GET /v1/jobs/{id}/journal: the job's steps in order.
func (s *Server) jobJournal(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	id := mux.Vars(r)["id"]
	job, err := s.rm.Job(ctx, id)
	if errors.Is(err, readmodel.ErrNotFound) || err == nil && !principalOf(ctx).owns(job.Account) {
		return notFound("job", id)
	}
	if err != nil {
		return fmt.Errorf("read job %s: %w", id, err)
	}
	steps, err := s.rm.JobSteps(ctx, id)
	if err != nil {
		return fmt.Errorf("read steps of job %s: %w", id, err)
	}
	out := List[JobStep]{Items: make([]JobStep, len(steps))}
	for i, st := range steps {
		out.Items[i] = stepJSON(st)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// listAlerts is GET /v1/alerts[?vm=]: the caller's alerts (every alert for
// an admin), by id.
func (s *Server) listAlerts(w http.ResponseWriter, r *http.Request) error {
	page, err := pageOf(r)
	if err != nil {
		return err
	}
	rows, err := s.rm.Alerts(r.Context(), principalOf(r.Context()).scope(), r.URL.Query().Get("vm"), page.ask())
	if err != nil {
		return fmt.Errorf("list alerts: %w", err)
	}
	rows, next := cutPage(page, rows, func(a readmodel.Alert) string { return a.ID })
	out := List[Alert]{Items: make([]Alert, len(rows)), Next: next}
	for i, a := range rows {
		out.Items[i] = Alert{ID: a.ID, Kind: a.Kind, VmID: a.VmID, HostID: a.HostID, JobID: a.JobID, Message: a.Message, At: a.At.UTC()}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
