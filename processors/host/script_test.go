package host

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vmplane/vmplane/internal/scenario"
	"github.com/vmplane/vmplane/schemas"
)

// TestScripts plays each testdata/*.txt (see internal/scenario for the
// syntax) against one host h1 of cluster c1. The directives:
//
//	config ping=60s step=30s alert=30m investigators=neighbour,fence autoregister=off
//	hello <t> [vm...]            AgentConnected listing the VMs
//	ping <t> <seq> [vm...] [sent=<t>]   AgentPing, written at sent (default: unknown)
//	bye <t>                      AgentDisconnected
//	answer <t> <round> <investigator> <Up|Down|Unknown>   CheckHostAnswer
//	admin <t> enable|disable|remove|prepare|cancel|add|unmanage|manage [command-id]
//	migrated <t> <round> <vm> ok|fail   MaintenanceMigrationEnded
//	advance <t>                  fire every due Tick up to t, second by second
//	offline <t>                  the processor is down until t: no Tick fires
//	                             before, then a late Tick if one is due
//	restart <t>                  as offline, and the processor comes back as a
//	                             new machine of the config (no settings) that
//	                             has read nothing yet
//	set <t> <name> <value>       SettingChanged at the global scope
//
// Times are offsets from t0 and never go back. Outputs of advance carry the
// time of the Tick that made them. go test ./processors/host -run
// TestScripts -update rewrites the expected outputs; review the diff before
// keeping it.
func TestScripts(t *testing.T) {
	scenario.Run(t, "testdata/*.txt", func(t *testing.T) scenario.Step {
		return (&script{t: t, cfg: DefaultConfig()}).run
	})
}

// script is one file's host: its config, machine, state and clock.
type script struct {
	t     *testing.T
	cfg   Config
	m     *Machine
	r     *schemas.HostRecord
	clock time.Duration
}

func (s *script) run(d scenario.Case) []string {
	t := s.t
	if d.Cmd == "config" {
		s.cfg = parseConfig(t, d.Args)
		return nil
	}
	if s.m == nil {
		s.m = New(s.cfg)
	}
	if len(d.Args) < 1 {
		t.Fatalf("%s: %q: no time", d.Pos, d.Directive)
	}
	at, err := time.ParseDuration(d.Args[0])
	if err != nil || at < s.clock {
		t.Fatalf("%s: %q: bad or past time", d.Pos, d.Directive)
	}
	var res []string
	tick := func(now time.Duration) {
		if w := s.m.Wake(s.r); !w.IsZero() && !t0.Add(now).Before(w) {
			var outs []schemas.Record
			s.r, outs = s.m.Tick(s.r, "h1", t0.Add(now))
			roundTrip(t, s.r)
			for _, o := range describe(t, outs) {
				res = append(res, fmt.Sprintf("@%v %s", now, o))
			}
		}
	}
	switch d.Cmd {
	case "advance":
		for c := s.clock + time.Second; c <= at; c += time.Second {
			tick(c)
		}
	case "offline":
		tick(at)
	case "restart":
		s.m = New(s.cfg)
		tick(at)
	case "set":
		if len(d.Args) != 3 {
			t.Fatalf("%s: want set <t> <name> <value>", d.Pos)
		}
		err := s.m.Configure(&schemas.SettingChanged{Name: d.Args[1], Scope: "global", Value: d.Args[2]})
		if err != nil {
			res = append(res, "refused: "+err.Error())
		}
	default:
		// Due timers fire before the input, as the runtime does when
		// both are due in one iteration.
		for c := s.clock + time.Second; c < at; c += time.Second {
			tick(c)
		}
		args, sent := sentAt(t, d.Args[1:])
		in := rec(scriptInput(t, d.Cmd, args, s.r))
		in.TimestampMs = sent
		var outs []schemas.Record
		s.r, outs = s.m.Step(s.r, in, t0.Add(at))
		roundTrip(t, s.r)
		res = append(res, describe(t, outs)...)
	}
	s.clock = at
	return res
}

// sentAt takes a sent=<t> argument out of args: the input's Kafka
// timestamp, 0 (none) without it.
func sentAt(t *testing.T, args []string) (rest []string, ms int64) {
	t.Helper()
	for _, a := range args {
		v, ok := strings.CutPrefix(a, "sent=")
		if !ok {
			rest = append(rest, a)
			continue
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("sent=%s: %v", v, err)
		}
		ms = t0.Add(d).UnixMilli()
	}
	return rest, ms
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
		if k == "autoregister" {
			cfg.AutoRegister = v == "on"
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
	if verb == "admin" && len(args) > 1 {
		c.CommandID = args[1]
	}
	c.Caller = schemas.Caller{Account: "admin", KeyID: "k1", RequestID: "req-" + c.CommandID}
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
		case "add":
			return &schemas.AddHost{HostCommand: c, Name: "h1", ZoneID: "z1", ClusterID: "c1"}
		case "unmanage":
			return &schemas.UnmanageHost{HostCommand: c}
		case "manage":
			return &schemas.ManageHost{HostCommand: c}
		}
	}
	t.Fatalf("unknown input %s %v", verb, args)
	return nil
}

// isCode holds a failure's or rejection's reason to the error codes
// (schemas/job_codes.go).
func isCode(t *testing.T, reason string) {
	t.Helper()
	if !schemas.IsErrorCode(reason) || reason == schemas.CodeUnknown {
		t.Fatalf("reason %q is not an error code of schemas.ErrorCodes", reason)
	}
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
			s = fmt.Sprintf("Migrate[%s] id=%s origin=%s account=%s caller=%s/%s/%s", o.Key, v.CommandID, v.Origin, v.Account,
				v.Caller.Account, v.Caller.KeyID, v.Caller.RequestID)
		case *schemas.JobAccepted:
			s = fmt.Sprintf("JobAccepted[%s] %s %s caller=%s/%s/%s", o.Key, v.JobID, v.JobType, v.Caller.Account, v.Caller.KeyID, v.Caller.RequestID)
		case *schemas.JobStepped:
			s = fmt.Sprintf("JobStepped[%s] %s #%d %s %q obj=%s", o.Key, v.JobID, v.Seq, v.Step, v.Text, v.Obj)
		case *schemas.JobSucceeded:
			s = fmt.Sprintf("JobSucceeded[%s] %s", o.Key, v.JobID)
		case *schemas.JobFailed:
			s = fmt.Sprintf("JobFailed[%s] %s %s %q", o.Key, v.JobID, v.Reason, v.Detail)
			isCode(t, v.Reason)
		case *schemas.JobCancelled:
			s = fmt.Sprintf("JobCancelled[%s] %s %q by=%q", o.Key, v.JobID, v.Reason, v.By)
		case *schemas.JobRejected:
			s = fmt.Sprintf("JobRejected[%s] %s %s %q caller=%s/%s/%s", o.Key, v.JobID, v.Reason, v.Detail,
				v.Caller.Account, v.Caller.KeyID, v.Caller.RequestID)
			isCode(t, v.Reason)
		case *schemas.AlertRaised:
			if o.Topic != schemas.TopicVmEvents || v.HostID != o.Key || v.ZoneID == "" || v.AlertID == "" {
				t.Fatalf("host alert off its host's key, or without zone or id: %+v", o)
			}
			s = fmt.Sprintf("AlertRaised[%s] %s %q", o.Key, v.Kind, v.Message)
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
