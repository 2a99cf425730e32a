package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/spf13/pflag"

	"github.com/vmplane/vmplane/api"
)

// catalogCommands read the offerings; placement.go's change them.
var catalogCommands = []spec{
	{path: "offering list", short: "List offerings", cmd: offeringList, shows: api.Offering{}},
	{path: "offering get", args: []string{"ID"}, short: "Show an offering (by id or name)", cmd: one(http.MethodGet, "/v1/offerings/", printOffering), shows: api.Offering{}},
}

func offeringList(a *cli, fs *pflag.FlagSet) runner {
	return func(ctx context.Context, _ []string) error {
		return listAll(ctx, a, "/v1/offerings", func(w io.Writer, rows []api.Offering) error {
			fmt.Fprintln(w, "ID\tNAME\tCPU\tMEMORY MiB\tHA\tPLANNER")
			for _, o := range rows {
				fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%v\t%s\n", o.ID, o.Name, o.CPU, o.MemoryMB, o.HA, orDash(o.DeploymentPlanner))
			}
			return nil
		})
	}
}

func printOffering(w io.Writer, o api.Offering) {
	fmt.Fprintf(w, "id:\t%s\nname:\t%s\ncpu:\t%d\nmemory:\t%d MiB\nha:\t%v\nplanner:\t%s\n", o.ID, o.Name, o.CPU, o.MemoryMB, o.HA,
		orDash(o.DeploymentPlanner))
	if o.PlannerMode != "" {
		fmt.Fprintf(w, "planner mode:\t%s\n", o.PlannerMode)
	}
	fmt.Fprintf(w, "host tags:\t%s\n", orDash(strings.Join(o.HostTags, ",")))
	fmt.Fprintf(w, "storage tags:\t%s\n", orDash(strings.Join(o.StorageTags, ",")))
}
