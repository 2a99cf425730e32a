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

// settingsCommands are the operator settings of issue 26 (admin).
var settingsCommands = []spec{
	{path: "settings list", short: "List the settings and the values in effect", cmd: settingsList, shows: api.Setting{}},
	{path: "settings get", args: []string{"NAME"}, short: "Show a setting and every value set", cmd: settingsGet, shows: api.Setting{}},
	{path: "settings set", args: []string{"NAME", "VALUE"}, short: "Set a setting, globally or for a zone or cluster", cmd: settingsSet, shows: api.Setting{}},
	{path: "settings reset", args: []string{"NAME"}, short: "Set a setting back to the wider scope's value or its default", cmd: settingsReset, shows: api.Setting{}},
}

// scopeFlags registers --zone and --cluster: the scope a setting is read
// or written at (neither: global).
func scopeFlags(fs *pflag.FlagSet) (zone, cluster *string) {
	return fs.String("zone", "", "zone: its value, else the global one"),
		fs.String("cluster", "", "cluster: its value, else the zone's (with --zone), else the global one")
}

func scopeQuery(zone, cluster string) url.Values {
	q := url.Values{}
	if zone != "" {
		q.Set("zone", zone)
	}
	if cluster != "" {
		q.Set("cluster", cluster)
	}
	return q
}

func settingsList(a *cli, fs *pflag.FlagSet) runner {
	zone, cluster := scopeFlags(fs)
	return func(ctx context.Context, _ []string) error {
		path := "/v1/settings?" + scopeQuery(*zone, *cluster).Encode()
		return listAll(ctx, a, path, func(w io.Writer, rows []api.Setting) error {
			fmt.Fprintln(w, "NAME\tVALUE\tFROM\tDEFAULT\tSCOPES\tRANGE")
			for _, s := range rows {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.Value, s.Scope, s.Default, strings.Join(s.Scopes, ","), s.Range)
			}
			return nil
		})
	}
}

func settingsGet(a *cli, fs *pflag.FlagSet) runner {
	zone, cluster := scopeFlags(fs)
	return func(ctx context.Context, pos []string) error {
		return a.setting(ctx, http.MethodGet, pos[0], scopeQuery(*zone, *cluster), nil)
	}
}

func settingsSet(a *cli, fs *pflag.FlagSet) runner {
	zone, cluster := scopeFlags(fs)
	return func(ctx context.Context, pos []string) error {
		return a.setting(ctx, http.MethodPut, pos[0], nil, api.SettingRequest{Value: pos[1], Zone: *zone, Cluster: *cluster})
	}
}

func settingsReset(a *cli, fs *pflag.FlagSet) runner {
	zone, cluster := scopeFlags(fs)
	return func(ctx context.Context, pos []string) error {
		return a.setting(ctx, http.MethodDelete, pos[0], scopeQuery(*zone, *cluster), nil)
	}
}

// setting calls one setting's route and shows the answer: the setting,
// the value in effect and every value set.
func (a *cli) setting(ctx context.Context, method, name string, q url.Values, body any) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	var raw json.RawMessage
	if err := a.c.call(ctx, method, "/v1/settings/"+url.PathEscape(name), q, body, &raw); err != nil {
		return err
	}
	return a.emit(raw, func(w io.Writer) error {
		s, err := decodeRaw[api.Setting](raw)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s = %s (%s)\n%s\n%s, %s; default %s; scopes %v; applied by %v\n", s.Name, s.Value, s.Scope,
			s.Description, s.Kind, s.Range, s.Default, s.Scopes, s.AppliedBy)
		for _, v := range s.Values {
			fmt.Fprintf(w, "  %s %s = %s (by %s at %s)\n", v.Scope, orDash(v.ScopeID), v.Value, orDash(v.By), v.At.Format("2006-01-02T15:04:05Z"))
		}
		return nil
	})
}
