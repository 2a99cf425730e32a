package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vmplane/vmplane/api"
)

// alertCommands read and acknowledge alerts: a user sees their VMs',
// an admin every one, the hosts' among them.
var alertCommands = map[string]command{
	"alert list": alertList,
	"alert get":  alertGet,
	"alert ack":  alertAck,
}

// alertList is vmctl alert list [--vm ID] [--host ID] [--zone ID] [--kind K] [--open].
func alertList(ctx context.Context, a *cli, fs *flag.FlagSet, args []string, getenv func(string) string) error {
	q := url.Values{"limit": {"500"}}
	for _, f := range []struct{ name, usage string }{
		{"vm", "only the alerts of this VM"}, {"host", "only the alerts of this host"},
		{"zone", "only the alerts of this zone"}, {"kind", "only alerts of this kind (HostAlert, HAExhausted, ...)"},
	} {
		fs.Func(f.name, f.usage, func(v string) error { q.Set(f.name, v); return nil })
	}
	open := fs.Bool("open", false, "only the alerts nobody has acknowledged")
	if _, err := a.setup(fs, args, getenv); err != nil {
		return err
	}
	if *open {
		q.Set("acked", "false")
	}
	cctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	var raw json.RawMessage
	if err := a.c.call(cctx, http.MethodGet, "/v1/alerts", q, nil, &raw); err != nil {
		return err
	}
	l, err := decodeRaw[api.List[api.Alert]](raw)
	if err != nil {
		return fmt.Errorf("decode alerts: %w", err)
	}
	return a.emit(raw, func(w io.Writer) error {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tAT\tKIND\tVM\tHOST\tZONE\tACKED BY\tMESSAGE")
		for _, al := range l.Items {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", al.ID, al.At.Format(time.RFC3339), al.Kind, orDash(al.VmID),
				orDash(al.HostID), orDash(al.ZoneID), orDash(al.AckedBy), oneLine(al.Message))
		}
		return tw.Flush()
	})
}

// alertGet is vmctl alert get ID.
func alertGet(ctx context.Context, a *cli, fs *flag.FlagSet, args []string, getenv func(string) string) error {
	return alertCall(ctx, a, fs, args, getenv, http.MethodGet, "")
}

// alertAck is vmctl alert ack ID: the alert as it is once acknowledged
// (by the caller, or by whoever acknowledged it first).
func alertAck(ctx context.Context, a *cli, fs *flag.FlagSet, args []string, getenv func(string) string) error {
	return alertCall(ctx, a, fs, args, getenv, http.MethodPost, "/ack")
}

func alertCall(ctx context.Context, a *cli, fs *flag.FlagSet, args []string, getenv func(string) string, method, suffix string) error {
	pos, err := a.setup(fs, args, getenv, "ID")
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	var raw json.RawMessage
	if err := a.c.call(cctx, method, "/v1/alerts/"+url.PathEscape(pos[0])+suffix, nil, nil, &raw); err != nil {
		return err
	}
	al, err := decodeRaw[api.Alert](raw)
	if err != nil {
		return fmt.Errorf("decode alert: %w", err)
	}
	return a.emit(raw, func(w io.Writer) error {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "id:\t%s\nkind:\t%s\nat:\t%s\n", al.ID, al.Kind, al.At.Format(time.RFC3339))
		fmt.Fprintf(tw, "vm:\t%s\nhost:\t%s\nzone:\t%s\njob:\t%s\n", orDash(al.VmID), orDash(al.HostID), orDash(al.ZoneID), orDash(al.JobID))
		acked := "-"
		if al.AckedAt != nil {
			acked = al.AckedBy + " at " + al.AckedAt.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "acknowledged:\t%s\nmessage:\t%s\n", acked, oneLine(al.Message))
		return tw.Flush()
	})
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }
