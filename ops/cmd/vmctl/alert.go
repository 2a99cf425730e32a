package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/vmplane/vmplane/api"
)

// alertCommands read and acknowledge alerts: a user sees their VMs',
// an admin every one, the hosts' among them.
var alertCommands = []spec{
	{path: "alert list", short: "List alerts", cmd: alertList, shows: api.Alert{}},
	{path: "alert get", args: []string{"ID"}, short: "Show an alert", cmd: alertCall(http.MethodGet, ""), shows: api.Alert{}},
	{path: "alert ack", args: []string{"ID"}, short: "Acknowledge an alert", cmd: alertCall(http.MethodPost, "/ack"), shows: api.Alert{}},
}

// alertList is vmctl alert list [--vm ID] [--host ID] [--zone ID] [--kind K] [--open|--acked].
func alertList(a *cli, fs *pflag.FlagSet) runner {
	q := filterFlags(fs, filter{name: "vm", usage: "only the alerts of this VM"}, filter{name: "host", usage: "only the alerts of this host"},
		filter{name: "zone", usage: "only the alerts of this zone"}, filter{name: "kind", usage: "only alerts of this kind (HostAlert, HAExhausted, ...)"})
	open := fs.Bool("open", false, "only the alerts nobody has acknowledged")
	acked := fs.Bool("acked", false, "only the alerts someone has acknowledged")
	return func(ctx context.Context, _ []string) error {
		switch {
		case *open && *acked:
			return fmt.Errorf("%w: --open and --acked exclude each other", errUsage)
		case *open:
			q.Set("acked", "false")
		case *acked:
			q.Set("acked", "true")
		}
		return listAll(ctx, a, "/v1/alerts?"+q.Encode(), func(w io.Writer, rows []api.Alert) error {
			fmt.Fprintln(w, "ID\tAT\tKIND\tVM\tHOST\tZONE\tACKED BY\tMESSAGE")
			for _, al := range rows {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", al.ID, al.At.Format(time.RFC3339), al.Kind, orDash(al.VmID),
					orDash(al.HostID), orDash(al.ZoneID), orDash(al.AckedBy), oneLine(al.Message))
			}
			return nil
		})
	}
}

// alertCall is alert get ID (GET) and alert ack ID (POST .../ack): the
// alert, as it is once acknowledged for ack (by the caller, or by whoever
// acknowledged it first).
func alertCall(method, suffix string) command {
	return func(a *cli, fs *pflag.FlagSet) runner {
		return func(ctx context.Context, pos []string) error {
			return call(ctx, a, method, "/v1/alerts/"+url.PathEscape(pos[0])+suffix, nil, nil, func(w io.Writer, al api.Alert) {
				fmt.Fprintf(w, "id:\t%s\nkind:\t%s\nat:\t%s\n", al.ID, al.Kind, al.At.Format(time.RFC3339))
				fmt.Fprintf(w, "vm:\t%s\nhost:\t%s\nzone:\t%s\njob:\t%s\n", orDash(al.VmID), orDash(al.HostID), orDash(al.ZoneID), orDash(al.JobID))
				acked := "-"
				if al.AckedAt != nil {
					acked = al.AckedBy + " at " + al.AckedAt.Format(time.RFC3339)
				}
				fmt.Fprintf(w, "acknowledged:\t%s\nmessage:\t%s\n", acked, oneLine(al.Message))
			})
		}
	}
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }
