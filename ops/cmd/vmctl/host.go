package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/vmplane/vmplane/api"
)

// hostCommands are the admin's host commands: list and inspect hosts, and
// the admin actions of the host processor (docs/design.md §6).
var hostCommands = []spec{
	{path: "host list", short: "List hosts: status, capacity, last ping", cmd: hostList, shows: api.Host{}},
	{path: "host get", args: []string{"ID"}, short: "Show a host, its reservation and allocations", cmd: hostGet, shows: api.HostDetail{}},
	{path: "host add", args: []string{"ID"}, short: "Register a host before its agent connects", cmd: hostAdd, shows: api.HostCommandAccepted{}},
	{path: "host enable", args: []string{"ID"}, short: "Let placement use a host again", cmd: hostActionCmd("enable"), shows: api.HostCommandAccepted{}, waitShows: api.HostDetail{}},
	{path: "host disable", args: []string{"ID"}, short: "Keep placement off a host; its VMs stay", cmd: hostActionCmd("disable"), shows: api.HostCommandAccepted{}, waitShows: api.HostDetail{}},
	{path: "host maintenance", args: []string{"ID"}, short: "Migrate a host's VMs away and put it in maintenance", cmd: hostActionCmd("prepare_for_maintenance"), shows: api.HostCommandAccepted{}, waitShows: api.HostDetail{}},
	{path: "host cancel-maintenance", args: []string{"ID"}, short: "Take a host out of maintenance", cmd: hostActionCmd("cancel_maintenance"), shows: api.HostCommandAccepted{}, waitShows: api.HostDetail{}},
	{path: "host remove", args: []string{"ID"}, short: "Remove a host", cmd: hostActionCmd("remove"), shows: api.HostCommandAccepted{}, waitShows: api.HostDetail{}},
	{path: "host unmanage", args: []string{"ID"}, short: "Take a host out of vmplane's hands: no placement, no investigation", cmd: hostActionCmd("unmanage"), shows: api.HostCommandAccepted{}, waitShows: api.HostDetail{}},
	{path: "host manage", args: []string{"ID"}, short: "Take an unmanaged host back", cmd: hostActionCmd("manage"), shows: api.HostCommandAccepted{}, waitShows: api.HostDetail{}},
}

// hostAdd is vmctl host add ID [--name N] [--zone Z] [--pod P] [--cluster C]
// [--hypervisor H]: a host registered before its agent connects.
func hostAdd(a *cli, fs *pflag.FlagSet) runner {
	var req api.HostAddRequest
	fs.StringVar(&req.Name, "name", "", "display name")
	fs.StringVar(&req.ZoneID, "zone", "", "zone")
	fs.StringVar(&req.PodID, "pod", "", "pod")
	fs.StringVar(&req.ClusterID, "cluster", "", "cluster")
	fs.StringVar(&req.Hypervisor, "hypervisor", "", "hypervisor type")
	return func(ctx context.Context, pos []string) error {
		req.ID = pos[0]
		cctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		var raw json.RawMessage
		if err := a.c.call(cctx, http.MethodPost, "/v1/hosts", nil, req, &raw); err != nil {
			return err
		}
		return a.emit(raw, func(w io.Writer) error {
			acc, err := decodeRaw[api.HostCommandAccepted](raw)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "host %s added (command %s); it is Up once its agent has connected and reported\n", acc.HostID, acc.CommandID)
			return nil
		})
	}
}

func hostList(a *cli, fs *pflag.FlagSet) runner {
	return func(ctx context.Context, _ []string) error {
		return listAll(ctx, a, "/v1/hosts", func(w io.Writer, hosts []json.RawMessage) error {
			list := make([]api.Host, len(hosts))
			var lag int64
			for i, r := range hosts {
				h, err := decodeRaw[api.Host](r)
				if err != nil {
					return err
				}
				list[i], lag = h, max(lag, h.LastPingLagSeconds)
			}
			fmt.Fprintf(w, "ID\tNAME\tZONE\tCLUSTER\tSTATUS\tRESOURCE\tCPU\tMEMORY MiB\t%s\tVMS\tHYPERVISOR\tRESERVABLE\n", seenHeader(lag))
			for _, h := range list {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%v\n", h.ID, h.Name, h.ZoneID, orDash(h.ClusterID),
					h.Status, h.ResourceState, allocated(int64(h.UsedCPU), int64(h.CPU), h.CPUCapacity, h.CPUOvercommit),
					allocated(h.UsedMemoryMB, h.MemoryMB, h.MemoryCapacityMB, h.MemOvercommit), ago(h.LastPingAt), h.VMCount,
					orDash(h.Hypervisor), h.Reservable)
			}
			return nil
		})
	}
}

func hostGet(a *cli, fs *pflag.FlagSet) runner {
	return func(ctx context.Context, pos []string) error {
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		raw, h, err := a.getHost(ctx, pos[0])
		if err != nil {
			return err
		}
		return a.emit(raw, func(w io.Writer) error {
			printHost(w, h)
			return nil
		})
	}
}

func (a *cli) getHost(ctx context.Context, id string) (json.RawMessage, api.HostDetail, error) {
	var raw json.RawMessage
	if err := a.c.call(ctx, http.MethodGet, "/v1/hosts/"+url.PathEscape(id), nil, nil, &raw); err != nil {
		return nil, api.HostDetail{}, err
	}
	h, err := decodeRaw[api.HostDetail](raw)
	return raw, h, err
}

func printHost(w io.Writer, h api.HostDetail) {
	fmt.Fprintf(w, "id:\t%s\n", h.ID)
	fmt.Fprintf(w, "name:\t%s\n", h.Name)
	fmt.Fprintf(w, "where:\tzone %s, pod %s, cluster %s\n", h.ZoneID, orDash(h.PodID), orDash(h.ClusterID))
	fmt.Fprintf(w, "hypervisor:\t%s\n", orDash(h.Hypervisor))
	fmt.Fprintf(w, "status:\t%s\n", h.Status)
	fmt.Fprintf(w, "resource state:\t%s\n", h.ResourceState)
	fmt.Fprintf(w, "reservable:\t%v\n", h.Reservable)
	fmt.Fprintf(w, "cpu:\t%s used (%d physical)\n", allocated(int64(h.UsedCPU), int64(h.CPU), h.CPUCapacity, h.CPUOvercommit), h.CPU)
	fmt.Fprintf(w, "memory MiB:\t%s used (%d physical)\n", allocated(h.UsedMemoryMB, h.MemoryMB, h.MemoryCapacityMB, h.MemOvercommit), h.MemoryMB)
	fmt.Fprintf(w, "tags:\t%s\n", orDash(strings.Join(h.Tags, ",")))
	fmt.Fprintf(w, "vms:\t%d\n", h.VMCount)
	if h.LastPingLagSeconds > 0 {
		fmt.Fprintf(w, "seen:\t%s (±%s: the read model takes pings in with a status change or a periodic refresh)\n", ago(h.LastPingAt),
			time.Duration(h.LastPingLagSeconds)*time.Second)
	} else {
		fmt.Fprintf(w, "last ping:\t%s\n", ago(h.LastPingAt))
	}
	if r := h.Reservation; r != nil {
		fmt.Fprintf(w, "reservation:\t%s (%s) %s\n", r.Planner, r.ResourceUsage, r.Account)
	} else {
		fmt.Fprintf(w, "reservation:\t-\n")
	}
	for _, al := range h.Allocations {
		fmt.Fprintf(w, "allocation:\t%s (%s) %d vCPU, %d MiB\n", al.VmID, al.Account, al.CPU, al.MemoryMB)
	}
}

// seenHeader names the last-ping column. The read model learns of pings
// only when a host's status is republished (every 10 ping intervals while
// nothing changes), so the time shown is when the agent was last seen, and
// it may have pinged since, up to lag seconds later. A gateway that does
// not say the lag leaves the old name.
func seenHeader(lag int64) string {
	if lag <= 0 {
		return "LAST PING"
	}
	return fmt.Sprintf("SEEN (±%s)", time.Duration(lag)*time.Second)
}

// allocated shows what is allocated of what placement may hand out, with the
// over-commit ratio when there is one: "34/64 (4×)" for 16 CPUs at 4×.
// A gateway that does not say the capacity leaves the physical amount.
func allocated(used, physical, capacity int64, ratio float64) string {
	if capacity == 0 {
		capacity = physical
	}
	if ratio <= 0 || ratio == 1 {
		return fmt.Sprintf("%d/%d", used, capacity)
	}
	return fmt.Sprintf("%d/%d (%s×)", used, capacity, strconv.FormatFloat(ratio, 'f', -1, 64))
}

// hostDone says, per action, when a host has taken it: --wait polls the
// host until done says so; ok false means the action ended in failure.
var hostDone = map[string]func(h api.Host) (done, ok bool){
	"enable":             func(h api.Host) (bool, bool) { return h.ResourceState == "Enabled", true },
	"disable":            func(h api.Host) (bool, bool) { return h.ResourceState == "Disabled", true },
	"cancel_maintenance": func(h api.Host) (bool, bool) { return h.ResourceState == "Enabled", true },
	"remove":             func(h api.Host) (bool, bool) { return h.Status == "Removed", true },
	"unmanage":           func(h api.Host) (bool, bool) { return h.ResourceState == "Unmanaged", true },
	"manage":             func(h api.Host) (bool, bool) { return h.ResourceState != "Unmanaged", true },
	"prepare_for_maintenance": func(h api.Host) (bool, bool) {
		return slices.Contains([]string{"Maintenance", "ErrorInMaintenance"}, h.ResourceState), h.ResourceState == "Maintenance"
	},
}

// hostActionCmd posts one admin action and, with --wait, polls the host
// until it shows the action taken: host commands are no VM jobs.
func hostActionCmd(action string) command {
	return func(a *cli, fs *pflag.FlagSet) runner {
		wait := fs.Bool("wait", false, "wait until the host shows the action taken")
		timeout := fs.Duration("timeout", 10*time.Minute, "how long --wait waits")
		return func(ctx context.Context, pos []string) error {
			id := pos[0]
			cctx, cancel := context.WithTimeout(ctx, requestTimeout)
			defer cancel()
			var raw json.RawMessage
			if err := a.c.call(cctx, http.MethodPost, "/v1/hosts/"+url.PathEscape(id)+"/actions", nil, map[string]string{"action": action}, &raw); err != nil {
				return err
			}
			if !*wait {
				return a.emit(raw, func(w io.Writer) error {
					acc, err := decodeRaw[api.HostCommandAccepted](raw)
					if err != nil {
						return err
					}
					fmt.Fprintf(w, "%s of host %s accepted (command %s)\n", acc.Command, id, acc.CommandID)
					if action == "prepare_for_maintenance" {
						fmt.Fprintf(w, "follow it: vmctl job get %s --steps\n", acc.CommandID)
					}
					return nil
				})
			}
			wctx, cancel := context.WithTimeout(ctx, *timeout)
			defer cancel()
			last := ""
			for {
				raw, h, err := a.getHost(wctx, id)
				if err != nil {
					return err
				}
				if now := h.Status + "/" + h.ResourceState; now != last && a.plain() {
					fmt.Fprintf(a.stdout, "host %s: %s, %s\n", id, h.Status, h.ResourceState)
					last = now
				}
				if done, ok := hostDone[action](h.Host); done {
					if !a.plain() {
						if err := a.emit(raw, nil); err != nil {
							return err
						}
					}
					if !ok {
						return fmt.Errorf("host %s: %s", id, h.ResourceState)
					}
					return nil
				}
				select {
				case <-wctx.Done():
					return fmt.Errorf("host %s still %s/%s after %s", id, h.Status, h.ResourceState, *timeout)
				case <-time.After(500 * time.Millisecond):
				}
			}
		}
	}
}
