package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/spf13/pflag"

	"github.com/vmplane/vmplane/api"
)

// placementCommands are the catalog and capacity commands of issue 5.
var placementCommands = []spec{
	{path: "offering create", short: "Create an offering", cmd: offeringCreate, shows: api.Offering{}},
	{path: "offering update", args: []string{"ID"}, short: "Change an offering's name, planner, HA or tags", cmd: offeringUpdate, shows: api.Offering{}},
	{path: "offering delete", args: []string{"ID"}, short: "Delete an offering no VM uses", cmd: offeringDelete, shows: api.Offering{}},
	{path: "planner list", short: "List deployment planners", cmd: plannerList, shows: api.Planner{}},
	{path: "zone capacity", args: []string{"ZONE"}, short: "Show a zone's capacity by cluster, and its pools", cmd: zoneCapacity, shows: api.ZoneCapacity{}},
}

func offeringCreate(a *cli, fs *pflag.FlagSet) runner {
	name := fs.String("name", "", "offering name (a-z, 0-9, -)")
	cpu := fs.Int("cpu", 0, "virtual CPUs")
	mem := fs.Int64("memory", 0, "memory, MiB")
	ha := fs.Bool("ha", false, "restart VMs of this offering elsewhere when their host fails")
	planner := fs.String("planner", "", "deployment planner (vmctl planner list); empty for the default")
	mode := fs.String("planner-mode", "", "Strict or Preferred (ImplicitDedicationPlanner)")
	tags := fs.String("host-tags", "", "comma-separated tags a host must carry")
	storageTags := fs.String("storage-tags", "", "comma-separated tags the pool of its VMs' volumes must carry")
	return func(ctx context.Context, _ []string) error {
		body := map[string]any{"name": *name, "cpu": *cpu, "memory_mb": *mem, "ha": *ha}
		if *planner != "" {
			body["deployment_planner"] = *planner
		}
		if *mode != "" {
			body["planner_mode"] = *mode
		}
		if *tags != "" {
			body["host_tags"] = strings.Split(*tags, ",")
		}
		if *storageTags != "" {
			body["storage_tags"] = strings.Split(*storageTags, ",")
		}
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		var raw json.RawMessage
		if err := a.c.call(ctx, http.MethodPost, "/v1/offerings", nil, body, &raw); err != nil {
			return err
		}
		return a.emit(raw, func(w io.Writer) error {
			o, err := decodeRaw[api.Offering](raw)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "created offering %s (%s)\n", o.Name, o.ID)
			return nil
		})
	}
}

// offeringUpdate is offering update ID|NAME with a flag per field to
// change; only the flags given are sent. The gateway refuses --cpu and
// --memory that differ from the offering's, and says why.
func offeringUpdate(a *cli, fs *pflag.FlagSet) runner {
	name := fs.String("name", "", "new offering name (a-z, 0-9, -)")
	cpu := fs.Int("cpu", 0, "virtual CPUs: refused unless unchanged (create a new offering)")
	mem := fs.Int64("memory", 0, "memory, MiB: refused unless unchanged (create a new offering)")
	ha := fs.Bool("ha", false, "restart VMs of this offering elsewhere when their host fails (--ha=false to stop)")
	planner := fs.String("planner", "", "deployment planner (vmctl planner list); empty for the default")
	mode := fs.String("planner-mode", "", "Strict or Preferred (ImplicitDedicationPlanner)")
	hostTags := fs.String("host-tags", "", "comma-separated tags a host must carry; empty for none")
	storageTags := fs.String("storage-tags", "", "comma-separated tags the pool of its VMs' volumes must carry; empty for none")
	return func(ctx context.Context, pos []string) error {
		// Only the flags given are sent: a field left out stays as it is.
		body := map[string]any{}
		for flag, field := range map[string]struct {
			name string
			v    any
		}{"name": {"name", *name}, "cpu": {"cpu", *cpu}, "memory": {"memory_mb", *mem}, "ha": {"ha", *ha},
			"planner": {"deployment_planner", *planner}, "planner-mode": {"planner_mode", *mode},
			"host-tags": {"host_tags", splitList(*hostTags)}, "storage-tags": {"storage_tags", splitList(*storageTags)}} {
			if fs.Changed(flag) {
				body[field.name] = field.v
			}
		}
		if len(body) == 0 {
			return fmt.Errorf("%w: offering update needs a field to change", errUsage)
		}
		return offeringCall(ctx, a, http.MethodPatch, pos[0], body, "updated")
	}
}

// offeringDelete is offering delete ID|NAME; the gateway refuses it while
// VMs use the offering.
func offeringDelete(a *cli, fs *pflag.FlagSet) runner {
	return func(ctx context.Context, pos []string) error {
		return offeringCall(ctx, a, http.MethodDelete, pos[0], nil, "deleted")
	}
}

// offeringCall sends method to the offering and prints what was done.
func offeringCall(ctx context.Context, a *cli, method, id string, body any, done string) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	var raw json.RawMessage
	if err := a.c.call(ctx, method, "/v1/offerings/"+url.PathEscape(id), nil, body, &raw); err != nil {
		return err
	}
	return a.emit(raw, func(w io.Writer) error {
		o, err := decodeRaw[api.Offering](raw)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s offering %s (%s): planner %s, ha %v\n", done, o.Name, o.ID, orDash(o.DeploymentPlanner), o.HA)
		return nil
	})
}

func plannerList(a *cli, fs *pflag.FlagSet) runner {
	return func(ctx context.Context, _ []string) error {
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		var page api.List[api.Planner]
		if err := a.c.call(ctx, http.MethodGet, "/v1/planners", nil, nil, &page); err != nil {
			return err
		}
		raw, _ := json.Marshal(page.Items)
		return a.emit(raw, func(w io.Writer) error {
			fmt.Fprintln(w, "NAME\tUSAGE\tDEFAULT\tDESCRIPTION")
			for _, p := range page.Items {
				def := ""
				if p.Default {
					def = "yes"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", p.Name, p.ResourceUsage, orDash(def), p.Description)
			}
			return nil
		})
	}
}

func zoneCapacity(a *cli, fs *pflag.FlagSet) runner {
	return func(ctx context.Context, pos []string) error {
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		var raw json.RawMessage
		if err := a.c.call(ctx, http.MethodGet, "/v1/zones/"+pos[0]+"/capacity", nil, nil, &raw); err != nil {
			return err
		}
		return a.emit(raw, func(w io.Writer) error {
			zc, err := decodeRaw[api.ZoneCapacity](raw)
			if err != nil {
				return err
			}
			fmt.Fprintln(w, "POD\tCLUSTER\tHOSTS\tRESERVED\tCPU USED/CAP\tCPU FREE\tMEM USED/CAP MiB\tMEM FREE MiB")
			line := func(c api.ClusterCapacity) {
				fmt.Fprintf(w, "%s\t%s\t%d/%d\t%d (%d dedicated)\t%d/%d\t%d\t%d/%d\t%d\n", orDash(c.PodID), orDash(c.ClusterID),
					c.ReservableHosts, c.Hosts, c.ReservedHosts, c.DedicatedHosts, c.UsedCPU, c.CPU, c.FreeCPU, c.UsedMemoryMB, c.MemoryMB, c.FreeMemoryMB)
			}
			for _, c := range zc.Clusters {
				line(c)
			}
			zc.Total.PodID = "total"
			line(zc.Total)
			if len(zc.Pools) > 0 {
				fmt.Fprintln(w)
				printPools(w, zc.Pools)
			}
			return nil
		})
	}
}
