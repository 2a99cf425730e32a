package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/projectors/journal"
	"github.com/vmplane/vmplane/readmodel"
)

// History is what the gateway reads from ClickHouse: the full event history
// of VMs, the journal of jobs Postgres no longer has, and analysts' queries.
// projectors/journal's History implements it.
type History interface {
	VmHistory(ctx context.Context, vmID string, limit int) ([]journal.VmEvent, error)
	VmAt(ctx context.Context, vmID string, at time.Time) (journal.VmSnapshot, error)
	JobJournal(ctx context.Context, jobID string) ([]journal.Entry, error)
	// Query runs SQL read-only (as ClickHouse's analyst user of the
	// journal's database), within limits; a refusal the analyst can act on
	// is a *journal.QueryError.
	Query(ctx context.Context, sql string, maxRows int) (journal.Table, error)
}

// maxQueryRows bounds what one analyst query sends back.
const maxQueryRows = 10_000

func (s *Server) history() (History, error) {
	if s.cfg.History == nil {
		return nil, errorf(http.StatusServiceUnavailable, codeUnavailable, "the event history (ClickHouse) is not configured")
	}
	return s.cfg.History, nil
}

// vmHistory is GET /v1/vms/{id}/history[?at=RFC3339]: every event of the
// VM with its time, job and reason, or with at the VM as it was then. A VM
// the read model no longer has (expunged) is answered from the history for
// an admin, or for a user of the account its events name.
func (s *Server) vmHistory(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	id := mux.Vars(r)["id"]
	h, err := s.history()
	if err != nil {
		return err
	}
	// at=0001-01-01T00:00:00Z is Go's zero time: whether an instant was
	// asked for is kept apart from its value.
	var at time.Time
	v := r.URL.Query().Get("at")
	asOf := v != ""
	if asOf {
		if at, err = time.Parse(time.RFC3339Nano, v); err != nil {
			e := errorf(http.StatusUnprocessableEntity, codeValidation, "at must be an RFC 3339 time, not %q", clip(v, 40))
			e.Details = map[string]any{"field": "at"}
			return e
		}
		if at.Before(time.Unix(0, 0)) {
			e := errorf(http.StatusUnprocessableEntity, codeValidation, "at must be 1970-01-01T00:00:00Z or later, not %s", v)
			e.Details = map[string]any{"field": "at"}
			return e
		}
	}
	_, err = s.vm(ctx, id)
	known := err == nil
	if err != nil && !errors.Is(err, readmodel.ErrNotFound) {
		return fmt.Errorf("read vm %s: %w", id, err)
	}
	if known {
		// The read model decides who may see a VM it has.
		if _, err := s.visibleVM(ctx, id); err != nil {
			return err
		}
	}
	p := principalOf(ctx)
	if asOf {
		snap, err := h.VmAt(ctx, id, at)
		if errors.Is(err, journal.ErrNoHistory) || err == nil && !known && !p.owns(snap.State.Account) {
			return errorf(http.StatusNotFound, codeNotFound, "VM %s has no history at or before %s", id, at.UTC().Format(time.RFC3339))
		}
		if err != nil {
			return fmt.Errorf("history of vm %s: %w", id, err)
		}
		writeJSON(w, http.StatusOK, asOfJSON(snap))
		return nil
	}
	events, err := h.VmHistory(ctx, id, 0)
	if err != nil {
		return fmt.Errorf("history of vm %s: %w", id, err)
	}
	if !known && (len(events) == 0 || !p.admin() && !eventsOwnedBy(events, p.Account)) {
		return notFound("VM", id)
	}
	out := api.List[api.VmHistoryEvent]{Items: make([]api.VmHistoryEvent, len(events))}
	for i, e := range events {
		out.Items[i] = api.VmHistoryEvent{At: e.At, Type: e.Type, JobID: e.JobID, VmState: e.VmState, TaskState: e.TaskState,
			PowerState: e.PowerState, HostID: e.HostID, Reason: e.Reason}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// eventsOwnedBy says whether the VM's events name account as its owner.
func eventsOwnedBy(events []journal.VmEvent, account string) bool {
	for _, e := range events {
		var o struct{ Account string }
		if json.Unmarshal([]byte(e.Payload), &o) == nil && o.Account != "" {
			return o.Account == account
		}
	}
	return false
}

func asOfJSON(s journal.VmSnapshot) api.VmAsOf {
	v := s.State
	return api.VmAsOf{
		At: s.At, Since: s.Since, PendingJob: s.PendingJob, PendingJobs: v.PendingJobs, PowerHost: v.PowerHost, Reason: v.Reason,
		VM: api.VM{
			ID: v.VmID, Name: v.Name, Account: v.Account, Offering: v.Offering.Name,
			VmState: v.VmState, TaskState: v.TaskState, PowerState: v.PowerState, LegacyState: v.LegacyState,
			HostID: v.HostID, AllowedActions: nonNil(v.AllowedActions), HA: v.HA,
			CreatedAt: time.UnixMilli(v.CreatedAt).UTC(), UpdatedAt: time.UnixMilli(v.UpdatedAt).UTC(),
			CPU: v.Offering.CPU, MemoryMB: v.Offering.MemoryMB, ZoneID: v.ZoneID, Epoch: v.Epoch, JobID: v.JobID,
			// VmStateChanged carries no volumes or NICs: the history's
			// VolumeChanged and NicChanged events say what they were.
			Volumes: []api.Volume{}, Nics: []api.Nic{},
		},
	}
}

// jobJournalAnywhere is GET /v1/jobs/{id}/journal: the steps Postgres keeps
// while it has the job, else the whole journal from ClickHouse, which keeps
// every job.
func (s *Server) jobJournalAnywhere(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	id := mux.Vars(r)["id"]
	_, err := s.job(ctx, id)
	if err == nil || !errors.Is(err, readmodel.ErrNotFound) || s.cfg.History == nil {
		return s.jobJournal(w, r)
	}
	entries, err := s.cfg.History.JobJournal(ctx, id)
	if err != nil {
		return fmt.Errorf("journal of job %s: %w", id, err)
	}
	if len(entries) == 0 || !principalOf(ctx).owns(entries[0].Account) {
		return notFound("job", id)
	}
	out := api.List[api.JournalLine]{Items: make([]api.JournalLine, len(entries))}
	for i, e := range entries {
		out.Items[i] = api.JournalLine{Seq: int32(e.Seq), Kind: e.Kind, TaskState: e.TaskState, Step: e.Step, Text: e.Text,
			Reason: e.Reason, VmState: e.VmState, HostID: hostOfObj(e.Obj), At: e.At}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func hostOfObj(obj string) string {
	var o struct {
		HostID string `json:"host_id"`
	}
	_ = json.Unmarshal([]byte(obj), &o)
	return o.HostID
}

// journalQuery is POST /v1/journal/query {"sql": "..."} (admin): an
// analyst's query, run by ClickHouse's read-only analyst user.
func (s *Server) journalQuery(w http.ResponseWriter, r *http.Request) error {
	h, err := s.history()
	if err != nil {
		return err
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var req api.QueryRequest
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	if strings.TrimSpace(req.SQL) == "" {
		e := errorf(http.StatusUnprocessableEntity, codeValidation, "sql is required")
		e.Details = map[string]any{"field": "sql"}
		return e
	}
	t, err := h.Query(r.Context(), req.SQL, maxQueryRows)
	if err != nil {
		return s.queryError(r.Context(), err)
	}
	writeJSON(w, http.StatusOK, api.QueryResult{Columns: t.Columns, Rows: t.Rows, Truncated: t.Truncated})
	return nil
}

// Error codes of analysts' queries.
const (
	// codeQueryTimeout: the query ran out of time and was stopped (504).
	codeQueryTimeout = "query_timeout"
	// codeQueryLimit: a limit of the analyst's profile or of the answer
	// refused the query (422).
	codeQueryLimit = "query_limit"
)

// queryError answers a failed analyst query. ClickHouse's refusal
// (journal.QueryError: syntax, unknown table, readonly, a limit) is the
// analyst's to read, with no address in it; anything else is the
// operator's, logged and answered without internals.
func (s *Server) queryError(ctx context.Context, err error) error {
	var qe *journal.QueryError
	switch {
	case errors.As(err, &qe) && qe.Timeout:
		return errorf(http.StatusGatewayTimeout, codeQueryTimeout, "%s; narrow the query (a range of ts, fewer tables)", qe.Message)
	case errors.As(err, &qe) && qe.Limit:
		return errorf(http.StatusUnprocessableEntity, codeQueryLimit, "%s", qe.Message)
	case errors.As(err, &qe):
		return errorf(http.StatusUnprocessableEntity, codeInvalidRequest, "%s", qe.Message)
	}
	s.log.Error("analyst query", "request_id", requestID(ctx), "err", err)
	if errors.Is(err, journal.ErrNoAnalyst) {
		return errorf(http.StatusServiceUnavailable, codeUnavailable,
			"ClickHouse has no analyst user for the journal's database (docs/operations.md, Analysts); request %s", requestID(ctx))
	}
	return errorf(http.StatusServiceUnavailable, codeUnavailable, "the event history (ClickHouse) did not answer; retry (request %s)", requestID(ctx))
}

var _ History = (*journal.History)(nil)
