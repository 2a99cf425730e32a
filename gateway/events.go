package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/vmplane/vmplane/api"
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
	// A job accepted a moment ago is found as it was accepted; one whose
	// record this gateway cannot see (another's in-memory store) is waited
	// for until it exists (not until it finishes: a running job's stream
	// starts at once).
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
		job, err := s.job(ctx, id)
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
		return out, api.Finished(job.State), nil
	}
	return s.stream(w, r, filter, first, func(e Event) bool { return e.final() })
}

// stream subscribes, writes the backlog (or the snapshot of first), then
// the live events, until the client leaves, the server drains, done says
// the stream is over, the key ends or the subscriber falls behind.
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
	out := newSSE(w)
	if !s.streamStart(ctx, out, gap, last == "", first) || !out.backlog(backlog, done) {
		return nil
	}
	s.follow(ctx, out, sub, done)
	return nil
}

// streamStart sends the headers at once (the first event may be a
// heartbeat away), the gap notice, and the snapshot of first for a stream
// that does not resume; false when the stream is over.
func (s *Server) streamStart(ctx context.Context, out *sse, gap, fresh bool, first func(context.Context) (any, bool, error)) bool {
	if !out.write(": stream open\n\n") {
		return false
	}
	if gap {
		out.write("event: gap\ndata: {\"message\":\"events before the ones that follow may be missing; re-read the resource\"}\n\n")
	}
	if !fresh || first == nil {
		return true
	}
	snap, over, err := first(ctx)
	if err != nil {
		var ae *apiError
		if !errors.As(err, &ae) {
			s.log.Error("stream snapshot", "request_id", requestID(ctx), "err", err)
			ae = errorf(http.StatusInternalServerError, codeInternal, "internal error (request %s)", requestID(ctx))
		}
		out.fail(ae.Message)
		return false
	}
	return out.write("event: job\ndata: %s\n\n", mustJSON(snap)) && !over
}

// follow sends the live events until the stream ends, and at each
// heartbeat checks that the stream's key still lets it in.
func (s *Server) follow(ctx context.Context, out *sse, sub *subscription, done func(Event) bool) {
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
			if !out.backlog(pending, done) {
				return
			}
			if behind {
				out.write("event: overflow\ndata: {\"message\":\"the stream fell behind; reconnect with Last-Event-ID\"}\n\n")
				return
			}
		case <-beat.C:
			if msg, ok := s.stillValid(ctx, keyID); !ok {
				out.fail(msg)
				return
			}
			if !out.write(": ping\n\n") {
				return
			}
		case <-ctx.Done():
			return
		case <-draining(ctx):
			return
		}
	}
}

// sse writes one Server-Sent Event stream.
type sse struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func newSSE(w http.ResponseWriter) *sse {
	w.WriteHeader(http.StatusOK)
	return &sse{w: w, rc: http.NewResponseController(w)}
}

// emit buffers; it says whether the client still reads.
func (o *sse) emit(format string, args ...any) bool {
	// The server's WriteTimeout would cut a stream; each write gets its
	// own deadline instead.
	_ = o.rc.SetWriteDeadline(time.Now().Add(30 * time.Second))
	_, err := fmt.Fprintf(o.w, format, args...)
	return err == nil
}

func (o *sse) flush() bool { return o.rc.Flush() == nil }

func (o *sse) write(format string, args ...any) bool { return o.emit(format, args...) && o.flush() }

func (o *sse) fail(msg string) {
	o.write("event: error\ndata: %s\n\n", mustJSON(map[string]string{"message": msg}))
}

// backlog sends events in one flush; false when the stream is over (the
// client left, or done says an event ended it).
func (o *sse) backlog(events []Event, done func(Event) bool) bool {
	for _, e := range events {
		if !o.emit("id: %s\nevent: %s\ndata: %s\n\n", e.ID, e.Type, e.marshal()) {
			return false
		}
		if done != nil && done(e) {
			o.flush()
			return false
		}
	}
	return len(events) == 0 || o.flush()
}
