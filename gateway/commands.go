package gateway

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/internal/telemetry"
	"github.com/vmplane/vmplane/schemas"
)

// issueFunc validates a request and builds its command record and the job
// the command will become, given the command id. It returns an *apiError
// for a request that cannot be accepted.
type issueFunc func(ctx context.Context, commandID string, now time.Time) (schemas.Record, api.Job, error)

// submit runs the common path of every command-issuing request:
// validation, the record of the ids it hands out, publish, and the 202
// with the job. The Idempotency-Key is handled before it by the
// idempotent middleware, on purpose: a retried "stop" must get its first
// job back even though the VM is no longer in a state that allows a stop.
func (s *Server) submit(w http.ResponseWriter, r *http.Request, _ []byte, issue issueFunc) error {
	job, err := s.issue(r.Context(), issue)
	if err != nil {
		return err
	}
	writeAccepted(w, job)
	return nil
}

func (s *Server) issue(ctx context.Context, issue issueFunc) (api.Job, error) {
	commandID := s.newID()
	now := s.now().UTC()
	rec, job, err := issue(ctx, commandID, now)
	if err != nil {
		return api.Job{}, err
	}
	telemetry.SetJob(ctx, commandID) // the request's log lines name the job it starts
	if rec.Headers == nil {
		rec.Headers = map[string]string{}
	}
	rec.Headers["command_id"] = commandID
	// Before the log: once the command is there, the ids of the answer
	// may be looked up at once (accepted.go).
	if err := s.acceptCommand(ctx, rec, job, now); err != nil {
		return api.Job{}, err
	}
	if err := s.pub.Publish(ctx, rec); err != nil {
		var ae *apiError
		if errors.As(err, &ae) {
			return api.Job{}, err
		}
		s.log.Error("publish command", "request_id", requestID(ctx), "command_id", commandID, "err", err)
		return api.Job{}, errorf(http.StatusServiceUnavailable, codeUnavailable, "the command could not be written to the log; retry (request %s)", requestID(ctx))
	}
	return job, nil
}

// vmCommand fills the fields every command carries. account is the VM's
// owner: an admin acting on a user's VM acts on that account's VM, and
// the caller names the admin.
func vmCommand(ctx context.Context, commandID, vmID, account string, now time.Time) schemas.VmCommand {
	return schemas.VmCommand{CommandID: commandID, VmID: vmID, Account: account, Origin: schemas.OriginAPI, IssuedAt: now.UnixMilli(),
		Caller: commandCaller(ctx)}
}

// commandCaller is who ctx's request acts as, as the records it writes name
// it: the key's account, the key and the request id its log line has.
func commandCaller(ctx context.Context) schemas.Caller {
	p := principalOf(ctx)
	return schemas.Caller{Account: p.Account, KeyID: p.KeyID, RequestID: requestID(ctx)}
}

// pendingJob is the job a command becomes, as known before the processor
// has seen it.
func pendingJob(ctx context.Context, commandID, vmID, typ string, now time.Time) api.Job {
	c := commandCaller(ctx)
	return api.Job{ID: commandID, VmID: vmID, Type: typ, State: api.JobPending, CreatedAt: now,
		Caller: &api.JobCaller{Account: c.Account, KeyID: c.KeyID, RequestID: c.RequestID}}
}

func commandRecord(vmID string, v any) schemas.Record {
	return schemas.Record{Topic: schemas.TopicVmCommands, Key: vmID, Value: v}
}

func writeAccepted(w http.ResponseWriter, job api.Job) {
	w.Header().Set("Location", "/v1/jobs/"+job.ID)
	writeJSON(w, http.StatusAccepted, job)
}
