package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/spf13/pflag"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/schemas/actions"
)

// lifecycleCommands are the VM actions of the catalog as commands
// (vmctl vm reboot ID --hard --wait, vmctl vm migrate ID --host h2, ...),
// each with a flag per parameter. An action posts
// {"action": ..., parameters} to /v1/vms/{id}/actions.
func lifecycleCommands() []spec {
	var cmds []spec
	for _, a := range actions.Catalog {
		cmds = append(cmds, spec{path: "vm " + actionVerb(a), args: []string{"ID"}, short: capitalize(a.Doc), cmd: vmLifecycle(a), shows: api.Job{}})
	}
	return cmds
}

// capitalize is a catalog's doc as a sentence: its first letter upper case.
func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// actionVerb is the word of an action on the command line: confirm-resize
// for confirm_resize.
func actionVerb(a actions.Action) string { return strings.ReplaceAll(a.Name, "_", "-") }

// paramFlag defines the flag of an action parameter on fs and returns what
// reads it: the value for the request, and whether to send it.
func paramFlag(fs *pflag.FlagSet, p actions.Param) func() (any, bool) {
	switch p.Kind {
	case actions.KindBool:
		v := fs.Bool(p.Flag, false, p.Doc)
		return func() (any, bool) { return *v, *v }
	case actions.KindInt:
		v := fs.Int64(p.Flag, 0, p.Doc)
		return func() (any, bool) { return *v, *v != 0 }
	}
	v := fs.String(p.Flag, "", p.Doc)
	return func() (any, bool) { return *v, *v != "" }
}

func vmLifecycle(a actions.Action) command {
	return func(c *cli, fs *pflag.FlagSet) runner {
		values := make([]func() (any, bool), len(a.Params))
		for i, p := range a.Params {
			values[i] = paramFlag(fs, p)
		}
		wait := waitFlags(fs)
		return func(ctx context.Context, pos []string) error {
			body := map[string]any{"action": a.Name}
			for i, p := range a.Params {
				v, set := values[i]()
				if !set && p.Required {
					return fmt.Errorf("%w: %s needs --%s", errUsage, a.Name, p.Flag)
				}
				if set {
					body[p.Name] = v
				}
			}
			return c.submit(ctx, http.MethodPost, "/v1/vms/"+url.PathEscape(pos[0])+"/actions", body, wait)
		}
	}
}
