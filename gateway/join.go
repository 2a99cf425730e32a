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

// A job stream (GET /v1/jobs/{id}/events) starts with a snapshot of the
// job read from Postgres and goes on with the job's events from the
// fanout. The two are joined by position in vm.events.v1, never by their
// timing: the projector commits each batch's rows with its offsets, so a
// snapshot read with the projector's next offset of each partition holds
// exactly the events before it, and the stream sends, of the events it
// gets from the fanout, exactly those at or after it.
//
// For that the stream subscribes first, taking the job's events the ring
// still holds (subscribeAll); with what arrives after, they are every
// event from cover on. The snapshot read next is usually at or past
// cover, since a feed starts where the read model is (feed.go); events
// the fanout saw before the snapshot but the projector had not applied
// then (the end of a job that failed in 3 ms) are sent after it, and
// those the projector applied before the feed delivered them (Postgres
// ahead) are dropped. A snapshot behind cover (the ring dropped events
// the projector has not applied yet) is read again until the projector
// catches up, for up to joinWait; then the stream says "gap" and goes on
// with what it has. A snapshot that shows the job ended ends the stream.

// joinWait bounds how long a job stream waits for the projector to reach
// the events its subscription holds.
const joinWait = 10 * time.Second

// position is a place in vm.events.v1: the next offset of each partition
// (0 for a partition it does not name).
type position map[int32]int64

// reaches says whether p is at or past q in every partition.
func (p position) reaches(q position) bool {
	for part, next := range q {
		if p[part] < next {
			return false
		}
	}
	return true
}

// holds says whether e comes before p: a snapshot at p has it.
func (p position) holds(e Event) bool { return e.offset < p[e.partition] }

// streamJob is GET /v1/jobs/{id}/events. A stream that does not resume
// from the ring starts with a "job" event holding the job and its steps as
// the read model has them, then follows its events after those (join
// above); it ends after the job's end, which it sends once: in the
// snapshot, or as the job's final event.
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
	if err := s.awaitJob(ctx, id); err != nil {
		return err
	}
	last, err := s.streamHeaders(w, r)
	if err != nil || r.Method == http.MethodHead {
		return err
	}
	filter := func(e Event) bool { return e.JobID == id && principalOf(ctx).owns(e.Account) }
	sub, backlog, cover, err := s.cfg.Events.subscribeAll(ctx, filter)
	if err != nil {
		return s.subscribeFailed(ctx, err)
	}
	defer sub.Close()
	out := newSSE(w)
	if !out.write(": stream open\n\n") {
		return nil
	}
	since, resumed := resumeAt(last, cover)
	if !resumed {
		var ok bool
		if since, ok = s.sendSnapshot(ctx, out, id, cover, last != ""); !ok {
			return nil
		}
	}
	if !out.events(backlog, since, Event.final) {
		return nil
	}
	s.follow(ctx, out, sub, since, Event.final)
	return nil
}

// awaitJob waits until the job exists: a job accepted a moment ago is
// found as it was accepted; one whose record this gateway cannot see
// (another's in-memory store) is waited for until it exists (not until it
// finishes: a running job's stream starts at once).
func (s *Server) awaitJob(ctx context.Context, id string) error {
	for deadline := time.Now().Add(5 * time.Second); ; {
		_, err := s.waitJob(ctx, id, 0, -1)
		if err == nil {
			return nil
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
}

// resumeAt says where a job stream resuming after last (partition:offset)
// goes on, and whether it can: when what it holds of last's partition
// starts at or before the event after last. A job's events are all of one
// partition (they are keyed by its VM, host or lease).
func resumeAt(last string, cover position) (position, bool) {
	if last == "" {
		return nil, false
	}
	p, o, ok := parseEventID(last)
	if !ok || o+1 < cover[p] {
		return nil, false
	}
	return position{p: o + 1}, true
}

// sendSnapshot sends the "job" event of a snapshot joined to cover
// (joinSnapshot), after a "gap" event when the stream could not resume
// (missed) or the projector did not catch up, and returns the snapshot's
// position; false when the stream is over: the job had ended, the client
// left, or the snapshot could not be read (an "error" event says so).
func (s *Server) sendSnapshot(ctx context.Context, out *sse, id string, cover position, missed bool) (position, bool) {
	job, steps, at, err := s.joinSnapshot(ctx, id, cover)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false
		}
		var ae *apiError
		if !errors.As(err, &ae) {
			s.log.Error("stream snapshot", "request_id", requestID(ctx), "err", err)
			ae = errorf(http.StatusInternalServerError, codeInternal, "internal error (request %s)", requestID(ctx))
		}
		out.fail(ae.Message)
		return nil, false
	}
	// A stream that could not resume, or a projector that did not catch
	// up in time: events before the ones that follow may be missing.
	if (missed || !at.reaches(cover)) && !out.write(gapEvent) {
		return nil, false
	}
	snap := jobJSON(job)
	for _, st := range steps {
		snap.Steps = append(snap.Steps, stepJSON(st))
	}
	if !out.write("event: job\ndata: %s\n\n", mustJSON(snap)) {
		return nil, false
	}
	return at, !api.Finished(job.State)
}

// joinSnapshot reads the job, its steps and the read model's position in
// one snapshot, again every PollEvery while the position is behind cover,
// for up to s.joinWait. A job the read model has no row for is the one its
// command's 202 handed out, as it was accepted: none of its events is
// before the snapshot's position.
func (s *Server) joinSnapshot(ctx context.Context, id string, cover position) (readmodel.Job, []readmodel.JobStep, position, error) {
	deadline := time.Now().Add(s.joinWait)
	for {
		var snap readmodel.JobSnapshot
		read := func(ctx context.Context, id string) (readmodel.Job, error) {
			var err error
			if snap, err = s.rm.JobSnapshot(ctx, id); err != nil {
				return readmodel.Job{}, err
			}
			if snap.Job == nil {
				return readmodel.Job{}, readmodel.ErrNotFound
			}
			return *snap.Job, nil
		}
		job, err := lookUp(ctx, s.accepted, readmodel.AcceptedJob, id, read)
		switch {
		case errors.Is(err, readmodel.ErrNotFound):
			return readmodel.Job{}, nil, nil, notFound("job", id)
		case err != nil:
			return readmodel.Job{}, nil, nil, fmt.Errorf("read job %s: %w", id, err)
		case !principalOf(ctx).owns(job.Account):
			return readmodel.Job{}, nil, nil, notFound("job", id)
		}
		at := position(snap.Next)
		if at.reaches(cover) || !time.Now().Before(deadline) {
			return job, snap.Steps, at, nil
		}
		select {
		case <-time.After(s.cfg.PollEvery):
		case <-ctx.Done():
			return readmodel.Job{}, nil, nil, ctx.Err()
		case <-draining(ctx):
			return job, snap.Steps, at, nil
		}
	}
}
