package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/vmplane/vmplane/schemas/actions"
)

// lifecycleCommands are the VM actions of the catalog as commands
// (vmctl vm reboot ID --hard --wait, vmctl vm migrate ID --host h2, ...),
// each with a flag per parameter. An action posts
// {"action": ..., parameters} to /v1/vms/{id}/actions.
var lifecycleCommands = func() map[string]command {
	cmds := map[string]command{}
	for _, a := range actions.Catalog {
		cmds["vm "+actionVerb(a)] = vmLifecycle(a)
	}
	return cmds
}()

// actionVerb is the word of an action on the command line: confirm-resize
// for confirm_resize.
func actionVerb(a actions.Action) string { return strings.ReplaceAll(a.Name, "_", "-") }

// actionUsage lists the action commands for the usage text: those without
// parameters on one line, each other one on its own with its flags.
func actionUsage() string {
	var plain []string
	var b strings.Builder
	for _, a := range actions.Catalog {
		if len(a.Params) == 0 {
			plain = append(plain, actionVerb(a))
			continue
		}
		fmt.Fprintf(&b, "  vm %s ID", actionVerb(a))
		for _, p := range a.Params {
			f := "--" + p.Flag
			if p.Kind != actions.KindBool {
				f += " " + strings.ToUpper(p.Flag)
			}
			if !p.Required {
				f = "[" + f + "]"
			}
			b.WriteString(" " + f)
		}
		b.WriteString(" [--wait]\n")
	}
	return "  vm " + strings.Join(plain, "|") + " ID [--wait]\n" + b.String()
}

// paramFlag defines the flag of an action parameter on fs and returns what
// reads it: the value for the request, and whether to send it.
func paramFlag(fs *flag.FlagSet, p actions.Param) func() (any, bool) {
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
	return func(ctx context.Context, c *cli, fs *flag.FlagSet, args []string, getenv func(string) string) error {
		values := make([]func() (any, bool), len(a.Params))
		for i, p := range a.Params {
			values[i] = paramFlag(fs, p)
		}
		wait := waitFlags(fs)
		pos, err := c.setup(fs, args, getenv, "ID")
		if err != nil {
			return err
		}
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
