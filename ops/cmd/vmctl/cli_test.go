package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestMain lets the test binary be vmctl itself (VMCTL_TEST_AS_VMCTL=1),
// so that a shell's completion can call it as a user's shell calls vmctl.
func TestMain(m *testing.M) {
	if os.Getenv("VMCTL_TEST_AS_VMCTL") == "1" {
		os.Exit(run(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// vmctl runs vmctl with env as its whole environment.
func vmctl(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(t.Context(), args, func(k string) string { return env[k] }, &out, &errb)
	return code, out.String(), errb.String()
}

func TestHelp(t *testing.T) {
	code, deployHelp, errs := vmctl(t, nil, "vm", "deploy", "-h")
	if code != exitOK || !strings.Contains(deployHelp, "vmctl vm deploy --name N --offering O [flags]") ||
		!strings.Contains(deployHelp, "--template string") || strings.Contains(deployHelp, "Available Commands") || errs != "" {
		t.Fatalf("vm deploy -h: exit %d:\n%s%s", code, deployHelp, errs)
	}
	if code, out, _ := vmctl(t, nil, "help", "vm", "deploy"); code != exitOK || out != deployHelp {
		t.Fatalf("help vm deploy: exit %d, not the same as vm deploy -h:\n%s", code, out)
	}
	code, out, _ := vmctl(t, nil, "-h")
	if code != exitOK || !strings.Contains(out, "Available Commands:") || !strings.Contains(out, "Deploy, list and act on VMs") {
		t.Fatalf("-h: exit %d:\n%s", code, out)
	}
	if code, out, _ := vmctl(t, nil, "job", "list", "--help"); code != exitOK || !strings.Contains(out, "--vm string") || !strings.Contains(out, "--state string") {
		t.Fatalf("job list --help: exit %d:\n%s", code, out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "no command"},
		{[]string{"vm"}, `"vm" needs a subcommand`},
		{[]string{"vm", "deplyo"}, `unknown command "vm deplyo"; did you mean deploy?`},
		{[]string{"vm", "list", "--nope"}, "unknown flag: --nope\nRun 'vmctl vm list --help' for usage."},
		{[]string{"vm", "get", "a", "b"}, "vm get takes ID, got 2\nRun 'vmctl vm get --help' for usage."},
	} {
		if code, _, errs := vmctl(t, nil, tc.args...); code != exitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("vmctl %s: exit %d %q, want 2 and %q", strings.Join(tc.args, " "), code, errs, tc.want)
		}
	}
}

// TestCompletion generates each shell's script and checks its syntax; where
// the shell is there, it completes a command line through the script, which
// runs this test binary as vmctl.
func TestCompletion(t *testing.T) {
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(dir, "vmctl")); err != nil {
		t.Fatal(err)
	}
	scripts := map[string]string{}
	for _, sh := range []string{"bash", "zsh", "fish"} {
		code, out, errs := vmctl(t, nil, "completion", sh)
		if code != exitOK || !strings.Contains(out, "vmctl") {
			t.Fatalf("completion %s: exit %d: %s", sh, code, errs)
		}
		scripts[sh] = filepath.Join(dir, "vmctl."+sh)
		if err := os.WriteFile(scripts[sh], []byte(out), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	check := map[string][]string{"bash": {"-n"}, "zsh": {"-n"}, "fish": {"--no-execute"}}
	for sh, flags := range check {
		if _, err := exec.LookPath(sh); err != nil {
			if sh == "bash" {
				t.Fatalf("no bash: %v", err)
			}
			t.Logf("no %s here: its script is generated but not checked", sh)
			continue
		}
		if out, err := exec.Command(sh, append(flags, scripts[sh])...).CombinedOutput(); err != nil {
			t.Errorf("%s %s: %v\n%s", sh, strings.Join(flags, " "), err, out)
		}
	}
	env := append(os.Environ(), "VMCTL_TEST_AS_VMCTL=1", "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	complete := func(t *testing.T, sh, script string) string {
		cmd := exec.Command(sh, "-c", script)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", sh, err, out)
		}
		return string(out)
	}
	const bashCompletion = "/usr/share/bash-completion/bash_completion"
	t.Run("bash", func(t *testing.T) {
		if _, err := os.Stat(bashCompletion); err != nil {
			t.Skip("the bash-completion package, which cobra's bash script needs, is not installed")
		}
		out := complete(t, "bash", `source `+bashCompletion+`; source `+scripts["bash"]+`
c() { COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; read -ra COMP_WORDS <<<"$COMP_LINE"; [[ $COMP_LINE == *" " ]] && COMP_WORDS+=("");
  COMP_CWORD=$((${#COMP_WORDS[@]}-1)); COMPREPLY=(); __start_vmctl; printf '%s\n' "${COMPREPLY[@]}"; }
c vmctl vm dep; c vmctl job list --st; c "vmctl vm list -o "`)
		for _, w := range []string{"deploy", "--state", "yaml"} {
			if !strings.Contains(out, w) {
				t.Errorf("bash completion has no %q:\n%s", w, out)
			}
		}
	})
	t.Run("fish", func(t *testing.T) {
		if _, err := exec.LookPath("fish"); err != nil {
			t.Skip("no fish")
		}
		out := complete(t, "fish", `source `+scripts["fish"]+`; complete -C "vmctl vm dep"; complete -C "vmctl vm list -c "`)
		for _, w := range []string{"deploy\tDeploy a VM", "vm_state"} {
			if !strings.Contains(out, w) {
				t.Errorf("fish completion has no %q:\n%s", w, out)
			}
		}
	})
}

func TestVersion(t *testing.T) {
	code, out, errs := vmctl(t, nil, "version", "--client", "-o", "json")
	var v versionInfo
	if code != exitOK || json.Unmarshal([]byte(out), &v) != nil || v.Client.GoVersion != runtime.Version() || v.Client.Module == "" || v.Server != nil {
		t.Fatalf("version --client: exit %d: %s%s", code, out, errs)
	}
	s := newStack(t)
	code, out, errs = vmctl(t, map[string]string{"VMPLANE_API": s.url}, "version")
	if code != exitOK || !strings.Contains(out, "client:") || !strings.Contains(out, "server:  "+s.url+", API version 1") {
		t.Fatalf("version: exit %d: %s%s", code, out, errs)
	}
	// A gateway that does not answer: the client's line, then the error.
	code, out, errs = vmctl(t, map[string]string{"VMPLANE_API": "127.0.0.1:1"}, "version")
	if code != exitFail || !strings.Contains(out, "client:") || !strings.Contains(errs, "cannot reach the API at http://127.0.0.1:1") {
		t.Fatalf("version, no server: exit %d: %s%s", code, out, errs)
	}
}
