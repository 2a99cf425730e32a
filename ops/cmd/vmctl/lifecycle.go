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
)

// lifecycleCommands are the per-action VM commands (vmctl vm reboot ID
// --wait, vmctl vm migrate ID --host h2, ...) and the alert list. Each
// posts {"action": ..., parameters} to /v1/vms/{id}/actions.
var lifecycleCommands = map[string]command{
	"vm reboot":         vmLifecycle("reboot", flagBool("hard", "hard", "reset instead of a guest reboot")),
	"vm pause":          vmLifecycle("pause"),
	"vm unpause":        vmLifecycle("unpause"),
	"vm suspend":        vmLifecycle("suspend"),
	"vm resume":         vmLifecycle("resume"),
	"vm rescue":         vmLifecycle("rescue", flagString("image", "image", "rescue image; empty for the default")),
	"vm unrescue":       vmLifecycle("unrescue"),
	"vm rebuild":        vmLifecycle("rebuild", flagString("image", "image", "image to rebuild from; empty for the VM's own")),
	"vm snapshot":       vmLifecycle("snapshot", flagString("name", "snapshot_name", "snapshot name")),
	"vm migrate":        vmLifecycle("migrate", flagString("host", "host_id", "destination host; empty lets placement choose")),
	"vm resize":         vmLifecycle("resize", required(flagString("offering", "offering", "new offering, name or id"))),
	"vm confirm-resize": vmLifecycle("confirm_resize"),
	"vm revert-resize":  vmLifecycle("revert_resize"),
	"vm terminate":      vmLifecycle("terminate"),
	"alert list":        alertList,
}

// actionParam is one flag of an action and the request field it fills.
type actionParam struct {
	define   func(fs *flag.FlagSet) func() (any, bool)
	field    string
	flagName string
	required bool
}

func flagBool(name, field, usage string) actionParam {
	return actionParam{field: field, flagName: name, define: func(fs *flag.FlagSet) func() (any, bool) {
		v := fs.Bool(name, false, usage)
		return func() (any, bool) { return *v, *v }
	}}
}

func flagString(name, field, usage string) actionParam {
	return actionParam{field: field, flagName: name, define: func(fs *flag.FlagSet) func() (any, bool) {
		v := fs.String(name, "", usage)
		return func() (any, bool) { return *v, *v != "" }
	}}
}

func required(p actionParam) actionParam { p.required = true; return p }

func vmLifecycle(action string, params ...actionParam) command {
	return func(ctx context.Context, a *cli, fs *flag.FlagSet, args []string, getenv func(string) string) error {
		values := make([]func() (any, bool), len(params))
		for i, p := range params {
			values[i] = p.define(fs)
		}
		wait := waitFlags(fs)
		pos, err := a.setup(fs, args, getenv, "ID")
		if err != nil {
			return err
		}
		body := map[string]any{"action": action}
		for i, p := range params {
			v, set := values[i]()
			if !set && p.required {
				return fmt.Errorf("%w: %s needs --%s", errUsage, action, p.flagName)
			}
			if set {
				body[p.field] = v
			}
		}
		return a.submit(ctx, http.MethodPost, "/v1/vms/"+url.PathEscape(pos[0])+"/actions", body, wait)
	}
}

type alert struct {
	ID      string    `json:"id"`
	Kind    string    `json:"kind"`
	VmID    string    `json:"vm_id"`
	HostID  string    `json:"host_id"`
	JobID   string    `json:"job_id"`
	Message string    `json:"message"`
	At      time.Time `json:"at"`
}

// alertList is vmctl alert list [--vm ID].
func alertList(ctx context.Context, a *cli, fs *flag.FlagSet, args []string, getenv func(string) string) error {
	vmID := fs.String("vm", "", "only the alerts of this VM")
	if _, err := a.setup(fs, args, getenv); err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	q := url.Values{"limit": {"500"}}
	if *vmID != "" {
		q.Set("vm", *vmID)
	}
	var raw json.RawMessage
	if err := a.c.call(cctx, http.MethodGet, "/v1/alerts", q, nil, &raw); err != nil {
		return err
	}
	var l struct {
		Items []alert `json:"items"`
	}
	if err := json.Unmarshal(raw, &l); err != nil {
		return fmt.Errorf("decode alerts: %w", err)
	}
	return a.emit(raw, func(w io.Writer) error {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "AT\tKIND\tVM\tHOST\tMESSAGE")
		for _, al := range l.Items {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", al.At.Format(time.RFC3339), al.Kind, al.VmID, al.HostID, strings.ReplaceAll(al.Message, "\n", " "))
		}
		return tw.Flush()
	})
}
