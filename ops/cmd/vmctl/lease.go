package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/vmplane/vmplane/api"
)

// leaseCommands are the host reservation commands of issue 6.
var leaseCommands = []spec{
	{path: "lease create", short: "Reserve hosts for a time", cmd: leaseCreate, shows: api.Lease{}},
	{path: "lease list", short: "List leases", cmd: leaseList, shows: api.Lease{}},
	{path: "lease get", args: []string{"ID"}, short: "Show a lease and its reservations", cmd: leaseGet, shows: api.Lease{}},
	{path: "lease update", args: []string{"ID"}, short: "Move a lease's start or end, or change its host count", cmd: leaseUpdate, shows: api.Lease{}},
	{path: "lease delete", args: []string{"ID"}, short: "Delete a lease", cmd: leaseDelete, shows: api.Lease{}},
	{path: "lease events", args: []string{"ID"}, short: "List a lease's events", cmd: leaseEventsCmd, shows: api.LeaseEvent{}},
}

// when turns "now", an RFC 3339 time or a duration from now ("2h") into
// what the API takes.
func when(v string, now time.Time) (string, error) {
	if v == "" || v == "now" {
		return v, nil
	}
	if _, err := time.Parse(time.RFC3339, v); err == nil {
		return v, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return "", fmt.Errorf("%w: %q is not now, an RFC 3339 time or a duration such as 2h", errUsage, v)
	}
	return now.Add(d).UTC().Format(time.RFC3339), nil
}

// hostRange parses MIN or MIN..MAX and the properties k=v,k=v.
func hostRange(hosts, props string) (map[string]any, error) {
	lo, hi, ranged := strings.Cut(hosts, "..")
	a, err := strconv.Atoi(lo)
	b := a
	if err == nil && ranged {
		b, err = strconv.Atoi(hi)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: --hosts wants MIN or MIN..MAX, got %q", errUsage, hosts)
	}
	r := map[string]any{"min_hosts": a, "max_hosts": b}
	if props != "" {
		m := map[string]string{}
		for _, kv := range strings.Split(props, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, fmt.Errorf("%w: --property wants k=v[,k=v], got %q", errUsage, kv)
			}
			m[k] = v
		}
		r["host_properties"] = m
	}
	return r, nil
}

func leaseCreate(a *cli, fs *pflag.FlagSet) runner {
	name := fs.String("name", "", "lease name (a-z, 0-9, -)")
	start := fs.String("start", "now", "now, an RFC 3339 time or a duration from now")
	end := fs.String("end", "", "an RFC 3339 time or a duration from now (required)")
	hosts := fs.String("hosts", "1", "host count: MIN or MIN..MAX")
	props := fs.String("property", "", "host properties a host must have: k=v[,k=v]")
	zone := fs.String("zone", "", "zone; empty for the gateway's")
	project := fs.String("project", "", "account to lease for (admin)")
	return func(ctx context.Context, _ []string) error {
		now := time.Now()
		s, err := when(*start, now)
		if err != nil {
			return err
		}
		if *end == "" {
			return fmt.Errorf("%w: --end is required", errUsage)
		}
		e, err := when(*end, now)
		if err != nil {
			return err
		}
		r, err := hostRange(*hosts, *props)
		if err != nil {
			return err
		}
		body := map[string]any{"name": *name, "start": s, "end": e, "reservations": []any{r}}
		if *zone != "" {
			body["zone_id"] = *zone
		}
		if *project != "" {
			body["project"] = *project
		}
		return a.leaseCall(ctx, http.MethodPost, "/v1/leases", body, "requested")
	}
}

func leaseUpdate(a *cli, fs *pflag.FlagSet) runner {
	start := fs.String("start", "", "new start: now, an RFC 3339 time or a duration from now")
	end := fs.String("end", "", "new end: an RFC 3339 time or a duration from now")
	hosts := fs.String("hosts", "", "new host count of the (first and only) reservation: MIN or MIN..MAX")
	return func(ctx context.Context, pos []string) error {
		var err error
		now := time.Now()
		body := map[string]any{}
		if *start != "" {
			if body["start"], err = when(*start, now); err != nil {
				return err
			}
		}
		if *end != "" {
			if body["end"], err = when(*end, now); err != nil {
				return err
			}
		}
		if *hosts != "" {
			r, err := hostRange(*hosts, "")
			if err != nil {
				return err
			}
			body["reservations"] = []any{r}
		}
		if len(body) == 0 {
			return fmt.Errorf("%w: give --start, --end or --hosts", errUsage)
		}
		return a.leaseCall(ctx, http.MethodPut, "/v1/leases/"+url.PathEscape(pos[0]), body, "update requested for")
	}
}

func leaseDelete(a *cli, fs *pflag.FlagSet) runner {
	return func(ctx context.Context, pos []string) error {
		return a.leaseCall(ctx, http.MethodDelete, "/v1/leases/"+url.PathEscape(pos[0]), nil, "delete requested for")
	}
}

// leaseCall sends a lease command and prints the accepted lease.
func (a *cli) leaseCall(ctx context.Context, method, path string, body any, verb string) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	var raw json.RawMessage
	if err := a.c.call(ctx, method, path, nil, body, &raw); err != nil {
		return err
	}
	return a.emit(raw, func(w io.Writer) error {
		l, err := decodeRaw[api.Lease](raw)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s lease %s (%s); see vmctl lease get %s\n", verb, l.ID, l.Name, l.ID)
		return nil
	})
}

func leaseGet(a *cli, fs *pflag.FlagSet) runner {
	return func(ctx context.Context, pos []string) error {
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		var raw json.RawMessage
		if err := a.c.call(ctx, http.MethodGet, "/v1/leases/"+url.PathEscape(pos[0]), nil, nil, &raw); err != nil {
			return err
		}
		return a.emit(raw, func(w io.Writer) error {
			l, err := decodeRaw[api.Lease](raw)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "id\t%s\nname\t%s\nproject\t%s\nzone\t%s\nstatus\t%s\ndegraded\t%v\nstart\t%s\nend\t%s\n",
				l.ID, l.Name, l.Project, l.ZoneID, l.Status, l.Degraded, l.Start.Format(time.RFC3339), l.End.Format(time.RFC3339))
			if l.Reason != "" {
				fmt.Fprintf(w, "reason\t%s\n", l.Reason)
			}
			for _, r := range l.Reservations {
				fmt.Fprintf(w, "reservation %s\t%s hosts %d..%d: %s", r.ID, r.Status, r.MinHosts, r.MaxHosts, orDash(strings.Join(r.Hosts, ",")))
				if r.MissingResources {
					fmt.Fprint(w, " [missing_resources]")
				}
				if r.ResourcesChanged {
					fmt.Fprint(w, " [resources_changed]")
				}
				fmt.Fprintln(w)
			}
			return nil
		})
	}
}

func leaseList(a *cli, fs *pflag.FlagSet) runner {
	return func(ctx context.Context, _ []string) error {
		return listAll(ctx, a, "/v1/leases", func(w io.Writer, ls []api.Lease) error {
			fmt.Fprintln(w, "ID\tNAME\tPROJECT\tSTATUS\tDEGRADED\tSTART\tEND\tHOSTS")
			for _, l := range ls {
				var hosts []string
				for _, r := range l.Reservations {
					hosts = append(hosts, r.Hosts...)
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%v\t%s\t%s\t%s\n", l.ID, l.Name, l.Project, l.Status, l.Degraded,
					l.Start.Format(time.RFC3339), l.End.Format(time.RFC3339), orDash(strings.Join(hosts, ",")))
			}
			return nil
		})
	}
}

func leaseEventsCmd(a *cli, fs *pflag.FlagSet) runner {
	return func(ctx context.Context, pos []string) error {
		return listAll(ctx, a, "/v1/leases/"+url.PathEscape(pos[0])+"/events", func(w io.Writer, es []api.LeaseEvent) error {
			fmt.Fprintln(w, "AT\tEVENT\tSTATUS\tDEGRADED\tDETAIL")
			for _, e := range es {
				fmt.Fprintf(w, "%s\t%s\t%s\t%v\t%s\n", e.At.Format(time.RFC3339), e.Event, orDash(e.Status), e.Degraded, orDash(e.Detail))
			}
			return nil
		})
	}
}
