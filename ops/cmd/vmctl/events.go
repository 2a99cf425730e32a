package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/vmplane/vmplane/api"
)

// eventCommands follow the API's event stream.
var eventCommands = []spec{
	{path: "events", short: "Follow VM and job events as they happen (Ctrl-C ends)", cmd: eventsCmd, shows: api.Event{}},
}

// eventsCmd is vmctl events [--vm ID] [--count N]: GET /v1/events as it
// comes, a line per event (-o json: a JSON object per line). A stream the
// gateway ends (a restart, a drain) is taken up again where it stopped
// (Last-Event-ID).
func eventsCmd(a *cli, fs *pflag.FlagSet) runner {
	q := filterFlags(fs, filter{name: "vm", usage: "only this VM's events and its jobs'"})
	count := fs.Int("count", 0, "stop after this many events (0: until interrupted)")
	return func(ctx context.Context, _ []string) error {
		seen, last := 0, ""
		for {
			err := a.followEvents(ctx, "/v1/events?"+q.Encode(), &last, func(e sseEvent) (bool, error) {
				if e.name == "gap" || e.name == "overflow" || e.name == "error" {
					fmt.Fprintf(a.stderr, "vmctl: the stream says %s: %s\n", e.name, e.data)
					return e.name != "error", nil
				}
				if err := a.printEvent(e); err != nil {
					return false, err
				}
				seen++
				return *count == 0 || seen < *count, nil
			})
			switch {
			case ctx.Err() != nil || errors.Is(err, errStop):
				return nil // interrupted, or --count reached
			case err != nil:
				return err
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Second):
			}
		}
	}
}

// errStop is a stream its reader ended.
var errStop = errors.New("stop")

// followEvents reads an event stream until it ends (nil), each says to
// stop (errStop) or it cannot be opened (the API's error). *last is the id
// of the last event read, sent back as Last-Event-ID.
func (a *cli) followEvents(ctx context.Context, path string, last *string, each func(sseEvent) (bool, error)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.c.base+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+a.c.key)
	if *last != "" {
		req.Header.Set("Last-Event-ID", *last)
	}
	resp, err := a.c.http.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach the API at %s: %w", a.c.base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return errorOf(resp, raw)
	}
	idle := time.AfterFunc(streamIdle, cancel)
	defer idle.Stop()
	var stop error
	_ = readSSE(resp.Body, func() { idle.Reset(streamIdle) }, func(e sseEvent) bool {
		if e.id != "" {
			*last = e.id
		}
		more, err := each(e)
		switch {
		case err != nil:
			stop = err
		case !more:
			stop = errStop
		}
		return stop == nil
	})
	return stop
}

// printEvent prints one event: -o json as a line of JSON, -o table as a
// line of its fields, the others as emit does.
func (a *cli) printEvent(e sseEvent) error {
	if a.output == "json" && len(a.columns) == 0 {
		_, err := fmt.Fprintln(a.stdout, compact(json.RawMessage(e.data)))
		return err
	}
	if a.output == "yaml" {
		fmt.Fprintln(a.stdout, "---")
	}
	raw := json.RawMessage(e.data)
	return a.emit(raw, func(w io.Writer) error {
		var ev api.Event
		if err := json.Unmarshal(raw, &ev); err != nil {
			return fmt.Errorf("decode event: %w", err)
		}
		keys := make([]string, 0, len(ev.Data))
		for k := range ev.Data {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := []string{ev.Type, "vm=" + orDash(ev.VmID)}
		if ev.JobID != "" {
			parts = append(parts, "job="+ev.JobID)
		}
		for _, k := range keys {
			if v := str(ev.Data[k]); v != "" && k != "vm_id" && k != "job_id" {
				parts = append(parts, k+"="+v)
			}
		}
		_, err := fmt.Fprintln(w, strings.Join(parts, " "))
		return err
	})
}
