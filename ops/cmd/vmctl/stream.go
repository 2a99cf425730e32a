package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/vmplane/vmplane/api"
)

// streamIdle is how long a job stream may stay silent before it is taken
// for dead: the gateway sends a comment every 15 s on an idle stream.
const streamIdle = 40 * time.Second

// streamEnd says how following a job's event stream ended.
type streamEnd int

const (
	// streamUnavailable: the gateway has no streams (503), the job is not
	// projected yet (404) or the answer was not a stream; long-poll instead.
	streamUnavailable streamEnd = iota
	// streamBroken: the stream stopped before the job ended (gap,
	// overflow, gateway restart, silence); long-poll the rest.
	streamBroken
	// streamJobEnded: the job's final event arrived; a poll fetches the
	// finished job for the final line.
	streamJobEnded
)

// sseEvent is one Server-Sent Event.
type sseEvent struct {
	id, name, data string
}

// recheckEvery is how often a wait reads the job itself while its stream
// is open.
var recheckEvery = 5 * time.Second

// followStream follows GET /v1/jobs/{id}/events until the job ends, the
// stream breaks or ctx ends, showing every step through w.
//
// The stream alone is not trusted to say the job ended: heartbeats keep a
// stream open whose final event never comes (a gateway that missed it),
// and a wait would then last until its timeout. So the job is read once
// the stream is open and every recheckEvery after, and a job that has
// ended ends the stream; the long-poll that follows prints its end.
func (a *cli) followStream(ctx context.Context, w *watch) streamEnd {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.c.base+"/v1/jobs/"+url.PathEscape(w.id)+"/events", nil)
	if err != nil {
		return streamUnavailable
	}
	req.Header.Set("Accept", "text/event-stream")
	if a.c.key != "" {
		req.Header.Set("Authorization", "Bearer "+a.c.key)
	}
	resp, err := a.c.http.Do(req)
	if err != nil {
		return streamUnavailable
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return streamUnavailable
	}
	var ended atomic.Bool
	go a.recheck(ctx, w.id, func() { ended.Store(true); cancel() })
	// A silent stream is a dead one: cancelling the request ends the read.
	idle := time.AfterFunc(streamIdle, cancel)
	defer idle.Stop()
	end := streamBroken
	_ = readSSE(resp.Body, func() { idle.Reset(streamIdle) }, func(e sseEvent) bool {
		var over bool
		end, over = w.onEvent(e)
		return !over
	})
	if ended.Load() {
		return streamJobEnded
	}
	return end
}

// recheck reads job id at once and then every recheckEvery until ctx ends
// or the job has ended, when it calls ended.
func (a *cli) recheck(ctx context.Context, id string, ended func()) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var j api.Job
		cctx, cancel := context.WithTimeout(ctx, requestTimeout)
		// No retries: the next look is recheckEvery away anyway.
		err := a.c.send(cctx, http.MethodGet, "/v1/jobs/"+url.PathEscape(id), nil, nil, &j, 0)
		cancel()
		if err == nil && api.Finished(j.State) {
			ended()
			return
		}
		t.Reset(recheckEvery)
	}
}

// readSSE calls each for every event of r until each returns false or r
// ends; alive is called on every line, comments included.
func readSSE(r interface{ Read([]byte) (int, error) }, alive func(), each func(sseEvent) bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var e sseEvent
	var data []string
	for sc.Scan() {
		alive()
		line := sc.Text()
		if line == "" {
			if e.name != "" || len(data) > 0 {
				e.data = strings.Join(data, "\n")
				if e.name == "" {
					e.name = "message"
				}
				if !each(e) {
					return nil
				}
			}
			e, data = sseEvent{}, nil
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			e.name = value
		case "data":
			data = append(data, value)
		case "id":
			e.id = value
		}
	}
	return sc.Err()
}

// onEvent shows one event of the job's stream and says whether the stream
// is over for vmctl.
func (w *watch) onEvent(e sseEvent) (streamEnd, bool) {
	switch e.name {
	case "job":
		var j api.Job
		if err := json.Unmarshal([]byte(e.data), &j); err != nil {
			return streamBroken, true
		}
		w.job(j)
		if api.Finished(j.State) {
			return streamJobEnded, true
		}
		return streamBroken, false
	case "gap", "overflow", "error":
		return streamBroken, true
	}
	var ev api.Event
	if err := json.Unmarshal([]byte(e.data), &ev); err != nil {
		return streamBroken, true
	}
	switch ev.Type {
	case "JobStepped":
		w.step(api.JobStep{
			Seq: int32(num(ev.Data["seq"])), TaskState: str(ev.Data["task_state"]),
			Step: str(ev.Data["step"]), Text: str(ev.Data["text"]),
			At: time.UnixMilli(int64(num(ev.Data["at"]))),
		})
	case "JobAccepted":
		state := "running"
		if b, _ := ev.Data["queued"].(bool); b {
			state = "queued"
		}
		w.state(state, "")
	case "VmStateChanged":
		w.state("", str(ev.Data["task_state"]))
	case "JobSucceeded", "JobFailed", "JobCancelled", "JobRejected":
		w.state(strings.ToLower(strings.TrimPrefix(ev.Type, "Job")), "")
		return streamJobEnded, true
	}
	return streamBroken, false
}

func str(v any) string {
	if v == nil {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}

func num(v any) float64 {
	f, _ := v.(float64)
	return f
}
