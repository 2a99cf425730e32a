package gateway

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// Server-Sent Event streams fed from vm.events.v1 through the Fanout:
//
//	GET /v1/events[?vm=ID]     the caller's VM and job events (one VM's with vm)
//	GET /v1/jobs/{id}/events   one job's events; the stream ends with the job
//
// Each event's id is "partition:offset"; a client that reconnects with
// Last-Event-ID gets what it missed while the gateway's ring still holds it,
// else a "gap" event (and a job stream its snapshot again). A job stream
// joins its snapshot and the events after it by that position (join.go).
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
	return s.stream(w, r, filter)
}

// stream subscribes, writes the backlog after Last-Event-ID, then the
// live events, until the client leaves, the server drains, the key ends
// or the subscriber falls behind.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, filter func(Event) bool) error {
	ctx := r.Context()
	last, err := s.streamHeaders(w, r)
	if err != nil || r.Method == http.MethodHead {
		return err
	}
	sub, backlog, gap, err := s.cfg.Events.Subscribe(ctx, filter, last)
	if err != nil {
		return s.subscribeFailed(ctx, err)
	}
	defer sub.Close()
	out := newSSE(w)
	if !out.write(": stream open\n\n") || gap && !out.write(gapEvent) || !out.events(backlog, nil, nil) {
		return nil
	}
	s.follow(ctx, out, sub, nil, nil)
	return nil
}

// gapEvent tells a client that events may be missing before the next.
const gapEvent = "event: gap\ndata: {\"message\":\"events before the ones that follow may be missing; re-read the resource\"}\n\n"

// streamHeaders checks that the gateway streams and that Last-Event-ID,
// which it returns, is partition:offset, and sets a stream's headers; a
// HEAD request is answered.
func (s *Server) streamHeaders(w http.ResponseWriter, r *http.Request) (last string, err error) {
	if s.cfg.Events == nil {
		return "", errorf(http.StatusServiceUnavailable, codeUnavailable, "event streams are not configured on this gateway")
	}
	last = r.Header.Get("Last-Event-ID")
	if last != "" {
		if _, _, ok := parseEventID(last); !ok {
			e := errorf(http.StatusUnprocessableEntity, codeValidation, "Last-Event-ID must be partition:offset, not %q", clip(last, 64))
			e.Details = map[string]any{"header": "Last-Event-ID"}
			return "", e
		}
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
	}
	return last, nil
}

// subscribeFailed answers a stream whose subscription failed.
func (s *Server) subscribeFailed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil // the client left while the feed started
	}
	// The feed's error names brokers and addresses: the log has it.
	s.log.Error("subscribe to events", "request_id", requestID(ctx), "err", err)
	return errorf(http.StatusServiceUnavailable, codeUnavailable, "the event feed is not available; retry (request %s)", requestID(ctx))
}

// follow sends the live events not before since (nil: all) until the
// stream ends, and at each heartbeat checks that the stream's key still
// lets it in.
func (s *Server) follow(ctx context.Context, out *sse, sub *subscription, since position, done func(Event) bool) {
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
			if !out.events(pending, since, done) {
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

// events sends the events not before since (nil: all) in one flush;
// false when the stream is over (the client left, or done says an event
// ended it).
func (o *sse) events(events []Event, since position, done func(Event) bool) bool {
	for _, e := range events {
		if since.holds(e) {
			continue // the snapshot the stream began with has it
		}
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
