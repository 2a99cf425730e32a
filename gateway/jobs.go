package gateway

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/readmodel"
)

// maxWait bounds ?wait= so that a long-poll fits within proxies' and our
// own write timeouts.
const maxWait = 60 * time.Second

// getJob is GET /v1/jobs/{id}[?wait=30s][&steps=1][&after_step=N]. With
// wait it long-polls until the job is finished or the wait ends, then
// answers the job as it is; with after_step too, it also answers as soon as
// the job has a step numbered above N, so that a client can show progress
// without polling fast. A 202 answers before the processor and projector
// have seen the command: until they have, the job is the pending one the
// 202 answered, as it was accepted (accepted.go). A job unknown to both is
// a 404 without wait, and waited for with it.
func (s *Server) getJob(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	id := mux.Vars(r)["id"]
	wait, err := waitOf(r)
	if err != nil {
		return err
	}
	afterStep := int32(-1)
	if v := r.URL.Query().Get("after_step"); v != "" {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 0 {
			e := errorf(http.StatusUnprocessableEntity, codeValidation, "after_step must be a step number from 0 to %d, not %q", math.MaxInt32, clip(v, 32))
			e.Details = map[string]any{"field": "after_step"}
			return e
		}
		afterStep = int32(n)
	}
	if wait > 0 {
		release, err := s.holdSlot(r)
		if err != nil {
			return err
		}
		defer release()
	}
	job, err := s.waitJob(ctx, id, wait, afterStep)
	if err != nil {
		return err
	}
	out := jobJSON(job)
	steps, err := s.rm.JobSteps(ctx, id)
	if err != nil {
		return fmt.Errorf("read steps of job %s: %w", id, err)
	}
	if err := s.progressOf(ctx, &out, steps); err != nil {
		return err
	}
	if b, _ := strconv.ParseBool(r.URL.Query().Get("steps")); b {
		out.Steps = make([]api.JobStep, len(steps))
		for i, st := range steps {
			out.Steps[i] = stepJSON(st)
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// waitOf reads ?wait=: a duration (30s) or a number of seconds, of which
// at most maxWait is waited; a larger one, however large, waits maxWait.
func waitOf(r *http.Request) (time.Duration, error) {
	v := r.URL.Query().Get("wait")
	if v == "" {
		return 0, nil
	}
	bad := func(format string, args ...any) (time.Duration, error) {
		e := errorf(http.StatusUnprocessableEntity, codeValidation, format, args...)
		e.Details = map[string]any{"field": "wait"}
		return 0, e
	}
	if strings.HasPrefix(v, "-") {
		return bad("wait must not be negative")
	}
	if isDigits(v) {
		// A bare number is seconds; beyond what a duration holds is still
		// "as long as allowed".
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n > uint64(maxWait/time.Second) {
			return maxWait, nil
		}
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		if durationShaped(v) {
			return maxWait, nil // more hours than a duration holds
		}
		return bad("wait must be a duration such as 30s or a number of seconds (at most %v is waited), not %q", maxWait, clip(v, 32))
	}
	return min(d, maxWait), nil
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// durationShaped says whether s is whole numbers with units, such as 9999999999h:
// time.ParseDuration refuses it only for being too large.
func durationShaped(s string) bool {
	for s != "" {
		i := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == 0 {
			return false
		}
		s = s[i:]
		unit := ""
		for _, u := range []string{"ns", "us", "µs", "ms", "s", "m", "h"} {
			if strings.HasPrefix(s, u) && len(u) > len(unit) {
				unit = u
			}
		}
		if unit == "" {
			return false
		}
		s = s[len(unit):]
	}
	return true
}

// JobWatcher says when the read model's job may have changed: the channel
// receives after a commit that ended it or, with steps, added steps to it
// (readmodel.JobWatch). It receives the ended job's committed row when it
// has it, else nil: read the row again.
type JobWatcher interface {
	Watch(id string, steps bool) (<-chan *readmodel.Job, func())
}

// waitJob reads the job until it is finished, has a step above afterStep
// (when not -1), or wait has passed: again whenever JobChanges says its row
// changed, and every PollEvery in any case; when JobChanges hands over the
// ended row, that row is the answer, without a read. The read model (and
// the accepted ids beside it) is the only source, so any gateway instance
// can answer any poll.
func (s *Server) waitJob(ctx context.Context, id string, wait time.Duration, afterStep int32) (readmodel.Job, error) {
	p := principalOf(ctx)
	deadline := time.Now().Add(wait)
	var changed <-chan *readmodel.Job
	if s.cfg.JobChanges != nil && wait > 0 {
		// Watch before the first read: a commit in between is not missed.
		var stop func()
		changed, stop = s.cfg.JobChanges.Watch(id, afterStep >= 0)
		defer stop()
	}
	tick := time.NewTicker(s.cfg.PollEvery)
	defer tick.Stop()
	end := time.NewTimer(wait)
	defer end.Stop()
	var told *readmodel.Job // the row JobChanges handed over, if any
	for {
		var job readmodel.Job
		var err error
		if told != nil {
			job, told = *told, nil
		} else {
			job, err = s.job(ctx, id)
		}
		switch {
		case err == nil && !p.owns(job.Account):
			return readmodel.Job{}, notFound("job", id)
		case err == nil && (api.Finished(job.State) || !time.Now().Before(deadline)):
			return job, nil
		case err == nil && afterStep >= 0:
			steps, err := s.rm.JobSteps(ctx, id)
			if err != nil {
				return readmodel.Job{}, fmt.Errorf("read steps of job %s: %w", id, err)
			}
			if len(steps) > 0 && slices.MaxFunc(steps, bySeq).Seq > afterStep {
				return job, nil
			}
		case errors.Is(err, readmodel.ErrNotFound):
			if !time.Now().Before(deadline) {
				return readmodel.Job{}, notFound("job", id)
			}
		case err != nil:
			return readmodel.Job{}, fmt.Errorf("read job %s: %w", id, err)
		}
		select {
		case <-tick.C:
		case told = <-changed:
		case <-end.C:
		case <-ctx.Done():
			return readmodel.Job{}, ctx.Err()
		case <-draining(ctx):
			// Shutting down: answer with what there is now.
			deadline = time.Now()
		}
	}
}

func bySeq(a, b readmodel.JobStep) int { return int(a.Seq) - int(b.Seq) }
