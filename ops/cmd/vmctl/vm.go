package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/vmplane/vmplane/api"
)

type command func(ctx context.Context, a *cli, fs *flag.FlagSet, args []string, getenv func(string) string) error

var commands map[string]command

func init() {
	commands = map[string]command{
		"vm deploy":     vmDeploy,
		"vm get":        vmGet,
		"vm list":       vmList,
		"vm delete":     vmDelete,
		"vm action":     vmAction,
		"vm snapshots":  vmSnapshots,
		"job get":       jobGet,
		"job wait":      jobWait,
		"job cancel":    jobCancel,
		"offering list": offeringList,
	}
}

// requestTimeout bounds every call but the long-polls of job wait.
const requestTimeout = 30 * time.Second

func vmDeploy(ctx context.Context, a *cli, fs *flag.FlagSet, args []string, getenv func(string) string) error {
	name := fs.String("name", "", "VM name (a-z, 0-9, -)")
	off := fs.String("offering", "", "offering name or id")
	ha := fs.Bool("ha", false, "restart the VM elsewhere when its host fails")
	group := fs.String("affinity-group", "", "affinity group")
	template := fs.String("template", "", "template name or id of the root volume; none: no root volume")
	root := fs.Int64("root-disk", 0, "root volume size, GiB (default: the template's)")
	data := fs.Int64("data-disk", 0, "size of a data volume to create with the VM, GiB")
	networks := fs.String("network", "", "comma-separated networks (names or ids); default: the zone's default network")
	wait := waitFlags(fs)
	if _, err := a.setup(fs, args, getenv); err != nil {
		return err
	}
	if *name == "" || *off == "" {
		return fmt.Errorf("%w: vm deploy needs --name and --offering", errUsage)
	}
	body := map[string]any{"name": *name, "offering": *off}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "ha" {
			body["ha"] = *ha // only when given: else the offering decides
		}
	})
	if *group != "" {
		body["affinity_group"] = *group
	}
	if *template != "" {
		body["template"] = *template
	}
	if *root != 0 {
		body["root_disk_gb"] = *root
	}
	if *data != 0 {
		body["data_disk_gb"] = *data
	}
	if *networks != "" {
		body["networks"] = splitList(*networks)
	}
	return a.submit(ctx, http.MethodPost, "/v1/vms", body, wait)
}

func vmGet(ctx context.Context, a *cli, fs *flag.FlagSet, args []string, getenv func(string) string) error {
	pos, err := a.setup(fs, args, getenv, "ID")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	var raw json.RawMessage
	if err := a.c.call(ctx, http.MethodGet, "/v1/vms/"+url.PathEscape(pos[0]), nil, nil, &raw); err != nil {
		return err
	}
	return a.emit(raw, func(w io.Writer) error {
		v, err := decodeRaw[api.VM](raw)
		if err == nil {
			printVM(w, v)
		}
		return err
	})
}

func vmList(ctx context.Context, a *cli, fs *flag.FlagSet, args []string, getenv func(string) string) error {
	if _, err := a.setup(fs, args, getenv); err != nil {
		return err
	}
	return listAll(ctx, a, "/v1/vms", func(w io.Writer, vms []json.RawMessage) error {
		fmt.Fprintln(w, "ID\tNAME\tSTATE\tPOWER\tHOST\tOFFERING\tACCOUNT")
		for _, r := range vms {
			v, err := decodeRaw[api.VM](r)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", v.ID, v.Name, stateOf(v), orDash(v.PowerState), hostOf(v), v.Offering, v.Account)
		}
		return nil
	})
}

// vmSnapshots is vm snapshots ID: the VM's snapshots, oldest first.
func vmSnapshots(ctx context.Context, a *cli, fs *flag.FlagSet, args []string, getenv func(string) string) error {
	pos, err := a.setup(fs, args, getenv, "ID")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	var page api.List[api.Snapshot]
	if err := a.c.call(ctx, http.MethodGet, "/v1/vms/"+url.PathEscape(pos[0])+"/snapshots", nil, nil, &page); err != nil {
		return err
	}
	raw, _ := json.Marshal(page.Items)
	return a.emit(raw, func(w io.Writer) error {
		fmt.Fprintln(w, "NAME\tTAKEN\tJOB")
		for _, s := range page.Items {
			fmt.Fprintf(w, "%s\t%s\t%s\n", s.Name, s.TakenAt.Format(time.RFC3339), s.JobID)
		}
		return nil
	})
}

func nonNilRaw(r []json.RawMessage) []json.RawMessage {
	if r == nil {
		return []json.RawMessage{}
	}
	return r
}

// vmAction is vm action ID ACTION: any action by its API name, without
// parameters (the action's own command takes its flags).
func vmAction(ctx context.Context, a *cli, fs *flag.FlagSet, args []string, getenv func(string) string) error {
	wait := waitFlags(fs)
	pos, err := a.setup(fs, args, getenv, "ID", "ACTION")
	if err != nil {
		return err
	}
	body := map[string]any{"action": pos[1]}
	return a.submit(ctx, http.MethodPost, "/v1/vms/"+url.PathEscape(pos[0])+"/actions", body, wait)
}

func vmDelete(ctx context.Context, a *cli, fs *flag.FlagSet, args []string, getenv func(string) string) error {
	wait := waitFlags(fs)
	pos, err := a.setup(fs, args, getenv, "ID")
	if err != nil {
		return err
	}
	return a.submit(ctx, http.MethodDelete, "/v1/vms/"+url.PathEscape(pos[0]), nil, wait)
}

type waitOpts struct {
	wait    *bool
	timeout *time.Duration
}

func waitFlags(fs *flag.FlagSet) waitOpts {
	return waitOpts{
		wait:    fs.Bool("wait", false, "wait for the job to finish, showing its steps"),
		timeout: fs.Duration("timeout", 10*time.Minute, "how long --wait waits"),
	}
}

// submit sends a command request, prints the accepted job and, with
// --wait, follows it to the end.
func (a *cli) submit(ctx context.Context, method, path string, body any, w waitOpts) error {
	cctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	var raw json.RawMessage
	if err := a.c.call(cctx, method, path, nil, body, &raw); err != nil {
		return err
	}
	j, err := decodeRaw[api.Job](raw)
	if err != nil {
		return err
	}
	if *w.wait {
		if a.output == "table" {
			fmt.Fprintf(a.stdout, "job %s (%s) accepted for VM %s\n", j.ID, j.Type, j.VmID)
		}
		return a.waitJob(ctx, j.ID, *w.timeout)
	}
	return a.emit(raw, func(w io.Writer) error {
		fmt.Fprintf(w, "job %s (%s) accepted for VM %s\n", j.ID, j.Type, j.VmID)
		fmt.Fprintf(w, "follow it with: vmctl job wait %s\n", j.ID)
		return nil
	})
}
