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

// volumeCommands are the VM actions that take a volume, as commands on the
// volume (vmctl volume resize VOL --size 20, volume detach VOL, ...): they
// post to /v1/volumes/{id}/actions, which issues the action of the
// volume's VM.
func volumeCommands() []spec {
	var cmds []spec
	for _, a := range actions.Catalog {
		if _, ok := a.Param("volume_id"); ok {
			cmds = append(cmds, spec{path: "volume " + volumeVerb(a), args: []string{"VOLUME"}, short: capitalize(a.Doc) + " (its VM's action)",
				cmd: volumeLifecycle(a), shows: api.Job{}})
		}
	}
	return cmds
}

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

func volumeLifecycle(a actions.Action) command {
	return func(c *cli, fs *pflag.FlagSet) runner {
		params := volumeParams(a)
		values := make([]func() (any, bool), len(params))
		for i, p := range params {
			values[i] = paramFlag(fs, p)
		}
		wait := waitFlags(fs)
		return func(ctx context.Context, pos []string) error {
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
}
