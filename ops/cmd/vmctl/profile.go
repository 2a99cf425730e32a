package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
)

// Profiles live in a YAML file, like the OpenStack CLI's clouds.yaml or
// cmk's config: each names an API, a key (or the file that holds one, or
// the dev stack's data directory whose dev/admin-key it is) and an output
// format.
//
//	default: dev
//	profiles:
//	  dev:
//	    api: 127.0.0.1:8080
//	    var: ~/src/vmplane/var
//	  prod:
//	    api: https://vmplane.example.com
//	    key_file: ~/.config/vmplane/prod.key
//	    output: json
//
// Each setting is taken from the first of: its flag, its environment
// variable, the profile, the default.

// configHint is where the config file is unless --config or VMCTL_CONFIG
// says otherwise.
const configHint = "$XDG_CONFIG_HOME/vmplane/vmctl.yaml"

const defaultAPI = "http://127.0.0.1:8080"

// outputs are the formats of -o.
var outputs = []string{"table", "json", "yaml", "value"}

// globalFlags are the flags every command takes, before or after its name.
type globalFlags struct {
	api, key, output, profile, varDir, config string
	columns                                   []string
}

// configFile is the file's content.
type configFile struct {
	Default  string             `yaml:"default,omitempty"`
	Profiles map[string]profile `yaml:"profiles,omitempty"`
}

// profile is one named set of settings.
type profile struct {
	API     string `yaml:"api,omitempty"`
	Key     string `yaml:"key,omitempty"`
	KeyFile string `yaml:"key_file,omitempty"`
	Var     string `yaml:"var,omitempty"`
	Output  string `yaml:"output,omitempty"`
}

// profileFields are a profile's settings, as config set names them.
var profileFields = []string{"api", "key", "key_file", "var", "output"}

// settings are what a command runs with, each with where it came from.
type settings struct {
	api, key, output string
	columns          []string
	profileName      string // "" for none
	file             string // the config file; "" when there is no home to hold one
	prof             profile
	apiFrom          string
	keyFrom          string // also set when no key was found: what to do
	outputFrom       string
}

func (a *cli) globalFlags(root *cobra.Command) {
	f := root.PersistentFlags()
	f.StringVar(&a.flags.api, "api", "", "API address, host:port or URL (env VMPLANE_API; default "+defaultAPI+")")
	f.StringVar(&a.flags.key, "key", "", "API key (env VMPLANE_API_KEY; else the profile's; else the dev stack's admin key)")
	f.StringVarP(&a.flags.output, "output", "o", "", "output format: table, json, yaml or value (env VMCTL_OUTPUT; default table)")
	f.StringSliceVarP(&a.flags.columns, "column", "c", nil, "show only these fields, by their API names: -c id,name or -c id -c name")
	f.StringVar(&a.flags.profile, "profile", "", "profile of the config file (env VMCTL_PROFILE; default: the file's default)")
	f.StringVar(&a.flags.varDir, "var", "", "data directory of the dev stack (vmplane dev --var), whose dev/admin-key is the key (env VMPLANE_VAR)")
	f.StringVar(&a.flags.config, "config", "", "config file of profiles (env VMCTL_CONFIG; default "+configHint+")")
	_ = root.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(outputs, cobra.ShellCompDirectiveNoFileComp))
	_ = root.RegisterFlagCompletionFunc("profile", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		cfg, _, err := a.loadConfig()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		return profileNames(cfg), cobra.ShellCompDirectiveNoFileComp
	})
	_ = root.RegisterFlagCompletionFunc("column", func(c *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		return a.columnsOf[c], cobra.ShellCompDirectiveNoFileComp
	})
	_ = root.RegisterFlagCompletionFunc("var", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return nil, cobra.ShellCompDirectiveFilterDirs
	})
}

// setup resolves the settings and, when the command talks to the API with
// a key, finds the key and makes the client.
func (a *cli) setup(needKey bool) error {
	s, err := a.resolve()
	if err != nil {
		return err
	}
	a.settings = s
	if !needKey {
		return nil
	}
	key, from, err := a.findKey()
	if err != nil {
		return err
	}
	a.key, a.keyFrom = key, from
	a.c = newClient(a.api, a.key)
	a.c.notice = func(msg string) { fmt.Fprintf(a.stderr, "vmctl: %s\n", msg) }
	return nil
}

// resolve takes each setting from its flag, its variable, the profile or
// its default.
func (a *cli) resolve() (settings, error) {
	s := settings{columns: a.flags.columns}
	cfg, path, err := a.loadConfig()
	if err != nil {
		return s, err
	}
	s.file = path
	name, nameFrom := first(a.flags.profile, "--profile", a.getenv("VMCTL_PROFILE"), "VMCTL_PROFILE", cfg.Default, "the file's default")
	if name != "" {
		p, ok := cfg.Profiles[name]
		if !ok {
			return s, fmt.Errorf("%w: no profile %q (%s) in %s; profiles: %s", errUsage, name, nameFrom, orNone(path),
				orDash(strings.Join(profileNames(cfg), ", ")))
		}
		s.profileName, s.prof = name, p
	}
	inProfile := "profile " + name
	api, from := first(a.flags.api, "--api", a.getenv("VMPLANE_API"), "VMPLANE_API", s.prof.API, inProfile, defaultAPI, "default")
	if s.api, err = normalizeAPI(api); err != nil {
		return s, fmt.Errorf("%w: %s: %v", errUsage, from, err)
	}
	s.apiFrom = from
	s.output, s.outputFrom = first(a.flags.output, "--output", a.getenv("VMCTL_OUTPUT"), "VMCTL_OUTPUT", s.prof.Output, inProfile, "table", "default")
	if !slices.Contains(outputs, s.output) {
		return s, fmt.Errorf("%w: --output must be one of %s, not %q (%s)", errUsage, strings.Join(outputs, ", "), s.output, s.outputFrom)
	}
	return s, nil
}

// first is the first value that is not empty, and what it is.
func first(pairs ...string) (value, from string) {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i] != "" {
			return pairs[i], pairs[i+1]
		}
	}
	return "", ""
}

func orNone(path string) string {
	if path == "" {
		return "no config file (HOME unset)"
	}
	return path
}

func profileNames(cfg configFile) []string {
	names := make([]string, 0, len(cfg.Profiles))
	for n := range cfg.Profiles {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// normalizeAPI makes an API address a base URL: host:port gets http://,
// a trailing /v1 (the API's own prefix) and slashes go.
func normalizeAPI(v string) (string, error) {
	raw := strings.TrimSpace(v)
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("API address %q: want host:port or http(s)://host:port, optionally with /v1", v)
	}
	if strings.HasPrefix(u.Host, ":") {
		u.Host = "127.0.0.1" + u.Host
	}
	u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/v1")
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u.String(), nil
}

// configPath is --config, else VMCTL_CONFIG, else the XDG place; "" when
// there is no home.
func (a *cli) configPath() string {
	if p, _ := first(a.flags.config, "", a.getenv("VMCTL_CONFIG"), ""); p != "" {
		return p
	}
	if x := a.getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "vmplane", "vmctl.yaml")
	}
	if h := a.getenv("HOME"); h != "" {
		return filepath.Join(h, ".config", "vmplane", "vmctl.yaml")
	}
	return ""
}

// loadConfig reads the config file; a missing file is an empty one. A file
// that holds a key and others may read is warned about.
func (a *cli) loadConfig() (configFile, string, error) {
	var cfg configFile
	path := a.configPath()
	if path == "" {
		return cfg, "", nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return cfg, path, nil
	}
	if err != nil {
		return cfg, path, fmt.Errorf("read config: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		return cfg, path, fmt.Errorf("config %s: %w", path, err)
	}
	for _, p := range cfg.Profiles {
		if p.Key != "" {
			a.warnReadable(path, "holds an API key")
			break
		}
	}
	return cfg, path, nil
}

// warnReadable warns when others than its owner may read path.
func (a *cli) warnReadable(path, what string) {
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o044 != 0 {
		fmt.Fprintf(a.stderr, "vmctl: warning: %s %s and others may read it (mode %04o); chmod 600 %s\n", path, what, fi.Mode().Perm(), path)
	}
}

// findKey takes --key, else VMPLANE_API_KEY, else the profile's key or
// key_file, else the dev stack's admin key: in --var, VMPLANE_VAR or the
// profile's var, else in var/ of this directory or a parent. It never
// returns the key in from, only where it was.
func (a *cli) findKey() (key, from string, err error) {
	if k, from := first(a.flags.key, "--key", a.getenv("VMPLANE_API_KEY"), "VMPLANE_API_KEY", a.prof.Key, "profile "+a.profileName); k != "" {
		return k, from, nil
	}
	if a.prof.KeyFile != "" {
		path := a.expand(a.prof.KeyFile)
		k, err := readKey(path)
		if err != nil {
			return "", "", fmt.Errorf("profile %s: key_file: %w", a.profileName, err)
		}
		a.warnReadable(path, "is an API key")
		return k, "key_file " + path + " of profile " + a.profileName, nil
	}
	if dir, from := first(a.flags.varDir, "--var", a.getenv("VMPLANE_VAR"), "VMPLANE_VAR", a.expand(a.prof.Var), "var of profile "+a.profileName); dir != "" {
		path := filepath.Join(dir, "dev", "admin-key")
		k, err := readKey(path)
		if err != nil {
			return "", "", fmt.Errorf("the dev stack's admin key (%s %s): %w; is `vmplane dev --var %s` running?", from, dir, err, dir)
		}
		return k, path + " (" + from + ")", nil
	}
	wd, _ := os.Getwd()
	for dir := wd; dir != ""; {
		path := filepath.Join(dir, "var", "dev", "admin-key")
		if k, err := readKey(path); err == nil {
			return k, path, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", "", err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "", "", fmt.Errorf(`no API key. Give one of:
  export VMPLANE_API_KEY=vmp_...                 # a key (vmctl key create ACCOUNT prints one)
  export VMPLANE_VAR=/path/to/vmplane/var        # the dev stack's data (vmplane dev --var), whose dev/admin-key is read
or --key, --var, or a profile with key_file in %s (vmctl config set NAME key_file PATH).
No var/dev/admin-key in %s or a directory above it`, orNone(a.configPath()), wd)
}

// readKey reads a key file: its first line.
func readKey(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	k, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if k == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return strings.TrimSpace(k), nil
}

// expand turns ~/ into the home directory and makes a relative path
// relative to the config file's directory.
func (a *cli) expand(p string) string {
	if p == "" {
		return ""
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok && a.getenv("HOME") != "" {
		return filepath.Join(a.getenv("HOME"), rest)
	}
	if !filepath.IsAbs(p) && a.configPath() != "" {
		return filepath.Join(filepath.Dir(a.configPath()), p)
	}
	return p
}
