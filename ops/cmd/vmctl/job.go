package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// jobFailed is the error of a job that ended other than succeeded; the
// final line printed already explains it.
type jobFailed struct{ j job }

func (e *jobFailed) Error() string { return fmt.Sprintf("job %s %s", e.j.ID, e.j.State) }

func jobGet(ctx context.Context, a *cli, fs *flag.FlagSet, args []string, getenv func(string) string) error {
	steps := fs.Bool("steps", true, "include the job's steps")
	pos, err := a.setup(fs, args, getenv, "ID")
	if err != nil {
		return err
	}
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
		j, err := decodeRaw[job](raw)
		if err == nil {
			printJob(w, j)
		}
		return err
	})
}

func jobWait(ctx context.Context, a *cli, fs *flag.FlagSet, args []string, getenv func(string) string) error {
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long")
	pos, err := a.setup(fs, args, getenv, "ID")
	if err != nil {
		return err
	}
	return a.waitJob(ctx, pos[0], *timeout)
}

// pollWait is the ?wait= of each long-poll.
const pollWait = 30 * time.Second

// waitJob long-polls the job until it finishes or timeout passes, printing
// each new step as it appears (after_step makes the gateway answer on each
// new step instead of only at the end) and a final line with the outcome. A job the
// read model does not know yet is waited for: the command may still be on
// its way through Kafka.
func (a *cli) waitJob(ctx context.Context, id string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	var printed int32
	var last job
	var lastRaw json.RawMessage
	for {
		wait := min(pollWait, time.Until(deadlineOf(ctx)))
		if wait < 0 {
			wait = 0
		}
		q := url.Values{"wait": {wait.Round(time.Millisecond).String()}, "steps": {"1"}, "after_step": {fmt.Sprint(printed)}}
		var raw json.RawMessage
		// The poll's own context outlives the wait a little so that the
		// server, not the client, ends a poll.
		pctx, pcancel := context.WithTimeout(context.WithoutCancel(ctx), wait+10*time.Second)
		err := a.c.call(pctx, http.MethodGet, "/v1/jobs/"+url.PathEscape(id), q, nil, &raw)
		pcancel()
		switch {
		case err == nil:
			j, err := decodeRaw[job](raw)
			if err != nil {
				return err
			}
			last, lastRaw = j, raw
			for _, s := range j.Steps {
				if s.Seq > printed {
					if a.output == "table" {
						fmt.Fprintln(a.stdout, stepLine(s))
					}
					printed = s.Seq
				}
			}
			if j.finished() {
				return a.finalLine(j, lastRaw, time.Since(start))
			}
		case isNotFound(err):
			// Not projected yet: keep waiting.
		default:
			return err
		}
		if ctx.Err() != nil {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				state := "not seen yet"
				if last.ID != "" {
					state = last.State
				}
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
func (a *cli) finalLine(j job, raw json.RawMessage, waited time.Duration) error {
	took := waited
	if j.FinishedAt != nil && !j.CreatedAt.IsZero() {
		took = j.FinishedAt.Sub(j.CreatedAt)
	}
	if a.output == "json" {
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
	if j.State != "succeeded" {
		return &jobFailed{j}
	}
	return nil
}
