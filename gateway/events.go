package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/vmplane/vmplane/readmodel"
)

// Server-Sent Event streams fed from vm.events.v1 through the Fanout:
//
//	GET /v1/events[?vm=ID]     the caller's VM and job events (one VM's with vm)
//	GET /v1/jobs/{id}/events   one job's events; the stream ends with the job
//
// Each event's id is "partition:offset"; a client that reconnects with
// Last-Event-ID gets what it missed while the gateway's ring still holds it.
// A stream takes one of its key's stream slots (Config.MaxStreamsPerKey),
// sends its headers and a first comment as soon as it is subscribed, and
// checks its key again at each heartbeat: it ends, with an "error" event,
// once the key is revoked or expired.

// streamEvents is GET /v1/events.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request) error {
	release, err := s.holdSlot(r)
	if err != nil {
		return err
	}
	defer release()
	ctx := r.Context()
	p := principalOf(ctx)
	vmID := r.URL.Query().Get("vm")
	if vmID != "" {
		if err := validID("vm", vmID); err != nil {
			return err
		}
		if _, err := s.visibleVM(ctx, vmID); err != nil {
			return err
		}
	}
	filter := func(e Event) bool {
		return (vmID == "" || e.VmID == vmID) && p.owns(e.Account)
	}
	return s.stream(w, r, filter, nil, nil)
}

// streamJob is GET /v1/jobs/{id}/events. Without Last-Event-ID it starts
// with a "job" event holding the job and its steps so far, then follows.
func (s *Server) streamJob(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	id := mux.Vars(r)["id"]
	if err := validID("job", id); err != nil {
		return err
	}
	release, err := s.holdSlot(r)
	if err != nil {
		return err
	}
	defer release()
	// A job accepted a moment ago may not be projected yet: wait for it to
	// exist (not to finish: a running job's stream starts at once).
	for deadline := time.Now().Add(5 * time.Second); ; {
		_, err := s.waitJob(ctx, id, 0, -1)
		if err == nil {
			break
		}
		var ae *apiError
		if !errors.As(err, &ae) || ae.Status != http.StatusNotFound || !time.Now().Before(deadline) {
			return err
		}
		select {
		case <-time.After(s.cfg.PollEvery):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	filter := func(e Event) bool { return e.JobID == id && principalOf(ctx).owns(e.Account) }
	first := func(ctx context.Context) (any, bool, error) {
		job, err := s.rm.Job(ctx, id)
		if errors.Is(err, readmodel.ErrNotFound) {
			return nil, false, notFound("job", id)
		}
		if err != nil {
			return nil, false, fmt.Errorf("read job %s: %w", id, err)
		}
		out := jobJSON(job)
		steps, err := s.rm.JobSteps(ctx, id)
		if err != nil {
			return nil, false, fmt.Errorf("read steps of job %s: %w", id, err)
		}
		for _, st := range steps {
			out.Steps = append(out.Steps, stepJSON(st))
		}
		return out, Finished(job.State), nil
	}
	return s.stream(w, r, filter, first, func(e Event) bool { return e.final() })
}

// stream subscribes, writes the backlog (or the snapshot of first), then
// the live events, until the client leaves, the server drains, done says
// the stream is over, or the subscriber falls behind.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, filter func(Event) bool,
	first func(context.Context) (any, bool, error), done func(Event) bool) error {
	if s.cfg.Events == nil {
		return errorf(http.StatusServiceUnavailable, codeUnavailable, "event streams are not configured on this gateway")
	}
	ctx := r.Context()
	last := r.Header.Get("Last-Event-ID")
	if last != "" {
		if _, _, ok := parseEventID(last); !ok {
			e := errorf(http.StatusUnprocessableEntity, codeValidation, "Last-Event-ID must be partition:offset, not %q", clip(last, 64))
			e.Details = map[string]any{"header": "Last-Event-ID"}
			return e
		}
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return nil
	}
	sub, backlog, gap, err := s.cfg.Events.Subscribe(ctx, filter, last)
	if err != nil {
		if ctx.Err() != nil {
			return nil // the client left while the feed started
		}
		// The feed's error names brokers and addresses: the log has it.
		s.log.Error("subscribe to events", "request_id", requestID(ctx), "err", err)
		return errorf(http.StatusServiceUnavailable, codeUnavailable, "the event feed is not available; retry (request %s)", requestID(ctx))
	}
	defer sub.Close()

	rc := http.NewResponseController(w)
	w.WriteHeader(http.StatusOK)
	// emit buffers; flush sends what is buffered.
	emit := func(format string, args ...any) bool {
		// The server's WriteTimeout would cut a stream; each write gets
		// its own deadline instead.
		_ = rc.SetWriteDeadline(time.Now().Add(30 * time.Second))
		_, err := fmt.Fprintf(w, format, args...)
		return err == nil
	}
	flush := func() bool { return rc.Flush() == nil }
	write := func(format string, args ...any) bool { return emit(format, args...) && flush() }
	send := func(e Event) bool { return emit("id: %s\nevent: %s\ndata: %s\n\n", e.ID, e.Type, e.marshal()) }
	fail := func(msg string) {
		write("event: error\ndata: %s\n\n", mustJSON(map[string]string{"message": msg}))
	}

	// The headers go out now, not with the first event, which may be a
	// heartbeat away.
	if !write(": stream open\n\n") {
		return nil
	}
	if gap {
		write("event: gap\ndata: {\"message\":\"events before the ones that follow may be missing; re-read the resource\"}\n\n")
	}
	if last == "" && first != nil {
		snap, over, err := first(ctx)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) {
				s.log.Error("stream snapshot", "request_id", requestID(ctx), "err", err)
				ae = errorf(http.StatusInternalServerError, codeInternal, "internal error (request %s)", requestID(ctx))
			}
			fail(ae.Message)
			return nil
		}
		if !write("event: job\ndata: %s\n\n", mustJSON(snap)) || over {
			return nil
		}
	}
	for _, e := range backlog {
		if !send(e) || done != nil && done(e) {
			flush()
			return nil
		}
	}
	if len(backlog) > 0 && !flush() {
		return nil
	}
	keyID := principalOf(ctx).KeyID
	beat := time.NewTicker(s.cfg.Heartbeat)
	defer beat.Stop()
	var pending []Event
	for {
		select {
		case <-sub.wake:
			// Every event waiting goes out in one flush (one write instead
			// of one per event: a stream of every VM's events carries
			// thousands a second); nothing waits for more.
			var behind bool
			pending, behind = sub.take(pending)
			for _, e := range pending {
				if !send(e) {
					return nil
				}
				if done != nil && done(e) {
					flush()
					return nil
				}
			}
			if behind {
				write("event: overflow\ndata: {\"message\":\"the stream fell behind; reconnect with Last-Event-ID\"}\n\n")
				return nil
			}
			if !flush() {
				return nil
			}
		case <-beat.C:
			if msg, ok := s.stillValid(ctx, keyID); !ok {
				fail(msg)
				return nil
			}
			if !write(": ping\n\n") {
				return nil
			}
		case <-ctx.Done():
			return nil
		case <-draining(ctx):
			return nil
		}
	}
}
