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

// maxCancelReason bounds the reason a caller gives for a cancel.
const maxCancelReason = 500

// cancelJob is POST /v1/jobs/{id}/cancel: a CancelJob on vm.commands.v1,
// keyed by the job's VM, so the processor reads it after the job's own
// command. The processor decides (docs/design.md §5.3): a queued job leaves
// the queue, a running one stops at its next safe point. The answer is 202
// with the job as the read model has it; the job ends cancelled, or as its
// flow ends it when its agent command answers first. A job that has ended
// is a 409 with its state, a Terminate too (it is the way out of every
// job); another account's job is a 404.
func (s *Server) cancelJob(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var req api.CancelRequest
	if len(strings.TrimSpace(string(body))) != 0 {
		if err := decodeStrict(body, &req); err != nil {
			return err
		}
	}
	if len(req.Reason) > maxCancelReason {
		return fieldError("reason", "field \"reason\" is longer than %d bytes", maxCancelReason)
	}
	return s.submit(w, r, body, s.cancelIssuer(mux.Vars(r)["id"], req.Reason))
}

func (s *Server) cancelIssuer(id, reason string) issueFunc {
	return func(ctx context.Context, commandID string, now time.Time) (schemas.Record, api.Job, error) {
		p := principalOf(ctx)
		job, err := s.job(ctx, id)
		if errors.Is(err, readmodel.ErrNotFound) || err == nil && !p.owns(job.Account) {
			return schemas.Record{}, api.Job{}, notFound("job", id)
		}
		if err != nil {
			return schemas.Record{}, api.Job{}, fmt.Errorf("read job %s: %w", id, err)
		}
		if api.Finished(job.State) {
			e := errorf(http.StatusConflict, codeInvalidState, "job %s has ended (%s)", id, job.State)
			e.Details = map[string]any{"state": job.State, "reason": job.Reason}
			return schemas.Record{}, api.Job{}, e
		}
		if job.VmID == "" {
			// A bulk job is no VM's: its owner resource ends it.
			e := errorf(http.StatusConflict, codeInvalidState,
				"job %s is a %s, which is ended through its resource (a maintenance: the host's cancel_maintenance action), not cancelled", id, job.Type)
			e.Details = map[string]any{"state": job.State, "type": job.Type}
			return schemas.Record{}, api.Job{}, e
		}
		if job.Type == "Terminate" {
			e := errorf(http.StatusConflict, codeInvalidState, "job %s is a terminate, which cannot be cancelled", id)
			e.Details = map[string]any{"state": job.State, "type": job.Type}
			return schemas.Record{}, api.Job{}, e
		}
		v := &schemas.CancelJob{CommandID: commandID, VmID: job.VmID, JobID: job.ID, Account: p.Account,
			By: fmt.Sprintf("key %s of account %s", p.KeyID, p.Account), Reason: reason, IssuedAt: now.UnixMilli(), Caller: commandCaller(ctx)}
		return commandRecord(job.VmID, v), jobJSON(job), nil
	}
}
