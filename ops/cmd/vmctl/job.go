package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/pflag"

	"github.com/vmplane/vmplane/api"
)

// jobFailed is the error of a job that ended other than succeeded; the
// final line printed already explains it.
type jobFailed struct{ j api.Job }

func (e *jobFailed) Error() string { return fmt.Sprintf("job %s %s", e.j.ID, e.j.State) }

// jobCommands follow, list and cancel jobs.
var jobCommands = []spec{
	{path: "job list", short: "List jobs (a user's own; every job for an admin)", cmd: jobList, shows: api.Job{}},
	{path: "job get", args: []string{"ID"}, short: "Show a job and its steps", cmd: jobGet, shows: api.Job{}},
	{path: "job wait", args: []string{"ID"}, short: "Follow a job step by step until it ends", cmd: jobWait, shows: api.Job{}},
	{path: "job cancel", args: []string{"ID"}, short: "Cancel a queued or running job", cmd: jobCancel, shows: api.Job{}},
}

// jobList is vmctl job list [--vm ID] [--state S] [--by-key KEY_ID].
func jobList(a *cli, fs *pflag.FlagSet) runner {
	q := filterFlags(fs, filter{name: "vm", usage: "only this VM's jobs"},
		filter{name: "state", usage: "only jobs in this state: pending, running, succeeded, failed, cancelled or rejected"},
		filter{name: "by-key", usage: "only jobs asked for with this API key id (the caller's key_id)", param: "key"})
	return func(ctx context.Context, _ []string) error {
		return listAll(ctx, a, "/v1/jobs?"+q.Encode(), func(w io.Writer, rows []api.Job) error {
			fmt.Fprintln(w, "ID\tVM\tTYPE\tSTATE\tTASK\tCREATED\tTOOK\tREASON")
			for _, j := range rows {
				took := "-"
				if j.FinishedAt != nil {
					took = j.FinishedAt.Sub(j.CreatedAt).Round(time.Millisecond).String()
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", j.ID, orDash(j.VmID), j.Type, j.State, orDash(j.TaskState),
					j.CreatedAt.Format(time.RFC3339), took, orDash(oneLine(j.Reason)))
			}
			return nil
		})
	}
}

func jobGet(a *cli, fs *pflag.FlagSet) runner {
	steps := fs.Bool("steps", true, "include the job's steps")
	return func(ctx context.Context, pos []string) error {
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		q := url.Values{}
		if *steps {
			q.Set("steps", "1")
		}
		var raw json.RawMessage
		if err := a.c.call(ctx, http.MethodGet, "/v1/jobs/"+url.PathEscape(pos[0]), q, nil, &raw); err != nil {
			return err
		}
		return a.emit(raw, func(w io.Writer) error {
			j, err := decodeRaw[api.Job](raw)
			if err == nil {
				printJob(w, j)
			}
			return err
		})
	}
}

func jobWait(a *cli, fs *pflag.FlagSet) runner {
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long")
	return func(ctx context.Context, pos []string) error {
		return a.waitJob(ctx, pos[0], *timeout)
	}
}

// pollWait is the ?wait= of each long-poll.
const pollWait = 30 * time.Second

// rateLimitedPause is how long a wait refused for the key's open streams
// and long-polls pauses before it asks again; the gateway says 5 s.
var rateLimitedPause = 5 * time.Second

// waitJob follows the job until it finishes or timeout passes: live from
// its event stream (GET /v1/jobs/{id}/events) while the gateway serves it,
// printing each step as it happens under a redrawn status line on a
// terminal, then by long-poll (GET /v1/jobs/{id}?wait=&after_step=) for
// whatever the stream did not carry: the finished job of the final line,
// steps missed when a stream broke, a gateway without streams. A job the
// read model does not know yet is waited for: the command may still be on
// its way through Kafka.
func (a *cli) waitJob(ctx context.Context, id string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	w := a.newWatch(id)
	defer w.done()
	a.followStream(ctx, w)
	return a.pollJob(ctx, w, timeout)
}

// pollJob long-polls the job until it finishes, after_step making the
// gateway answer on each new step instead of only at the end.
func (a *cli) pollJob(ctx context.Context, w *watch, timeout time.Duration) error {
	id := w.id
	for {
		if errors.Is(ctx.Err(), context.Canceled) {
			return ctx.Err()
		}
		wait := min(pollWait, time.Until(deadlineOf(ctx)))
		if wait < 0 {
			wait = 0
		}
		q := url.Values{"wait": {wait.Round(time.Millisecond).String()}, "steps": {"1"}, "after_step": {fmt.Sprint(w.after())}}
		var raw json.RawMessage
		// The poll's own context outlives the wait a little so that the
		// server, not the client, ends a poll; an interrupt still ends it.
		pctx, pcancel := context.WithTimeout(context.WithoutCancel(ctx), wait+10*time.Second)
		stop := context.AfterFunc(ctx, func() {
			if errors.Is(ctx.Err(), context.Canceled) {
				pcancel()
			}
		})
		// No retries here: a 429 is waited out below, as long as the wait lasts.
		err := a.c.send(pctx, http.MethodGet, "/v1/jobs/"+url.PathEscape(id), q, nil, &raw, 0)
		stop()
		pcancel()
		switch {
		case err == nil:
			j, err := decodeRaw[api.Job](raw)
			if err != nil {
				return err
			}
			w.job(j)
			if api.Finished(j.State) {
				w.done()
				return a.finalLine(j, raw, time.Since(w.start))
			}
		case isNotFound(err):
			// Not projected yet: keep waiting.
		case isRateLimited(err):
			// The key holds its most streams and long-polls open (many
			// waits at once): the job goes on, so wait and ask again.
			select {
			case <-ctx.Done():
			case <-time.After(rateLimitedPause):
			}
		case errors.Is(ctx.Err(), context.Canceled):
			return ctx.Err()
		default:
			return err
		}
		if ctx.Err() != nil {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				state := "not seen yet"
				if last, ok := w.lastJob(); ok {
					state = last.State
				}
				w.done()
				return fmt.Errorf("job %s still %s after %s", id, state, timeout)
			}
			return ctx.Err()
		}
	}
}

func deadlineOf(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// finalLine prints the outcome; a job that did not succeed is an error
// (exit code 1).
func (a *cli) finalLine(j api.Job, raw json.RawMessage, waited time.Duration) error {
	took := waited
	if j.FinishedAt != nil && !j.CreatedAt.IsZero() {
		took = j.FinishedAt.Sub(j.CreatedAt)
	}
	if !a.plain() {
		if err := a.emit(raw, nil); err != nil {
			return err
		}
	} else {
		line := fmt.Sprintf("job %s %s %s in %s", j.ID, j.Type, j.State, took.Round(time.Millisecond))
		if j.Reason != "" {
			line += ": " + j.Reason
			if j.Detail != "" {
				line += " (" + j.Detail + ")"
			}
		}
		fmt.Fprintln(a.stdout, line)
	}
	if j.State != api.JobSucceeded {
		return &jobFailed{j}
	}
	return nil
}

// jobCancel is job cancel ID: POST /v1/jobs/{id}/cancel. The gateway
// answers with the job as it is; the processor stops it at its next safe
// point, so with --wait it is followed to its end, where cancelled is the
// outcome asked for (exit 0). A job whose agent command finished first may
// end otherwise: its final line says how, and the exit code is 1.
func jobCancel(a *cli, fs *pflag.FlagSet) runner {
	reason := fs.String("reason", "", "why, quoted in the job's end")
	wait := waitFlags(fs)
	return func(ctx context.Context, pos []string) error {
		body := map[string]any{}
		if *reason != "" {
			body["reason"] = *reason
		}
		cctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		var raw json.RawMessage
		if err := a.c.call(cctx, http.MethodPost, "/v1/jobs/"+url.PathEscape(pos[0])+"/cancel", nil, body, &raw); err != nil {
			return err
		}
		j, err := decodeRaw[api.Job](raw)
		if err != nil {
			return err
		}
		accepted := fmt.Sprintf("cancel of job %s (%s, %s%s) accepted for VM %s", j.ID, j.Type, j.State, taskOf(j.TaskState), j.VmID)
		if !*wait.wait {
			return a.emit(raw, func(w io.Writer) error {
				fmt.Fprintln(w, accepted)
				fmt.Fprintf(w, "follow it with: vmctl job wait %s\n", j.ID)
				return nil
			})
		}
		if a.plain() {
			fmt.Fprintln(a.stdout, accepted)
		}
		err = a.waitJob(ctx, j.ID, *wait.timeout)
		if f, ok := errors.AsType[*jobFailed](err); ok && f.j.State == api.JobCancelled {
			return nil
		}
		return err
	}
}

// taskOf is a task state as a suffix: ", Migrating"; "" for none.
func taskOf(task string) string {
	if task == "" {
		return ""
	}
	return ", " + task
}
