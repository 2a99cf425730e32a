package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"runtime/debug"

	"github.com/spf13/pflag"
)

// versionCommands say what vmctl and the gateway are.
var versionCommands = []spec{
	{path: "version", short: "Show vmctl's version and the API's", cmd: versionCmd, shows: versionInfo{}, offline: true},
}

// versionInfo is what vmctl version prints.
type versionInfo struct {
	Client clientVersion  `json:"client"`
	Server *serverVersion `json:"server,omitempty"`
}

// clientVersion is vmctl's build: the module version (a tag or a pseudo
// version when built with go install, "(devel)" in a work tree) and the
// VCS revision the go command stamped.
type clientVersion struct {
	Version   string `json:"version"`
	Module    string `json:"module"`
	Revision  string `json:"revision,omitempty"`
	Time      string `json:"time,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

// serverVersion is what the gateway says of itself: the API version of
// its OpenAPI document, and a build version if /healthz carries one (the
// gateway publishes none today).
type serverVersion struct {
	URL        string `json:"url"`
	APIVersion string `json:"api_version"`
	Version    string `json:"version,omitempty"`
}

func buildVersion() clientVersion {
	v := clientVersion{Version: "unknown", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v.Version, v.Module = bi.Main.Version, bi.Main.Path
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func versionCmd(a *cli, fs *pflag.FlagSet) runner {
	clientOnly := fs.Bool("client", false, "vmctl's version only: do not ask the API")
	return func(ctx context.Context, _ []string) error {
		info := versionInfo{Client: buildVersion()}
		var serverErr error
		if !*clientOnly {
			ctx, cancel := context.WithTimeout(ctx, requestTimeout)
			defer cancel()
			info.Server, serverErr = a.serverVersion(ctx)
		}
		raw, _ := json.Marshal(info)
		if err := a.emit(raw, func(w io.Writer) error {
			c := info.Client
			line := fmt.Sprintf("client:\tvmctl %s", c.Version)
			if c.Revision != "" {
				line += ", revision " + c.Revision
				if c.Modified {
					line += " (modified)"
				}
				if c.Time != "" {
					line += " of " + c.Time
				}
			}
			fmt.Fprintf(w, "%s, %s %s\n", line, c.GoVersion, c.Platform)
			if s := info.Server; s != nil {
				build := s.Version
				if build == "" {
					build = "build version not published by the gateway"
				}
				fmt.Fprintf(w, "server:\t%s, API version %s (%s)\n", s.URL, s.APIVersion, build)
			}
			return nil
		}); err != nil {
			return err
		}
		if serverErr != nil {
			return fmt.Errorf("server version: %w", serverErr)
		}
		return nil
	}
}

// serverVersion reads the API version from /v1/openapi.json and a build
// version from /healthz, both served without a key.
func (a *cli) serverVersion(ctx context.Context) (*serverVersion, error) {
	c := newClient(a.api, "")
	var doc struct {
		Info struct {
			Version string `json:"version"`
		} `json:"info"`
	}
	if err := c.call(ctx, http.MethodGet, "/v1/openapi.json", nil, nil, &doc); err != nil {
		return nil, err
	}
	s := &serverVersion{URL: c.base, APIVersion: doc.Info.Version}
	var health struct {
		Version string `json:"version"`
	}
	if c.call(ctx, http.MethodGet, "/healthz", nil, nil, &health) == nil {
		s.Version = health.Version
	}
	return s, nil
}
