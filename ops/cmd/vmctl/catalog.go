package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"

	"github.com/vmplane/vmplane/api"
)

func offeringList(ctx context.Context, a *cli, fs *flag.FlagSet, args []string, getenv func(string) string) error {
	if _, err := a.setup(fs, args, getenv); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	var raw json.RawMessage
	if err := a.c.call(ctx, http.MethodGet, "/v1/offerings", nil, nil, &raw); err != nil {
		return err
	}
	page, err := decodeRaw[api.List[json.RawMessage]](raw)
	if err != nil {
		return err
	}
	items, _ := json.Marshal(nonNilRaw(page.Items))
	return a.emit(items, func(w io.Writer) error {
		fmt.Fprintln(w, "ID\tNAME\tCPU\tMEMORY MiB\tHA\tPLANNER")
		for _, r := range page.Items {
			o, err := decodeRaw[api.Offering](r)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%v\t%s\n", o.ID, o.Name, o.CPU, o.MemoryMB, o.HA, orDash(o.DeploymentPlanner))
		}
		return nil
	})
}
