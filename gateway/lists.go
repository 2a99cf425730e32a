package gateway

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/readmodel"
)

// listJobs is GET /v1/jobs[?vm=][&state=][&key=]: the caller's jobs (every
// job for an admin), by id; key keeps the jobs an API key asked for.
func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) error {
	page, err := pageOf(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := readmodel.JobFilter{Account: principalOf(r.Context()).scope(), VmID: q.Get("vm"), State: q.Get("state"), KeyID: q.Get("key")}
	rows, err := s.rm.Jobs(r.Context(), f, page.ask())
	if err != nil {
		return fmt.Errorf("list jobs: %w", err)
	}
	rows, next := cutPage(page, rows, func(j readmodel.Job) string { return j.ID })
	out := api.List[api.Job]{Items: make([]api.Job, len(rows)), Next: next}
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
	job, err := s.job(ctx, id)
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
	out := api.List[api.JobStep]{Items: make([]api.JobStep, len(steps))}
	for i, st := range steps {
		out.Items[i] = stepJSON(st)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
