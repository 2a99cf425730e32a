package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// configCommands read and write the profiles of the config file
// (profile.go). None prints a key: only whether a profile has one.
var configCommands = []spec{
	{path: "config list", short: "List the profiles of the config file", cmd: configList, shows: configRow{}, bare: true},
	{path: "config show", short: "Show the settings in effect and where each comes from (never the key)", cmd: configShow,
		shows: configInEffect{}, offline: true},
	{path: "config set", args: []string{"PROFILE", "FIELD", "VALUE"},
		short: "Set a profile's api, key, key_file, var or output (an empty VALUE removes it)", cmd: configSet, bare: true},
	{path: "config use", args: []string{"PROFILE"}, short: "Make a profile the default", cmd: configUse, bare: true},
}

// configRow is a profile as config list shows it.
type configRow struct {
	Name    string `json:"name"`
	Default bool   `json:"default"`
	API     string `json:"api"`
	KeySet  bool   `json:"key_set"`
	KeyFile string `json:"key_file"`
	Var     string `json:"var"`
	Output  string `json:"output"`
}

// configInEffect is what config show prints.
type configInEffect struct {
	ConfigFile string `json:"config_file"`
	Profile    string `json:"profile"`
	API        string `json:"api"`
	APIFrom    string `json:"api_from"`
	KeyFrom    string `json:"key_from"`
	Output     string `json:"output"`
	OutputFrom string `json:"output_from"`
}

// bareOutput is -o for the commands that resolve no settings: the flag's
// or table.
func (a *cli) bareOutput() error {
	a.output, _ = first(a.flags.output, "", "table", "")
	a.columns = a.flags.columns
	if !slices.Contains(outputs, a.output) {
		return fmt.Errorf("%w: --output must be one of %s, not %q", errUsage, strings.Join(outputs, ", "), a.output)
	}
	return nil
}

func configList(a *cli, _ *pflag.FlagSet) runner {
	return func(context.Context, []string) error {
		if err := a.bareOutput(); err != nil {
			return err
		}
		cfg, path, err := a.loadConfig()
		if err != nil {
			return err
		}
		rows := []configRow{}
		for _, n := range profileNames(cfg) {
			p := cfg.Profiles[n]
			rows = append(rows, configRow{Name: n, Default: n == cfg.Default, API: p.API, KeySet: p.Key != "", KeyFile: p.KeyFile, Var: p.Var, Output: p.Output})
		}
		raw, _ := json.Marshal(rows)
		return a.emit(raw, func(w io.Writer) error {
			if len(rows) == 0 {
				fmt.Fprintf(w, "no profiles in %s; add one: vmctl config set NAME api HOST:PORT\n", orNone(path))
				return nil
			}
			fmt.Fprintln(w, "NAME\tDEFAULT\tAPI\tKEY\tOUTPUT")
			for _, r := range rows {
				def := ""
				if r.Default {
					def = "*"
				}
				key := "-"
				switch {
				case r.KeySet:
					key = "in the file"
				case r.KeyFile != "":
					key = "key_file " + r.KeyFile
				case r.Var != "":
					key = "var " + r.Var
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", r.Name, def, orDash(r.API), key, orDash(r.Output))
			}
			return nil
		})
	}
}

func configShow(a *cli, _ *pflag.FlagSet) runner {
	return func(context.Context, []string) error {
		_, keyFrom, err := a.findKey()
		if err != nil {
			keyFrom = "none: give --key, VMPLANE_API_KEY or VMPLANE_VAR, or a key_file in the profile"
		}
		v := configInEffect{ConfigFile: a.file, Profile: a.profileName, API: a.api, APIFrom: a.apiFrom, KeyFrom: keyFrom,
			Output: a.output, OutputFrom: a.outputFrom}
		raw, _ := json.Marshal(v)
		return a.emit(raw, func(w io.Writer) error {
			fmt.Fprintf(w, "config file:\t%s\n", orNone(v.ConfigFile))
			fmt.Fprintf(w, "profile:\t%s\n", orDash(v.Profile))
			fmt.Fprintf(w, "api:\t%s (%s)\n", v.API, v.APIFrom)
			fmt.Fprintf(w, "key:\t%s\n", v.KeyFrom)
			fmt.Fprintf(w, "output:\t%s (%s)\n", v.Output, v.OutputFrom)
			return nil
		})
	}
}

func configSet(a *cli, _ *pflag.FlagSet) runner {
	return func(_ context.Context, pos []string) error {
		name, field, value := pos[0], pos[1], strings.TrimSpace(pos[2])
		if !slices.Contains(profileFields, field) {
			return fmt.Errorf("%w: a profile has no field %q; fields: %s", errUsage, field, strings.Join(profileFields, ", "))
		}
		if err := checkField(field, value); err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		path, err := a.editConfig(func(root *yaml.Node) error {
			profiles := mapValue(root, "profiles", yaml.MappingNode)
			p := mapValue(profiles, name, yaml.MappingNode)
			if value == "" {
				mapDelete(p, field)
			} else {
				mapValue(p, field, yaml.ScalarNode).SetString(value)
			}
			return nil
		})
		if err != nil {
			return err
		}
		shown := value
		if field == "key" && value != "" {
			shown = "(a key)"
		}
		fmt.Fprintf(a.stdout, "profile %s: %s = %s in %s\n", name, field, orDash(shown), path)
		return nil
	}
}

// checkField refuses a value a profile's field cannot hold.
func checkField(field, value string) error {
	if value == "" {
		return nil
	}
	switch field {
	case "api":
		_, err := normalizeAPI(value)
		return err
	case "output":
		if !slices.Contains(outputs, value) {
			return fmt.Errorf("output must be one of %s, not %q", strings.Join(outputs, ", "), value)
		}
	}
	return nil
}

func configUse(a *cli, _ *pflag.FlagSet) runner {
	return func(_ context.Context, pos []string) error {
		cfg, path, err := a.loadConfig()
		if err != nil {
			return err
		}
		if _, ok := cfg.Profiles[pos[0]]; !ok {
			return fmt.Errorf("%w: no profile %q in %s; profiles: %s", errUsage, pos[0], orNone(path), orDash(strings.Join(profileNames(cfg), ", ")))
		}
		if _, err := a.editConfig(func(root *yaml.Node) error {
			mapValue(root, "default", yaml.ScalarNode).SetString(pos[0])
			return nil
		}); err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "profile %s is the default in %s\n", pos[0], path)
		return nil
	}
}

// editConfig changes the config file's YAML in place, keeping its comments
// and order, and writes it back readable by its owner only: to a new file
// renamed over the old one, so that a crash leaves the old or the new.
func (a *cli) editConfig(edit func(root *yaml.Node) error) (string, error) {
	path := a.configPath()
	if path == "" {
		return "", fmt.Errorf("%w: no config file: HOME is unset; give --config or VMCTL_CONFIG", errUsage)
	}
	var doc yaml.Node
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return "", fmt.Errorf("read config: %w", err)
	default:
		if err := yaml.Unmarshal(b, &doc); err != nil {
			return "", fmt.Errorf("config %s: %w", path, err)
		}
	}
	if doc.Kind == 0 {
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return "", fmt.Errorf("config %s: not a mapping of default and profiles", path)
	}
	if err := edit(root); err != nil {
		return "", err
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return "", fmt.Errorf("config %s: %w", path, err)
	}
	_ = enc.Close()
	// What is written must read back.
	var cfg configFile
	dec := yaml.NewDecoder(bytes.NewReader(out.Bytes()))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		return "", fmt.Errorf("config %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("write config: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".vmctl-*.yaml")
	if err != nil {
		return "", fmt.Errorf("write config: %w", err)
	}
	// Once renamed there is nothing left to remove.
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(out.Bytes()); err != nil {
		_ = tmp.Close()
		return "", fmt.Errorf("write config: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("write config: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("write config: %w", err)
	}
	return path, nil
}

// mapValue is the value of key in mapping m, added as an empty node of
// kind when missing (or not of that kind).
func mapValue(m *yaml.Node, key string, kind yaml.Kind) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			v := m.Content[i+1]
			if v.Kind != kind {
				*v = yaml.Node{Kind: kind}
			}
			return v
		}
	}
	k := &yaml.Node{Kind: yaml.ScalarNode}
	k.SetString(key)
	v := &yaml.Node{Kind: kind}
	m.Content = append(m.Content, k, v)
	return v
}

func mapDelete(m *yaml.Node, key string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = slices.Delete(m.Content, i, i+2)
			return
		}
	}
}
