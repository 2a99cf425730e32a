package deploy_test

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/vmplane/vmplane/ops/roles"
)

// The kit as systemd sees it: unit files, the instances of the templates,
// and the environment each instance runs with.

const (
	etcDir = "/etc/vmplane"           // where the units read their env files
	binary = "/usr/local/bin/vmplane" // what their ExecStart runs
)

// projectorKinds are what `vmplane projector --kind` takes (runProjector).
var projectorKinds = []string{"journal", "postgres"}

// unit is one unit file of systemd/.
type unit struct {
	file    string              // vmplane-processor@.service
	service map[string][]string // [Service] settings, in the file's order
}

// instance is a unit as systemd runs it: vmplane-processor@vm.service for
// a template, the unit itself otherwise.
type instance struct {
	unit *unit
	name string // vmplane-processor@vm.service
	arg  string // what %i stands for; "" for a unit that is no template
}

// kit is the kit of the repository.
type kit struct {
	dir       string // ops/deploy
	units     []*unit
	instances []instance
}

func loadKit(t *testing.T) *kit {
	t.Helper()
	k := &kit{dir: "."}
	files, err := filepath.Glob(filepath.Join(k.dir, "systemd", "*.service"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no units in systemd/: %v", err)
	}
	for _, f := range files {
		u, err := readUnit(f)
		if err != nil {
			t.Fatal(err)
		}
		k.units = append(k.units, u)
		if !u.template() {
			k.instances = append(k.instances, instance{unit: u, name: u.file})
			continue
		}
		kinds, err := k.kinds(u)
		if err != nil {
			t.Fatal(err)
		}
		for _, kind := range kinds {
			k.instances = append(k.instances, instance{unit: u, name: strings.Replace(u.file, "@.", "@"+kind+".", 1), arg: kind})
		}
	}
	return k
}

// kinds are the instances of a template: one per file of env/ named after
// the instance (processor-vm.env), which must be the kinds the role has.
func (k *kit) kinds(u *unit) ([]string, error) {
	role := u.role()
	files, _ := filepath.Glob(filepath.Join(k.dir, "env", role+"-*.env"))
	var kinds []string
	for _, f := range files {
		kinds = append(kinds, strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), role+"-"), ".env"))
	}
	sort.Strings(kinds)
	var want []string
	switch role {
	case "processor":
		want = slices.Sorted(slices.Values(roles.ProcessorKinds))
	case "projector":
		want = projectorKinds
	default:
		return nil, fmt.Errorf("%s: a template of role %q, which has no kinds", u.file, role)
	}
	if !slices.Equal(kinds, want) {
		return nil, fmt.Errorf("%s: env/%s-KIND.env for %v, want one for each kind %v", u.file, role, kinds, want)
	}
	return kinds, nil
}

func (u *unit) template() bool { return strings.Contains(u.file, "@.") }

// role is the vmplane command the unit runs: broker, gateway, agent,
// processor, projector.
func (u *unit) role() string {
	f := strings.Fields(u.get("ExecStart"))
	if len(f) < 2 {
		return ""
	}
	return f[1]
}

// get is the last value of a [Service] setting, "" when unset.
func (u *unit) get(key string) string {
	v := u.service[key]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

// readUnit reads the [Service] section of a unit file. The kit's units
// use no line continuations or quoting, and readUnit refuses them rather
// than read them differently from systemd.
func readUnit(path string) (*unit, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	u := &unit{file: filepath.Base(path), service: map[string][]string{}}
	section := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
			continue
		case strings.HasSuffix(line, `\`):
			return nil, fmt.Errorf("%s:%d: a continued line; write it on one", u.file, n)
		case line[0] == '[':
			section = strings.Trim(line, "[]")
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%s:%d: %q is no setting", u.file, n, line)
		}
		if section == "Service" {
			key = strings.TrimSpace(key)
			u.service[key] = append(u.service[key], strings.TrimSpace(value))
		}
	}
	return u, sc.Err()
}

func (in instance) expand(s string) string { return strings.ReplaceAll(s, "%i", in.arg) }

func (in instance) role() string { return in.unit.role() }

// argv is the instance's ExecStart.
func (in instance) argv() []string { return strings.Fields(in.expand(in.unit.get("ExecStart"))) }

// envFile is an EnvironmentFile= of an instance.
type envFile struct {
	path     string // /etc/vmplane/processor-vm.env
	optional bool   // "-" before the path: a missing file is no error
}

func (in instance) envFiles() []envFile {
	var out []envFile
	for _, v := range in.unit.service["EnvironmentFile"] {
		opt := strings.HasPrefix(v, "-")
		out = append(out, envFile{path: in.expand(strings.TrimPrefix(v, "-")), optional: opt})
	}
	return out
}

// env is the environment the instance's files give it, read from dir in
// place of /etc/vmplane: later files override earlier ones, as in systemd.
func (in instance) env(dir string) (map[string]string, error) {
	env := map[string]string{}
	for _, f := range in.envFiles() {
		rel, ok := strings.CutPrefix(f.path, etcDir+"/")
		if !ok {
			return nil, fmt.Errorf("%s: EnvironmentFile %s is not in %s", in.name, f.path, etcDir)
		}
		kvs, err := readEnvFile(filepath.Join(dir, rel))
		if os.IsNotExist(err) && f.optional {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", in.name, err)
		}
		for _, kv := range kvs {
			env[kv[0]] = kv[1]
		}
	}
	return env, nil
}

// plainLine is the one form of line the env files have: a value a shell
// and systemd read alike, with no quotes, spaces, $ or backslashes.
var plainLine = regexp.MustCompile(`^([A-Z][A-Z0-9_]*)=([^\s'"$\\]*)$`)

// readEnvFile reads an environment file as KEY, value pairs.
func readEnvFile(path string) ([][2]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out [][2]string
	for i, line := range strings.Split(string(b), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		m := plainLine.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("%s:%d: %q is not KEY=value with a plain value", path, i+1, line)
		}
		out = append(out, [2]string{m[1], m[2]})
	}
	return out, nil
}

// listener is an address a role listens on, set by an environment
// variable (or its default when the variable is unset; "" is off).
type listener struct {
	env, def string
}

// listeners are every address each role opens (ops/cmd/vmplane/roles.go);
// VMPLANE_METRICS_ADDR, every role's, is required of every instance.
var listeners = map[string][]listener{
	"broker":  {{"VMPLANE_KAFKA_ADDR", "127.0.0.1:9092"}},
	"gateway": {{"VMPLANE_HTTP_ADDR", "127.0.0.1:8080"}},
	"agent":   {{"VMPLANE_SIM_CONTROL", ""}},
}

// neighbours are ports of what a vmplane machine may also run.
var neighbours = map[int]string{
	5432: "Postgres", 9000: "ClickHouse native", 8123: "ClickHouse HTTP", 9009: "ClickHouse interserver",
	9093: "a Kafka controller", 9090: "Prometheus", 9100: "node exporter", 3000: "Grafana",
	4317: "OTLP gRPC", 4318: "OTLP HTTP", 9644: "Redpanda admin",
}

// TestEnvFilesPlain: every file of env/ is plain KEY=value lines, so that
// systemd and a shell (the docs' `set -a; . common.env`) read the same.
func TestEnvFilesPlain(t *testing.T) {
	files, _ := filepath.Glob("env/*.env")
	if len(files) == 0 {
		t.Fatal("no env files")
	}
	for _, f := range files {
		if _, err := readEnvFile(f); err != nil {
			t.Error(err)
		}
	}
	k := loadKit(t)
	for _, in := range k.instances {
		for _, f := range in.envFiles() {
			if _, err := os.Stat(filepath.Join("env", strings.TrimPrefix(f.path, etcDir+"/"))); err != nil && !f.optional {
				t.Errorf("%s reads %s, which env/ lacks", in.name, f.path)
			}
		}
	}
}

// TestListenersDistinct: every role, processor and projector kind of the
// kit runs on one machine: no two listen on one port (a shared metrics port
// left all but one processor looping on "address already in use"), and
// none takes a neighbour's.
func TestListenersDistinct(t *testing.T) {
	k := loadKit(t)
	owner := map[int]string{}
	for _, in := range k.instances {
		env, err := in.env("env")
		if err != nil {
			t.Fatal(err)
		}
		if env["VMPLANE_METRICS_ADDR"] == "" {
			t.Errorf("%s has no VMPLANE_METRICS_ADDR: no /metrics, /healthz, /readyz", in.name)
		}
		for _, l := range append([]listener{{"VMPLANE_METRICS_ADDR", ""}}, listeners[in.role()]...) {
			addr, ok := env[l.env]
			if !ok {
				addr = l.def
			}
			if addr == "" {
				continue
			}
			_, p, err := net.SplitHostPort(addr)
			var port int
			if err == nil {
				_, err = fmt.Sscan(p, &port)
			}
			if err != nil || port == 0 {
				t.Errorf("%s: %s=%s: want host:port with a fixed port (%v)", in.name, l.env, addr, err)
				continue
			}
			who := in.name + " " + l.env
			if o, ok := owner[port]; ok {
				t.Errorf("port %d: %s and %s", port, o, who)
			}
			if n, ok := neighbours[port]; ok {
				t.Errorf("port %d of %s is %s's", port, who, n)
			}
			owner[port] = who
		}
	}
	t.Logf("%d listeners on distinct ports", len(owner))
}

// TestWritesAllowed: under ProtectSystem=strict a unit writes only its
// StateDirectory= and ReadWritePaths=; every path a role's environment
// makes it write must be one of them, and every ReadWritePaths= entry must
// exist (the tmpfiles.d file makes it) or the unit does not start. The
// units' user and groups come from the sysusers.d file.
func TestWritesAllowed(t *testing.T) {
	k := loadKit(t)
	tmpfiles := confLines(t, "tmpfiles.d/vmplane.conf")
	sysusers := confLines(t, "sysusers.d/vmplane.conf")
	made := map[string]bool{}
	for _, l := range tmpfiles {
		if len(l) >= 2 && l[0] == "d" {
			made[l[1]] = true
		}
	}
	declared := map[string]bool{}
	for _, l := range sysusers {
		if len(l) >= 2 && (l[0] == "u" || l[0] == "g") {
			declared[l[1]] = true
		}
	}
	writes := []string{"VMPLANE_KAFKA_DATA", "VMPLANE_QEMU_DIR"}
	for _, in := range k.instances {
		u := in.unit
		if u.get("User") == "" || !declared[u.get("User")] {
			t.Errorf("%s: User=%s is not made by sysusers.d/vmplane.conf", in.name, u.get("User"))
		}
		for _, g := range strings.Fields(strings.Join(u.service["SupplementaryGroups"], " ")) {
			if !declared[g] {
				t.Errorf("%s: SupplementaryGroups=%s is not made by sysusers.d/vmplane.conf: the unit would not start without it", in.name, g)
			}
		}
		if u.get("ProtectSystem") != "strict" {
			t.Errorf("%s: ProtectSystem=%s, want strict", in.name, u.get("ProtectSystem"))
		}
		var writable []string
		for _, d := range strings.Fields(strings.Join(u.service["StateDirectory"], " ")) {
			writable = append(writable, "/var/lib/"+d)
		}
		for _, p := range strings.Fields(strings.Join(u.service["ReadWritePaths"], " ")) {
			if !strings.HasPrefix(p, "-") && !made[p] {
				t.Errorf("%s: ReadWritePaths=%s, which tmpfiles.d/vmplane.conf does not make", in.name, p)
			}
			writable = append(writable, strings.TrimPrefix(p, "-"))
		}
		env, err := in.env("env")
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range writes {
			p, ok := env[key]
			if !ok {
				continue
			}
			if !slices.ContainsFunc(writable, func(w string) bool { return p == w || strings.HasPrefix(p, w+"/") }) {
				t.Errorf("%s: %s=%s is not under its writable paths %v", in.name, key, p, writable)
			}
		}
		if p, ok := env["VMPLANE_TEMPLATES_DIR"]; ok && !made[p] {
			t.Errorf("%s: VMPLANE_TEMPLATES_DIR=%s, which tmpfiles.d/vmplane.conf does not make", in.name, p)
		}
	}
}

// confLines are the fields of the lines of a sysusers.d or tmpfiles.d
// file, quoted fields kept whole.
func confLines(t *testing.T, path string) [][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	field := regexp.MustCompile(`"[^"]*"|\S+`)
	var out [][]string
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line == "" || line[0] == '#' {
			continue
		}
		out = append(out, field.FindAllString(line, -1))
	}
	return out
}
