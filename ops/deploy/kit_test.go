package deploy_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vmplane/vmplane/internal/testkit"
)

// securityLimit is the highest `systemd-analyze security` exposure (0–10)
// each role's unit may have: the agent's guests need what the others are
// denied (docs/operations.md, "What the units allow").
var securityLimit = map[string]float64{"agent": 3.5}

const defaultSecurityLimit = 2.0

// TestKit installs the kit into a throw-away root as docs/operations.md
// does on a machine, checks it with systemd's own tools, then runs every
// unit's command with its environment files, all on this machine, against
// the embedded broker, the tests' Postgres and ClickHouse and a sim agent,
// and deploys a VM through the gateway with a key from `vmplane
// admin-key`. systemd itself is not running here: the processes are
// started as its units would start them, without the sandbox.
func TestKit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds vmplane and runs every role against Postgres and ClickHouse; skipped under -short")
	}
	for _, tool := range []string{"systemd-analyze", "systemd-sysusers", "systemd-tmpfiles"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s: %v (Debian's systemd package; make install)", tool, err)
		}
	}
	began := time.Now()
	k := loadKit(t)
	root := t.TempDir()
	install(t, root, k)
	t.Logf("installed into %s in %.1fs (vmplane built)", root, time.Since(began).Seconds())
	checkUsersAndDirs(t, root)
	verify(t, root, k)
	security(t, root, k)

	dsn := testkit.Postgres(t)
	chAddr, chDB := testkit.ClickHouse(t)
	st := newStack(t, root, k, map[string]string{"VMPLANE_PG_DSN": dsn, "VMPLANE_CH_ADDR": chAddr, "VMPLANE_CH_DATABASE": chDB})
	started := time.Now()
	st.start()
	t.Logf("%d processes ready in %.1fs", len(st.procs), time.Since(started).Seconds())
	deployed := time.Now()
	key := st.adminKey()
	st.deploy(key)
	t.Logf("admin key issued, offering created, VM deployed and Active in %.1fs", time.Since(deployed).Seconds())
	st.checkAlive()
	t.Logf("TestKit took %.1fs", time.Since(began).Seconds())
}

// install lays the kit out under root as an installer would on /: the
// binary, the user and directories files, the environment files and the
// units, with the units systemd itself ships (the targets ours name) so
// that systemd-analyze finds them under --root.
func install(t *testing.T, root string, k *kit) {
	t.Helper()
	bin := filepath.Join(root, binary)
	mkdir(t, filepath.Dir(bin))
	// go test puts the go that runs it first on the PATH. No race
	// detector: the processes are under test for the kit, not for races.
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(goBin, "build", "-o", bin, "github.com/vmplane/vmplane/ops/cmd/vmplane").CombinedOutput(); err != nil {
		t.Fatalf("go build ./ops/cmd/vmplane: %v\n%s", err, out)
	}
	copyFiles(t, filepath.Join(k.dir, "sysusers.d", "*.conf"), filepath.Join(root, "etc/sysusers.d"), 0o644)
	copyFiles(t, filepath.Join(k.dir, "tmpfiles.d", "*.conf"), filepath.Join(root, "etc/tmpfiles.d"), 0o644)
	copyFiles(t, filepath.Join(k.dir, "env", "*.env"), filepath.Join(root, etcDir), 0o600)
	copyFiles(t, filepath.Join(k.dir, "systemd", "*.service"), filepath.Join(root, "etc/systemd/system"), 0o644)
	mkdir(t, filepath.Join(root, "usr/lib/systemd"))
	if out, err := exec.Command("cp", "-a", "/usr/lib/systemd/system", filepath.Join(root, "usr/lib/systemd/")).CombinedOutput(); err != nil {
		t.Fatalf("copy systemd's units: %v\n%s", err, out)
	}
}

// checkUsersAndDirs runs systemd-sysusers and systemd-tmpfiles on the
// root, as the docs' install does on /, and checks what they made.
func checkUsersAndDirs(t *testing.T, root string) {
	t.Helper()
	run(t, "systemd-sysusers", "--root="+root, filepath.Join(root, "etc/sysusers.d/vmplane.conf"))
	run(t, "systemd-tmpfiles", "--root="+root, "--create", filepath.Join(root, "etc/tmpfiles.d/vmplane.conf"))
	passwd := readFile(t, filepath.Join(root, "etc/passwd"))
	m := regexp.MustCompile(`(?m)^vmplane:x:(\d+):(\d+):[^:]*:[^:]*:(\S+)$`).FindStringSubmatch(passwd)
	if m == nil || !strings.HasSuffix(m[3], "nologin") {
		t.Fatalf("systemd-sysusers made no system user vmplane without a shell:\n%s", passwd)
	}
	if !regexp.MustCompile(`(?m)^kvm:x:\d+:`).MatchString(readFile(t, filepath.Join(root, "etc/group"))) {
		t.Error("no group kvm, which the agent's unit adds")
	}
	uid, _ := strconv.Atoi(m[1])
	for dir, want := range map[string]struct {
		mode os.FileMode
		uid  int
	}{"var/lib/vmplane-pools": {0o750, uid}, "var/lib/vmplane-templates": {0o755, 0}} {
		fi, err := os.Stat(filepath.Join(root, dir))
		if err != nil {
			t.Error(err)
			continue
		}
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode().Perm() != want.mode || int(st.Uid) != want.uid {
			t.Errorf("%s: mode %v uid %d, want %v uid %d", dir, fi.Mode().Perm(), st.Uid, want.mode, want.uid)
		}
	}
}

// verify runs `systemd-analyze verify` on every instance; it must say
// nothing.
func verify(t *testing.T, root string, k *kit) {
	t.Helper()
	args := []string{"verify", "--root=" + root}
	for _, in := range k.instances {
		args = append(args, in.name)
	}
	out, err := exec.Command("systemd-analyze", args...).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Fatalf("systemd-analyze %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("systemd-analyze verify of %d units: clean", len(k.instances))
}

// security rates every instance's sandbox with `systemd-analyze security`
// and fails one above its role's limit.
func security(t *testing.T, root string, k *kit) {
	t.Helper()
	overall := regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+)`)
	var scores []string
	for _, in := range k.instances {
		limit, ok := securityLimit[in.role()]
		if !ok {
			limit = defaultSecurityLimit
		}
		out, _ := exec.Command("systemd-analyze", "security", "--offline=yes", "--root="+root, "--no-pager", in.name).CombinedOutput()
		m := overall.FindSubmatch(out)
		if m == nil {
			t.Fatalf("systemd-analyze security %s: no overall exposure:\n%s", in.name, out)
		}
		score, _ := strconv.ParseFloat(string(m[1]), 64)
		if score > limit {
			t.Errorf("%s: exposure %.1f, above %.1f:\n%s", in.name, score, limit, out)
		}
		scores = append(scores, fmt.Sprintf("%s %.1f", in.name, score))
	}
	t.Logf("systemd-analyze security: %s", strings.Join(scores, ", "))
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func copyFiles(t *testing.T, pattern, dir string, mode os.FileMode) {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("%s: no files (%v)", pattern, err)
	}
	mkdir(t, dir)
	for _, f := range files {
		b := readFile(t, f)
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), []byte(b), mode); err != nil {
			t.Fatal(err)
		}
	}
}

// tail is the last n lines of a file.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}
