package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestNormalizeAPI(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:8080":              "http://127.0.0.1:8080",
		"localhost:8080/":             "http://localhost:8080",
		":8080":                       "http://127.0.0.1:8080",
		"http://10.0.0.1:8080/v1":     "http://10.0.0.1:8080",
		"http://10.0.0.1:8080/v1/":    "http://10.0.0.1:8080",
		"https://api.example.com":     "https://api.example.com",
		"https://example.com/vmp/v1/": "https://example.com/vmp",
	} {
		if got, err := normalizeAPI(in); err != nil || got != want {
			t.Errorf("normalizeAPI(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "ftp://host:21", "http://", "host:8080?x=1", "http://[::1"} {
		if got, err := normalizeAPI(bad); err == nil {
			t.Errorf("normalizeAPI(%q) = %q, want an error", bad, got)
		}
	}
}

// TestAPIAddressForms: --api takes host:port and URLs with or without /v1.
func TestAPIAddressForms(t *testing.T) {
	s := newStack(t)
	hostPort := strings.TrimPrefix(s.url, "http://")
	for _, api := range []string{hostPort, s.url, s.url + "/v1", s.url + "/v1/"} {
		code, out, errs := vmctl(t, map[string]string{"VMPLANE_API_KEY": s.user}, "--api", api, "vm", "list", "-o", "value", "-c", "id")
		if code != exitOK || out != "vm-1\n" {
			t.Errorf("--api %s: exit %d: %q %s", api, code, out, errs)
		}
	}
}

// profileEnv writes a config file of profiles and returns an environment
// that points at it.
func profileEnv(t *testing.T, s *stack, mode os.FileMode) (map[string]string, string) {
	t.Helper()
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "admin.key")
	if err := os.WriteFile(keyFile, []byte(s.admin+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := `# profiles of the tests
default: user
profiles:
  user:
    api: ` + strings.TrimPrefix(s.url, "http://") + `
    key: ` + s.user + `
  admin:
    api: ` + s.url + `/v1
    key_file: admin.key   # relative to this file
    output: json
  nowhere:
    api: 127.0.0.1:1
`
	path := filepath.Join(dir, "vmctl.yaml")
	if err := os.WriteFile(path, []byte(cfg), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	return map[string]string{"VMCTL_CONFIG": path, "HOME": dir}, path
}

func TestProfiles(t *testing.T) {
	s := newStack(t)
	env, path := profileEnv(t, s, 0o600)

	// The file's default profile: a user's key sees no hosts.
	if code, _, errs := vmctl(t, env, "host", "list"); code != exitFail || !strings.Contains(errs, "admin role required") {
		t.Fatalf("default profile: exit %d %s", code, errs)
	}
	// --profile, and VMCTL_PROFILE: the admin's key from its key_file, and
	// its output json.
	code, out, errs := vmctl(t, env, "--profile", "admin", "host", "list")
	if code != exitOK || !strings.HasPrefix(out, "[") || !strings.Contains(out, `"id": "host-2"`) {
		t.Fatalf("--profile admin: exit %d: %s%s", code, out, errs)
	}
	env["VMCTL_PROFILE"] = "admin"
	if code, out, _ := vmctl(t, env, "host", "list", "-o", "value", "-c", "id"); code != exitOK || out != "host-2\n" {
		t.Fatalf("VMCTL_PROFILE=admin, -o value: exit %d: %q", code, out)
	}

	// Flags before the environment before the profile before defaults.
	show := func(extra map[string]string, args ...string) (configInEffect, string) {
		t.Helper()
		e := map[string]string{}
		for k, v := range env {
			e[k] = v
		}
		for k, v := range extra {
			e[k] = v
		}
		code, out, errs := vmctl(t, e, append([]string{"config", "show"}, args...)...)
		if code != exitOK {
			t.Fatalf("config show: exit %d: %s%s", code, out, errs)
		}
		if strings.Contains(out, s.admin) || strings.Contains(out, s.user) {
			t.Fatalf("config show prints a key:\n%s", out)
		}
		// JSON is YAML too: read either.
		var m map[string]any
		var c configInEffect
		if yaml.Unmarshal([]byte(out), &m) == nil {
			b, _ := json.Marshal(m)
			_ = json.Unmarshal(b, &c)
		}
		return c, out
	}
	c, _ := show(nil)
	if c.Profile != "admin" || c.API != s.url || c.APIFrom != "profile admin" || c.Output != "json" || c.OutputFrom != "profile admin" ||
		!strings.HasPrefix(c.KeyFrom, "key_file "+filepath.Join(filepath.Dir(path), "admin.key")) {
		t.Errorf("profile: %+v", c)
	}
	c, _ = show(map[string]string{"VMPLANE_API": "127.0.0.1:9", "VMPLANE_API_KEY": "k", "VMCTL_OUTPUT": "yaml"})
	if c.API != "http://127.0.0.1:9" || c.APIFrom != "VMPLANE_API" || c.KeyFrom != "VMPLANE_API_KEY" || c.Output != "yaml" || c.OutputFrom != "VMCTL_OUTPUT" {
		t.Errorf("environment over profile: %+v", c)
	}
	c, _ = show(map[string]string{"VMPLANE_API": "127.0.0.1:9", "VMPLANE_API_KEY": "k"}, "--api", "127.0.0.1:7", "--key", "f", "-o", "json")
	if c.API != "http://127.0.0.1:7" || c.APIFrom != "--api" || c.KeyFrom != "--key" || c.OutputFrom != "--output" {
		t.Errorf("flags over environment: %+v", c)
	}
	_, out = show(map[string]string{"VMCTL_CONFIG": filepath.Join(t.TempDir(), "none.yaml"), "VMCTL_PROFILE": ""})
	// A checkout where `make run` ran has a dev stack's key above this
	// package, which the last lookup finds.
	wantKey := "key:          none: give --key"
	if k := devKeyAbove(t); k != "" {
		wantKey = "key:          " + k
	}
	for _, w := range []string{"profile:      -", "api:          " + defaultAPI + " (default)", wantKey, "output:       table (default)"} {
		if !strings.Contains(out, w) {
			t.Errorf("defaults: no %q in\n%s", w, out)
		}
	}

	// An unknown profile is a usage error naming the ones there are.
	if code, _, errs := vmctl(t, env, "--profile", "prod", "vm", "list"); code != exitUsage ||
		!strings.Contains(errs, `no profile "prod" (--profile) in `+path+"; profiles: admin, nowhere, user\nRun 'vmctl vm list --help'") {
		t.Errorf("unknown profile: exit %d %s", code, errs)
	}

	// config list says whether a profile has a key, never the key.
	code, out, _ = vmctl(t, env, "config", "list")
	if code != exitOK || strings.Contains(out, s.user) || !strings.Contains(out, "in the file") || !strings.Contains(out, "key_file admin.key") {
		t.Fatalf("config list: exit %d:\n%s", code, out)
	}
	if strings.Contains(out, "warning") {
		t.Fatalf("a 0600 file was warned about:\n%s", out)
	}
}

// TestProfileFileReadableByOthers: a file holding a key that others may
// read is warned about; the command still runs.
func TestProfileFileReadableByOthers(t *testing.T) {
	s := newStack(t)
	env, path := profileEnv(t, s, 0o644)
	code, out, errs := vmctl(t, env, "vm", "list", "-o", "value", "-c", "id")
	if code != exitOK || out != "vm-1\n" || !strings.Contains(errs, "warning: "+path+" holds an API key and others may read it (mode 0644); chmod 600") {
		t.Fatalf("exit %d: %q %q", code, out, errs)
	}
}

// TestConfigSetAndUse writes profiles with vmctl config set and use, keeps
// the file's comments, and makes it readable by its owner only.
func TestConfigSetAndUse(t *testing.T) {
	s := newStack(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "vmctl.yaml")
	env := map[string]string{"VMCTL_CONFIG": path}
	for _, args := range [][]string{
		{"config", "set", "lab", "api", strings.TrimPrefix(s.url, "http://")},
		{"config", "set", "lab", "key", s.user},
		{"config", "set", "lab", "output", "yaml"},
		{"config", "use", "lab"},
	} {
		code, out, errs := vmctl(t, env, args...)
		if code != exitOK || strings.Contains(out, s.user) {
			t.Fatalf("vmctl %s: exit %d: %s%s", strings.Join(args, " "), code, out, errs)
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("config file: %v %v", fi, err)
	}
	if code, out, errs := vmctl(t, env, "vm", "list", "-c", "id"); code != exitOK || out != "- id: vm-1\n" {
		t.Fatalf("vm list with the profile set: exit %d: %q %s", code, out, errs)
	}
	b, _ := os.ReadFile(path)
	if err := os.WriteFile(path, append([]byte("# mine\n"), b...), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := vmctl(t, env, "config", "set", "lab", "output", ""); code != exitOK {
		t.Fatalf("config set output '': exit %d %s", code, errs)
	}
	b, _ = os.ReadFile(path)
	if !strings.HasPrefix(string(b), "# mine\n") || strings.Contains(string(b), "output") {
		t.Fatalf("config file after unset:\n%s", b)
	}
	for _, args := range [][]string{
		{"config", "set", "lab", "colour", "red"},
		{"config", "set", "lab", "output", "xml"},
		{"config", "set", "lab", "api", "ftp://x"},
		{"config", "use", "nope"},
	} {
		if code, _, errs := vmctl(t, env, args...); code != exitUsage {
			t.Errorf("vmctl %s: exit %d %s, want 2", strings.Join(args, " "), code, errs)
		}
	}
}

// TestKeyFromVar: VMPLANE_VAR, --var or a profile's var point at the dev
// stack's data directory, whose dev/admin-key is the key; a directory
// without one says so.
func TestKeyFromVar(t *testing.T) {
	s := newStack(t)
	t.Chdir(t.TempDir())
	varDir := t.TempDir()
	if err := writeFile(filepath.Join(varDir, "dev", "admin-key"), s.admin+"\n"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		env  map[string]string
		args []string
	}{
		{map[string]string{"VMPLANE_API": s.url, "VMPLANE_VAR": varDir}, nil},
		{map[string]string{"VMPLANE_API": s.url}, []string{"--var", varDir}},
	} {
		if code, out, errs := vmctl(t, tc.env, append(tc.args, "host", "list", "-o", "value", "-c", "id")...); code != exitOK || out != "host-2\n" {
			t.Errorf("%v %v: exit %d: %q %s", tc.env, tc.args, code, out, errs)
		}
	}
	empty := t.TempDir()
	code, _, errs := vmctl(t, map[string]string{"VMPLANE_API": s.url, "VMPLANE_VAR": empty}, "host", "list")
	if code != exitFail || !strings.Contains(errs, filepath.Join(empty, "dev", "admin-key")) || !strings.Contains(errs, "vmplane dev --var "+empty) {
		t.Errorf("empty VMPLANE_VAR: exit %d %s", code, errs)
	}
}

// devKeyAbove returns the var/dev/admin-key in the working directory or a
// parent, "" when there is none.
func devKeyAbove(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if p := filepath.Join(dir, "var", "dev", "admin-key"); fileExists(p) {
			return p
		}
		if filepath.Dir(dir) == dir {
			return ""
		}
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
