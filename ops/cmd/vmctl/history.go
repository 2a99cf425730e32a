package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/vmplane/vmplane/api"
)

// historyCommands read the history the journal keeps in ClickHouse.
var historyCommands = []spec{
	{path: "vm history", args: []string{"ID"}, short: "List a VM's events, or show it as it was at an instant (--at)", cmd: vmHistory, shows: api.VmHistoryEvent{}},
	{path: "journal query", args: []string{"SQL"}, short: "Run a read-only SQL query on the journal (admin; docs/analytics.md)", cmd: journalQuery, shows: api.QueryResult{}},
}

// vmHistory is `vmctl vm history ID [--at T]`: every event of the VM, or
// with --at (RFC 3339, or a duration ago such as 10m) the VM as it was then.
func vmHistory(a *cli, fs *pflag.FlagSet) runner {
	at := fs.String("at", "", "show the VM as it was at this instant (RFC 3339, or a duration ago: 10m)")
	return func(ctx context.Context, pos []string) error {
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		path := "/v1/vms/" + url.PathEscape(pos[0]) + "/history"
		if *at == "" {
			var out api.List[json.RawMessage]
			if err := a.c.call(ctx, http.MethodGet, path, nil, nil, &out); err != nil {
				return err
			}
			raw, _ := json.Marshal(nonNilRaw(out.Items))
			return a.emit(raw, func(w io.Writer) error {
				fmt.Fprintln(w, "AT\tEVENT\tJOB\tVM STATE\tTASK\tPOWER\tHOST\tREASON")
				for _, r := range out.Items {
					e, err := decodeRaw[api.VmHistoryEvent](r)
					if err != nil {
						return err
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.At.Format("2006-01-02 15:04:05.000"), e.Type, orDash(e.JobID),
						orDash(e.VmState), orDash(e.TaskState), orDash(e.PowerState), orDash(e.HostID), orDash(e.Reason))
				}
				return nil
			})
		}
		t, err := instant(*at, time.Now())
		if err != nil {
			return fmt.Errorf("%w: --at: %v", errUsage, err)
		}
		var raw json.RawMessage
		if err := a.c.call(ctx, http.MethodGet, path, url.Values{"at": {t.Format(time.RFC3339Nano)}}, nil, &raw); err != nil {
			return err
		}
		s, err := decodeRaw[api.VmAsOf](raw)
		if err != nil {
			return err
		}
		return a.emit(raw, func(w io.Writer) error {
			v := s.VM
			fmt.Fprintf(w, "VM\t%s (%s)\n", v.ID, v.Name)
			fmt.Fprintf(w, "AT\t%s (in this state since %s)\n", s.At.Format(time.RFC3339), s.Since.Format(time.RFC3339))
			fmt.Fprintf(w, "VM STATE\t%s\n", v.VmState)
			fmt.Fprintf(w, "TASK STATE\t%s\n", orDash(v.TaskState))
			fmt.Fprintf(w, "POWER STATE\t%s\n", orDash(v.PowerState))
			fmt.Fprintf(w, "HOST\t%s\n", orDash(v.HostID))
			fmt.Fprintf(w, "PENDING JOB\t%s\n", orDash(s.PendingJob))
			fmt.Fprintf(w, "QUEUED JOBS\t%d\n", s.PendingJobs)
			fmt.Fprintf(w, "REASON\t%s\n", orDash(s.Reason))
			return nil
		})
	}
}

// instant reads --at: an RFC 3339 time, or a duration before now.
func instant(v string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time nor a duration ago", v)
	}
	return now.Add(-d), nil
}

// journalQuery is `vmctl journal query "<SQL>"`: the gateway runs it as
// ClickHouse's read-only analyst user (admin key needed) and it prints a
// table.
func journalQuery(a *cli, fs *pflag.FlagSet) runner {
	return func(ctx context.Context, pos []string) error {
		ctx, cancel := context.WithTimeout(ctx, 2*requestTimeout)
		defer cancel()
		var raw json.RawMessage
		if err := a.c.call(ctx, http.MethodPost, "/v1/journal/query", nil, map[string]string{"sql": pos[0]}, &raw); err != nil {
			return err
		}
		res, err := decodeRaw[api.QueryResult](raw)
		if err != nil {
			return err
		}
		if err := a.emit(raw, func(w io.Writer) error {
			fmt.Fprintln(w, strings.Join(res.Columns, "\t"))
			for _, r := range res.Rows {
				fmt.Fprintln(w, strings.Join(r, "\t"))
			}
			return nil
		}); err != nil {
			return err
		}
		if res.Truncated && a.plain() {
			fmt.Fprintf(a.stderr, "vmctl: only the first %d rows are shown; add a LIMIT\n", len(res.Rows))
		}
		return nil
	}
}
