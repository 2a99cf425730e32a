package main

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/gateway/gatewaytest"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

// stack is the real gateway handler over the in-memory read model, with a
// publisher hook that plays processor and projector: a Deploy becomes a
// job that steps through the deploy flow and succeeds, a Stop fails.
type stack struct {
	url, admin, user string
	rm               *gatewaytest.ReadModel
	rec              *gatewaytest.Recorder // what the gateway published
}

func newStack(t *testing.T) *stack {
	t.Helper()
	rm := gatewaytest.NewReadModel()
	rm.PutOffering(readmodel.Offering{ID: "off-small", Name: "small", CPU: 1, MemoryMB: 1024})
	t0 := time.Now().UTC()
	rm.PutVM(readmodel.VM{ID: "vm-1", Name: "web-1", Account: "acct-a", Offering: "small", VmState: "Active", PowerState: "PowerOn",
		HostID: "host-2", AllowedActions: []string{"reboot", "stop", "terminate"}, CreatedAt: t0, UpdatedAt: t0})
	rm.PutHost(readmodel.Host{ID: "host-2", Name: "h2", ZoneID: "zone-1", Status: "Up", ResourceState: "Enabled", CPU: 16, MemoryMB: 32768,
		UsedCPU: 34, UsedMemoryMB: 2048})
	s := &stack{rm: rm}
	s.admin = s.key(t, "ops", "admin")
	s.user = s.key(t, "acct-a", "user")

	pub := &gatewaytest.Recorder{OnPublish: func(r schemas.Record) { go s.play(r) }}
	s.rec = pub
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := httptest.NewServer(gateway.New(gateway.Config{Logger: quiet}, rm, pub).Handler())
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

func (s *stack) key(t *testing.T, account, role string) string {
	key, id, hash, err := gateway.NewAPIKey()
	if err != nil {
		t.Fatal(err)
	}
	s.rm.PutAPIKey(readmodel.APIKey{KeyID: id, AccountID: account, Role: role, Hash: hash})
	return key
}

func (s *stack) play(r schemas.Record) {
	if c, ok := r.Value.(*schemas.CancelJob); ok {
		s.cancel(c)
		return
	}
	typ := schemas.TypeName(r.Value)
	id := r.Headers["command_id"]
	created := time.Now().UTC()
	j := readmodel.Job{ID: id, VmID: r.Key, Account: "acct-a", Type: typ, State: "running", CreatedAt: created}
	if c, ok := r.Value.(schemas.VmCommandRecord); ok {
		cl := c.Common().Caller
		j.CallerAccount, j.CallerKeyID, j.CallerRequestID = cl.Account, cl.KeyID, cl.RequestID
	}
	time.Sleep(50 * time.Millisecond)
	s.rm.PutJob(j)
	steps := [][2]string{{"Scheduling", "PlaceVm sent to zone-1"}, {"Networking", "network ready"}, {"Spawning", "StartVm sent to host-2"}}
	end := "succeeded"
	if typ == "Stop" {
		steps, end = [][2]string{{"Stopping", "StopVm sent to host-2"}}, "failed"
		j.Reason, j.ErrorCode = "AgentError", "AgentError"
	}
	for i, st := range steps {
		time.Sleep(40 * time.Millisecond)
		s.rm.AddStep(readmodel.JobStep{JobID: id, Seq: int32(i + 1), TaskState: st[0], Text: st[1], At: time.Now()})
	}
	time.Sleep(300 * time.Millisecond)
	fin := time.Now().UTC()
	j.State, j.FinishedAt = end, &fin
	s.rm.PutJob(j)
}

func (s *stack) run(t *testing.T, key string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := map[string]string{"VMPLANE_API": s.url, "VMPLANE_API_KEY": key}
	code = run(t.Context(), args, func(k string) string { return env[k] }, &out, &errb)
	return code, out.String(), errb.String()
}

func TestDeployAndWaitPrintsSteps(t *testing.T) {
	s := newStack(t)
	code, out, errs := s.run(t, s.user, "vm", "deploy", "--name", "web-2", "--offering", "small", "--wait")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	t.Logf("vmctl vm deploy --wait:\n%s", out)
	want := []string{
		`^job \S+ \(Deploy\) accepted for VM vm-\S+$`,
		`^  \[1\] Scheduling: PlaceVm sent to zone-1$`,
		`^  \[2\] Networking: network ready$`,
		`^  \[3\] Spawning: StartVm sent to host-2$`,
		`^job \S+ Deploy succeeded in \d+(\.\d+)?m?s$`,
	}
	wantLines(t, out, want)
}

// stampWriter remembers when each line was written.
type stampWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
	at  map[string]time.Time
}

func (w *stampWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, l := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		w.at[l] = time.Now()
	}
	return w.buf.Write(p)
}

// TestJobWaitShowsStepsAsTheyHappen holds "prints each new step as it
// appears": the last step is printed while the job still runs, well before
// the final line.
func TestJobWaitShowsStepsAsTheyHappen(t *testing.T) {
	s := newStack(t)
	w := &stampWriter{at: map[string]time.Time{}}
	env := map[string]string{"VMPLANE_API": s.url, "VMPLANE_API_KEY": s.user}
	code := run(t.Context(), []string{"vm", "deploy", "--name", "w", "--offering", "small", "--wait"}, func(k string) string { return env[k] }, w, io.Discard)
	lines := strings.Split(strings.TrimSpace(w.buf.String()), "\n")
	if code != 0 || len(lines) != 5 {
		t.Fatalf("exit %d:\n%s", code, w.buf.String())
	}
	if gap := w.at[lines[4]].Sub(w.at[lines[3]]); gap < 200*time.Millisecond {
		t.Fatalf("step 3 printed only %v before the end: steps are not shown as they happen", gap)
	}
}

func TestFailedJobExitsOne(t *testing.T) {
	s := newStack(t)
	code, out, _ := s.run(t, s.user, "vm", "stop", "vm-1", "--force", "--wait")
	if code != 1 || !strings.Contains(out, "  [1] Stopping: StopVm sent to host-2") || !regexp.MustCompile(`Stop failed in .*: AgentError`).MatchString(out) {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
}

// TestJobGetShowsCallerAndCode: job get names who asked (the user's key
// and the request) and the error code of a failed job.
func TestJobGetShowsCallerAndCode(t *testing.T) {
	s := newStack(t)
	if code, out, _ := s.run(t, s.user, "vm", "stop", "vm-1", "--force", "--wait"); code != 1 {
		t.Fatalf("stop: exit %d, output:\n%s", code, out)
	}
	r := s.rec.Records()[0]
	c := r.Value.(*schemas.Stop).Caller
	code, out, _ := s.run(t, s.user, "job", "get", r.Headers["command_id"])
	want := regexp.MustCompile(`asked by:\s+account acct-a, key ` + c.KeyID + `, request ` + regexp.QuoteMeta(c.RequestID) + `\n`)
	if code != 0 || c.KeyID == "" || c.RequestID == "" || !want.MatchString(out) || !regexp.MustCompile(`error code:\s+AgentError\n`).MatchString(out) {
		t.Fatalf("exit %d, want %s and the error code in:\n%s", code, want, out)
	}
}

func TestAPIErrorsAreClear(t *testing.T) {
	s := newStack(t)
	s.rm.PutVM(readmodel.VM{ID: "vm-1", Account: "acct-a", VmState: "Stopped", AllowedActions: []string{"start", "terminate"}})
	for _, tc := range []struct {
		name string
		key  string
		args []string
		code int
		msg  string
	}{
		{"not allowed", s.user, []string{"vm", "stop", "vm-1"}, 1, `allowed actions: start, terminate`},
		{"unknown action", s.user, []string{"vm", "action", "vm-1", "explode"}, 1, `unknown action "explode" (HTTP 422 validation_failed)`},
		{"not found", s.user, []string{"vm", "get", "vm-nope"}, 1, `VM vm-nope not found (HTTP 404 not_found)`},
		{"forbidden", s.user, []string{"host", "list"}, 1, `admin role required (HTTP 403 forbidden)`},
		{"bad key", "vmp_nope", []string{"vm", "list"}, 1, `(HTTP 401 unauthorized)`},
		{"usage", s.user, []string{"vm", "get"}, 2, `takes ID`},
		{"unknown command", s.user, []string{"vm", "fly"}, 2, `unknown command "vm fly"`},
		{"bad output", s.user, []string{"--output", "xml", "vm", "list"}, 2, `--output must be one of table, json, yaml, value, not "xml"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := s.run(t, tc.key, tc.args...)
			if code != tc.code || !strings.Contains(errs, tc.msg) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, errs, tc.code, tc.msg)
			}
		})
	}
}

func TestListsAndGet(t *testing.T) {
	s := newStack(t)
	// 34 of 16 CPUs is no overload at the default 4× over-commit: the
	// column shows use against what placement may hand out, and the ratio.
	code, out, errs := s.run(t, s.admin, "host", "list")
	if code != 0 || !regexp.MustCompile(`host-2\s+h2\s+zone-1\s+-\s+Up\s+Enabled\s+34/64 \(4×\)\s+2048/32768\s+-`).MatchString(out) {
		t.Fatalf("host list exit %d:\n%s%s", code, out, errs)
	}
	// The read model takes pings in every 10 ping intervals (the gateway's
	// default, 60 s), so the column says the time may be 11 intervals old.
	if !regexp.MustCompile(`MEMORY MiB\s+SEEN \(±11m0s\)\s+VMS`).MatchString(out) {
		t.Fatalf("host list does not say how stale the last ping may be:\n%s", out)
	}
	code, out, _ = s.run(t, s.user, "vm", "list")
	if code != 0 || !regexp.MustCompile(`vm-1\s+web-1\s+Active\s+PowerOn\s+host-2\s+small\s+acct-a`).MatchString(out) {
		t.Fatalf("vm list exit %d:\n%s", code, out)
	}
	code, out, _ = s.run(t, s.user, "--output", "json", "vm", "get", "vm-1")
	var v map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v["id"] != "vm-1" || v["host_id"] != "host-2" {
		t.Fatalf("vm get json exit %d:\n%s", code, out)
	}
	code, out, _ = s.run(t, s.user, "offering", "list", "--output", "json")
	if code != 0 || !strings.Contains(out, `"name": "small"`) {
		t.Fatalf("offering list exit %d:\n%s", code, out)
	}
}

func TestJobWaitForUnknownJobTimesOut(t *testing.T) {
	s := newStack(t)
	start := time.Now()
	code, _, errs := s.run(t, s.user, "job", "wait", "job-never", "--timeout", "400ms")
	if code != 1 || !strings.Contains(errs, "job job-never still not seen yet after 400ms") || time.Since(start) > 5*time.Second {
		t.Fatalf("exit %d after %v: %s", code, time.Since(start), errs)
	}
}

// TestKeyFromFile: without --key or VMPLANE_API_KEY, the dev stack's
// admin key is found in var/dev/admin-key of this directory or a parent;
// where there is none, the error says what to export.
func TestKeyFromFile(t *testing.T) {
	s := newStack(t)
	dir := t.TempDir()
	t.Chdir(dir)
	noEnv := func(string) string { return "" }
	var out, errb bytes.Buffer
	if code := run(t.Context(), []string{"--api", s.url, "host", "list"}, noEnv, &out, &errb); code != exitFail ||
		!strings.Contains(errb.String(), "export VMPLANE_API_KEY=") || !strings.Contains(errb.String(), "export VMPLANE_VAR=") {
		t.Fatalf("no key anywhere: exit %d: %s", code, errb.String())
	}
	if err := writeFile(dir+"/var/dev/admin-key", s.admin+"\n"); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir+"/ops/dev", 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir + "/ops/dev")
	out.Reset()
	errb.Reset()
	code := run(t.Context(), []string{"--api", s.url, "host", "list"}, noEnv, &out, &errb)
	if code != 0 || !strings.Contains(out.String(), "host-2") {
		t.Fatalf("exit %d: %s%s", code, out.String(), errb.String())
	}
}

func writeFile(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(content), 0o600)
}
