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

// volumeCommands are the VM actions that take a volume, as commands on the
// volume (vmctl volume resize VOL --size 20, volume detach VOL, ...): they
// post to /v1/volumes/{id}/actions, which issues the action of the
// volume's VM.
var volumeCommands = func() map[string]command {
	cmds := map[string]command{}
	for _, a := range actions.Catalog {
		if _, ok := a.Param("volume_id"); ok {
			cmds["volume "+volumeVerb(a)] = volumeLifecycle(a)
		}
	}
	return cmds
}()

// volumeVerb is the word of a volume action on the volume: resize for
// resize_volume.
func volumeVerb(a actions.Action) string { return strings.TrimSuffix(actionVerb(a), "-volume") }

// volumeParams are the parameters of a volume action that its volume does
// not already say: a new volume's name and size are attach_volume's on the
// VM (vm attach-volume), not on a volume that exists.
func volumeParams(a actions.Action) []actions.Param {
	var out []actions.Param
	for _, p := range a.Params {
		if p.Name == "snapshot_name" || p.Name == "size_gb" && a.Name != "attach_volume" {
			out = append(out, p)
		}
	}
	return out
}

// volumeUsage lists the volume action commands for the usage text.
func volumeUsage() string {
	var b strings.Builder
	for _, a := range actions.Catalog {
		if _, ok := a.Param("volume_id"); !ok {
			continue
		}
		fmt.Fprintf(&b, "  volume %s VOLUME", volumeVerb(a))
		for _, p := range volumeParams(a) {
			f := "--" + p.Flag + " " + strings.ToUpper(p.Flag)
			if !p.Required {
				f = "[" + f + "]"
			}
			b.WriteString(" " + f)
		}
		b.WriteString(" [--wait]\n")
	}
	return b.String()
}

func volumeLifecycle(a actions.Action) command {
	return func(ctx context.Context, c *cli, fs *flag.FlagSet, args []string, getenv func(string) string) error {
		params := volumeParams(a)
		values := make([]func() (any, bool), len(params))
		for i, p := range params {
			values[i] = paramFlag(fs, p)
		}
		wait := waitFlags(fs)
		pos, err := c.setup(fs, args, getenv, "VOLUME")
		if err != nil {
			return err
		}
		body := map[string]any{"action": a.Name}
		for i, p := range params {
			v, set := values[i]()
			if !set && p.Required {
				return fmt.Errorf("%w: volume %s needs --%s", errUsage, volumeVerb(a), p.Flag)
			}
			if set {
				body[p.Name] = v
			}
		}
		return c.submit(ctx, http.MethodPost, "/v1/volumes/"+url.PathEscape(pos[0])+"/actions", body, wait)
	}
}
