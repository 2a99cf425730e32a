package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/vmplane/vmplane/api"
)

// settingsCommands are the operator settings of issue 26 (admin).
var settingsCommands = map[string]command{
	"settings list":  settingsList,
	"settings get":   settingsGet,
	"settings set":   settingsSet,
	"settings reset": settingsReset,
}

// scopeFlags registers --zone and --cluster: the scope a setting is read
// or written at (neither: global).
func scopeFlags(fs *flag.FlagSet) (zone, cluster *string) {
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

func settingsList(ctx context.Context, a *cli, fs *flag.FlagSet, args []string, getenv func(string) string) error {
	zone, cluster := scopeFlags(fs)
	if _, err := a.setup(fs, args, getenv); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	var page api.List[api.Setting]
	if err := a.c.call(ctx, http.MethodGet, "/v1/settings", scopeQuery(*zone, *cluster), nil, &page); err != nil {
		return err
	}
	raw, _ := json.Marshal(page.Items)
	return a.emit(raw, func(w io.Writer) error {
		fmt.Fprintln(w, "NAME\tVALUE\tFROM\tDEFAULT\tSCOPES\tRANGE")
		for _, s := range page.Items {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.Value, s.Scope, s.Default, strings.Join(s.Scopes, ","), s.Range)
		}
		return nil
	})
}

func settingsGet(ctx context.Context, a *cli, fs *flag.FlagSet, args []string, getenv func(string) string) error {
	zone, cluster := scopeFlags(fs)
	pos, err := a.setup(fs, args, getenv, "NAME")
	if err != nil {
		return err
	}
	return a.setting(ctx, http.MethodGet, pos[0], scopeQuery(*zone, *cluster), nil)
}

func settingsSet(ctx context.Context, a *cli, fs *flag.FlagSet, args []string, getenv func(string) string) error {
	zone, cluster := scopeFlags(fs)
	pos, err := a.setup(fs, args, getenv, "NAME", "VALUE")
	if err != nil {
		return err
	}
	return a.setting(ctx, http.MethodPut, pos[0], nil, api.SettingRequest{Value: pos[1], Zone: *zone, Cluster: *cluster})
}

func settingsReset(ctx context.Context, a *cli, fs *flag.FlagSet, args []string, getenv func(string) string) error {
	zone, cluster := scopeFlags(fs)
	pos, err := a.setup(fs, args, getenv, "NAME")
	if err != nil {
		return err
	}
	return a.setting(ctx, http.MethodDelete, pos[0], scopeQuery(*zone, *cluster), nil)
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
