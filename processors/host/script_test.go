package host

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// go test ./processors/host -run TestScripts -update rewrites the expected
// outputs of testdata/*.txt; review the diff before keeping it.
var update = flag.Bool("update", false, "rewrite the expected outputs of testdata/*.txt")

// TestScripts plays each testdata/*.txt against one host h1 of cluster c1.
// A script is blocks of one input line, "----" and the outputs it caused:
//
//	config ping=60s step=30s alert=30m investigators=neighbour,fence
//	hello <t> [vm...]            AgentConnected listing the VMs
//	ping <t> <seq> [vm...]       AgentPing
//	bye <t>                      AgentDisconnected
//	answer <t> <round> <investigator> <Up|Down|Unknown>   CheckHostAnswer
//	admin <t> enable|disable|remove|prepare|cancel
//	migrated <t> <round> <vm> ok|fail   MaintenanceMigrationEnded
//	advance <t>                  fire every due Tick up to t, second by second
//	offline <t>                  the processor is down until t: no Tick fires
//	                             before, then a late Tick if one is due
//
// Times are offsets from t0 and never go back. Outputs of advance carry the
// time of the Tick that made them.
func TestScripts(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no scripts")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { runScript(t, f) })
	}
}

func runScript(t *testing.T, file string) {
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	var m *Machine
	var r *schemas.HostRecord
	var clock time.Duration
	var out strings.Builder
	var got, want []string // blocks' outputs, in order

	lines := strings.Split(string(raw), "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if line == "" || strings.HasPrefix(line, "#") {
			out.WriteString(lines[i] + "\n")
			continue
		}
		f := strings.Fields(line)
		if f[0] == "config" {
			cfg = parseConfig(t, f[1:])
			out.WriteString(line + "\n")
			continue
		}
		if m == nil {
			m = New(cfg)
		}
		// The expected outputs: after "----", up to a blank line.
		var exp []string
		j := i + 1
		if j < len(lines) && strings.TrimSpace(lines[j]) == "----" {
			for j++; j < len(lines) && strings.TrimSpace(lines[j]) != ""; j++ {
				exp = append(exp, strings.TrimSpace(lines[j]))
			}
		}
		i = j - 1
		if len(f) < 2 {
			t.Fatalf("%s: %q: no time", file, line)
		}
		at, err := time.ParseDuration(f[1])
		if err != nil || at < clock {
			t.Fatalf("%s: %q: bad or past time", file, line)
		}
		var res []string
		tick := func(now time.Duration) {
			if w := m.Wake(r); !w.IsZero() && !t0.Add(now).Before(w) {
				var outs []schemas.Record
				r, outs = m.Tick(r, "h1", t0.Add(now))
				roundTrip(t, r)
				for _, o := range describe(t, outs) {
					res = append(res, fmt.Sprintf("@%v %s", now, o))
				}
			}
		}
		switch f[0] {
		case "advance":
			for c := clock + time.Second; c <= at; c += time.Second {
				tick(c)
			}
		case "offline":
			tick(at)
		default:
			// Due timers fire before the input, as the runtime does when
			// both are due in one iteration.
			for c := clock + time.Second; c < at; c += time.Second {
				tick(c)
			}
			var outs []schemas.Record
			r, outs = m.Step(r, rec(scriptInput(t, f[0], f[2:], r)), t0.Add(at))
			roundTrip(t, r)
			res = describe(t, outs)
		}
		clock = at
		got = append(got, strings.Join(res, "\n"))
		want = append(want, strings.Join(exp, "\n"))
		out.WriteString(line + "\n----\n")
		for _, l := range res {
			out.WriteString(l + "\n")
		}
		if i+1 < len(lines) && strings.TrimSpace(lines[i+1]) != "" {
			out.WriteString("\n")
		}
	}
	if *update {
		if err := os.WriteFile(file, []byte(strings.TrimRight(out.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	for k := range got {
		if got[k] != want[k] {
			t.Errorf("%s block %d:\n got:\n%s\nwant:\n%s", file, k+1, got[k], want[k])
		}
	}
}

func parseConfig(t *testing.T, kvs []string) Config {
	t.Helper()
	cfg := DefaultConfig()
	for _, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		if k == "investigators" {
			cfg.Investigators = strings.Split(v, ",")
			continue
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("config %s: %v", kv, err)
		}
		switch k {
		case "ping":
			cfg.PingInterval, cfg.PingTimeout, cfg.MissingGrace, cfg.TickSlack = d, 0, 0, 0
		case "step":
			cfg.StepTimeout = d
		case "alert":
			cfg.AlertWait = d
		case "grace":
			cfg.RestartGrace = d
		case "refresh":
			cfg.StatusRefresh = d
		default:
			t.Fatalf("config key %s", k)
		}
	}
	return cfg
}

func scriptInput(t *testing.T, verb string, args []string, r *schemas.HostRecord) any {
	t.Helper()
	c := schemas.HostCommand{CommandID: "c", HostID: "h1", Account: "admin"}
	switch verb {
	case "hello":
		return hello(args...)
	case "ping":
		seq, _ := strconv.ParseInt(args[0], 10, 64)
		return pingOf(seq, args[1:]...)
	case "bye":
		return &schemas.AgentDisconnected{HostID: "h1", Reason: "shutdown"}
	case "answer":
		round, _ := strconv.ParseInt(args[0], 10, 64)
		return &schemas.CheckHostAnswer{CommandID: stepID("h1", round, args[1]), HostID: "h2", TargetHostID: "h1", Result: args[2], Detail: "h2"}
	case "migrated":
		round, _ := strconv.ParseInt(args[0], 10, 64)
		ok := args[2] == "ok"
		reason := ""
		if !ok {
			reason = "AgentError"
		}
		return &schemas.MaintenanceMigrationEnded{HostID: "h1", VmID: args[1], JobID: MaintenanceJobID("h1", round, args[1]), OK: ok, Reason: reason}
	case "admin":
		switch args[0] {
		case "enable":
			return &schemas.EnableHost{HostCommand: c}
		case "disable":
			return &schemas.DisableHost{HostCommand: c}
		case "remove":
			return &schemas.RemoveHost{HostCommand: c}
		case "prepare":
			return &schemas.PrepareForMaintenance{HostCommand: c}
		case "cancel":
			return &schemas.CancelMaintenance{HostCommand: c}
		}
	}
	t.Fatalf("unknown input %s %v", verb, args)
	return nil
}

// describe renders outputs one per line; a HostStatus is shown once (its
// zone-keyed copies are checked by statuses).
func describe(t *testing.T, outs []schemas.Record) []string {
	t.Helper()
	statuses(t, outs)
	var res []string
	for _, o := range outs {
		var s string
		switch v := o.Value.(type) {
		case *schemas.HostStatus:
			if o.Topic != schemas.TopicHostStatus {
				continue
			}
			s = fmt.Sprintf("HostStatus %s/%s reservable=%v reason=%q", v.Status, v.ResourceState, v.Reservable, v.Reason)
		case *schemas.CheckHost:
			s = fmt.Sprintf("CheckHost[%s] id=%s cluster=%s method=%s vms=%v", o.Key, v.CommandID, v.ClusterID, v.Method, v.VmIDs)
		case *schemas.FenceHost:
			s = fmt.Sprintf("FenceHost[%s] id=%s cluster=%s", o.Key, v.CommandID, v.ClusterID)
		case *schemas.HostDown:
			s = fmt.Sprintf("HostDown[%s] host=%s reason=%q", o.Key, v.HostID, v.Reason)
		case *schemas.VmMissingFromHost:
			s = fmt.Sprintf("VmMissingFromHost[%s] last=%v", o.Key, time.UnixMilli(v.LastSeenAt).Sub(t0))
		case *schemas.Migrate:
			s = fmt.Sprintf("Migrate[%s] id=%s origin=%s account=%s", o.Key, v.CommandID, v.Origin, v.Account)
		case *schemas.AgentRejected:
			s = fmt.Sprintf("AgentRejected[%s] reason=%q", o.Key, v.Reason)
		default:
			s = fmt.Sprintf("%T[%s]", v, o.Key)
		}
		if o.Topic == schemas.TopicAgentCommands && o.Headers["command_id"] == "" {
			t.Fatalf("agent command without command_id header: %+v", o)
		}
		res = append(res, s)
	}
	return res
}
