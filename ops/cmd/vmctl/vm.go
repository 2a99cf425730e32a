package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/pflag"

	"github.com/vmplane/vmplane/api"
)

// vmCommands make, read and delete VMs; the actions are lifecycle.go's.
var vmCommands = []spec{
	{path: "vm deploy", synopsis: "--name N --offering O", short: "Deploy a VM", cmd: vmDeploy, shows: api.Job{},
		example: "  vmctl vm deploy --name web-1 --offering small --template tiny-linux --data-disk 10 --wait\n" +
			"  vmctl vm deploy --name web-2 --offering small -o value -c vm_id"},
	{path: "vm list", short: "List VMs", cmd: vmList, shows: api.VM{}},
	{path: "vm get", args: []string{"ID"}, short: "Show a VM, its volumes and NICs", cmd: vmGet, shows: api.VM{}},
	{path: "vm delete", args: []string{"ID"}, short: "Terminate a VM", cmd: vmDelete, shows: api.Job{}},
	{path: "vm action", args: []string{"ID", "ACTION"}, short: "Act on a VM by the action's API name, without parameters", cmd: vmAction, shows: api.Job{}},
	{path: "vm snapshots", args: []string{"ID"}, short: "List a VM's snapshots, oldest first", cmd: vmSnapshots, shows: api.Snapshot{}},
}

// requestTimeout bounds every call but the long-polls of job wait.
const requestTimeout = 30 * time.Second

func vmDeploy(a *cli, fs *pflag.FlagSet) runner {
	name := fs.String("name", "", "VM name (a-z, 0-9, -)")
	off := fs.String("offering", "", "offering name or id")
	ha := fs.Bool("ha", false, "restart the VM elsewhere when its host fails")
	group := fs.String("affinity-group", "", "affinity group")
	template := fs.String("template", "", "template name or id of the root volume; none: no root volume")
	root := fs.Int64("root-disk", 0, "root volume size, GiB (default: the template's)")
	data := fs.Int64("data-disk", 0, "size of a data volume to create with the VM, GiB")
	networks := fs.String("network", "", "comma-separated networks (names or ids); default: the zone's default network")
	wait := waitFlags(fs)
	return func(ctx context.Context, _ []string) error {
		if *name == "" || *off == "" {
			return fmt.Errorf("%w: vm deploy needs --name and --offering", errUsage)
		}
		body := map[string]any{"name": *name, "offering": *off}
		if fs.Changed("ha") {
			body["ha"] = *ha // only when given: else the offering decides
		}
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
}

func vmGet(a *cli, fs *pflag.FlagSet) runner {
	return func(ctx context.Context, pos []string) error {
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
}

func vmList(a *cli, fs *pflag.FlagSet) runner {
	q := filterFlags(fs, filter{name: "state", usage: "only VMs in this state (Active, Stopped, ...)"}, filter{name: "host", usage: "only VMs on this host"})
	return func(ctx context.Context, _ []string) error {
		return listAll(ctx, a, "/v1/vms?"+q.Encode(), func(w io.Writer, vms []json.RawMessage) error {
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
}

// vmSnapshots is vm snapshots ID: the VM's snapshots, oldest first.
func vmSnapshots(a *cli, fs *pflag.FlagSet) runner {
	return func(ctx context.Context, pos []string) error {
		return listAll(ctx, a, "/v1/vms/"+url.PathEscape(pos[0])+"/snapshots", func(w io.Writer, rows []api.Snapshot) error {
			fmt.Fprintln(w, "NAME\tTAKEN\tJOB")
			for _, s := range rows {
				fmt.Fprintf(w, "%s\t%s\t%s\n", s.Name, s.TakenAt.Format(time.RFC3339), s.JobID)
			}
			return nil
		})
	}
}

func nonNilRaw(r []json.RawMessage) []json.RawMessage {
	if r == nil {
		return []json.RawMessage{}
	}
	return r
}

// vmAction is vm action ID ACTION: any action by its API name, without
// parameters (the action's own command takes its flags).
func vmAction(a *cli, fs *pflag.FlagSet) runner {
	wait := waitFlags(fs)
	return func(ctx context.Context, pos []string) error {
		body := map[string]any{"action": pos[1]}
		return a.submit(ctx, http.MethodPost, "/v1/vms/"+url.PathEscape(pos[0])+"/actions", body, wait)
	}
}

func vmDelete(a *cli, fs *pflag.FlagSet) runner {
	wait := waitFlags(fs)
	return func(ctx context.Context, pos []string) error {
		return a.submit(ctx, http.MethodDelete, "/v1/vms/"+url.PathEscape(pos[0]), nil, wait)
	}
}

type waitOpts struct {
	wait    *bool
	timeout *time.Duration
}

func waitFlags(fs *pflag.FlagSet) waitOpts {
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
		if a.plain() {
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
