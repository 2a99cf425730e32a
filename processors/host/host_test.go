package host

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

func TestTransitions(t *testing.T) {
	upped := []any{hello(), pingOf(1)} // the agent's first report round
	disconnected := []any{hello(), pingOf(1), &schemas.AgentDisconnected{HostID: "h1", Reason: "shutdown"}}
	disabled := []any{hello(), pingOf(1), &schemas.DisableHost{HostCommand: cmd()}}
	removed := []any{hello(), pingOf(1), &schemas.RemoveHost{HostCommand: cmd()}}
	unmanaged := []any{hello(), pingOf(1), &schemas.UnmanageHost{HostCommand: cmd()}}
	preparing := []any{hello("vm1"), pingOf(1, "vm1"), &schemas.PrepareForMaintenance{HostCommand: cmd()}}
	add := &schemas.AddHost{HostCommand: cmd(), Name: "h1", ZoneID: "z1", ClusterID: "c1"}
	tests := []struct {
		name       string
		cfg        func(*Config)
		setup      []any
		in         any
		status     string // "" for no state
		resource   string
		reservable bool
		published  bool   // a HostStatus went out
		other      string // the types of the other outputs, in order, space-separated
	}{
		{"new host registers", nil, nil, hello(), StatusConnecting, ResourceEnabled, false, true, ""},
		{"its first round ends", nil, []any{hello()}, pingOf(1), StatusUp, ResourceEnabled, true, true, ""},
		{"unknown host without auto-registration", func(c *Config) { c.AutoRegister = false }, nil, hello(), "", "", false, false, "*schemas.AgentRejected"},
		{"ping of an unknown host", nil, nil, pingOf(1), "", "", false, false, ""},
		{"steady ping", nil, upped, pingOf(2), StatusUp, ResourceEnabled, true, false, ""},
		{"reconnect with the same facts", nil, upped, hello(), StatusConnecting, ResourceEnabled, false, true, ""},
		{"reconnect with more memory", nil, upped, func() any { h := hello(); h.MemoryMB *= 2; return h }(), StatusConnecting, ResourceEnabled, false, true, ""},
		{"orderly disconnect", nil, upped, &schemas.AgentDisconnected{HostID: "h1"}, StatusDisconnected, ResourceEnabled, false, true, ""},
		{"ping after disconnect", nil, disconnected, pingOf(2), StatusUp, ResourceEnabled, true, true, ""},
		{"hello after disconnect", nil, disconnected, hello(), StatusConnecting, ResourceEnabled, false, true, ""},
		{"disable", nil, upped, &schemas.DisableHost{HostCommand: cmd()}, StatusUp, ResourceDisabled, false, true, ""},
		{"disable twice", nil, disabled, &schemas.DisableHost{HostCommand: cmd()}, StatusUp, ResourceDisabled, false, false, ""},
		{"enable", nil, disabled, &schemas.EnableHost{HostCommand: cmd()}, StatusUp, ResourceEnabled, true, true, ""},
		{"enable an enabled host", nil, upped, &schemas.EnableHost{HostCommand: cmd()}, StatusUp, ResourceEnabled, true, false, ""},
		{"disabled host reconnects disabled", nil, disabled, hello(), StatusConnecting, ResourceDisabled, false, true, ""},
		{"disable a disconnected host", nil, disconnected, &schemas.DisableHost{HostCommand: cmd()}, StatusDisconnected, ResourceDisabled, false, true, ""},
		{"remove", nil, upped, &schemas.RemoveHost{HostCommand: cmd()}, StatusRemoved, ResourceEnabled, false, true, ""},
		{"remove a disabled host", nil, disabled, &schemas.RemoveHost{HostCommand: cmd()}, StatusRemoved, ResourceDisabled, false, true, ""},
		{"agent of a removed host", nil, removed, hello(), StatusRemoved, ResourceEnabled, false, false, "*schemas.AgentRejected"},
		{"ping of a removed host", nil, removed, pingOf(3), StatusRemoved, ResourceEnabled, false, false, ""},
		{"enable a removed host", nil, removed, &schemas.EnableHost{HostCommand: cmd()}, StatusRemoved, ResourceEnabled, false, false, ""},
		{"admin command on an unknown host", nil, nil, &schemas.DisableHost{HostCommand: cmd()}, "", "", false, false, ""},
		{"add an unknown host", func(c *Config) { c.AutoRegister = false }, nil, add, StatusCreating, ResourceEnabled, false, true, ""},
		{"agent of an added host", func(c *Config) { c.AutoRegister = false }, []any{add}, hello(), StatusConnecting, ResourceEnabled, false, true, ""},
		{"add a removed host", nil, removed, add, StatusCreating, ResourceEnabled, false, true, ""},
		{"add a known host", nil, upped, add, StatusUp, ResourceEnabled, true, false, ""},
		{"unmanage", nil, upped, &schemas.UnmanageHost{HostCommand: cmd()}, StatusUp, ResourceUnmanaged, false, true, ""},
		{"unmanage a disabled host", nil, disabled, &schemas.UnmanageHost{HostCommand: cmd()}, StatusUp, ResourceUnmanaged, false, true, ""},
		{"unmanage a host preparing for maintenance", nil, preparing, &schemas.UnmanageHost{HostCommand: cmd()}, StatusUp, ResourcePrepareForMaintenance, false, false, ""},
		{"ping of an unmanaged host", nil, unmanaged, pingOf(2), StatusUp, ResourceUnmanaged, false, false, ""},
		{"manage", nil, unmanaged, &schemas.ManageHost{HostCommand: cmd()}, StatusUp, ResourceEnabled, true, true, ""},
		{"manage a managed host", nil, upped, &schemas.ManageHost{HostCommand: cmd()}, StatusUp, ResourceEnabled, true, false, ""},
		{"prepare an empty host for maintenance", nil, upped, &schemas.PrepareForMaintenance{HostCommand: cmd()}, StatusUp, ResourceMaintenance, false, true, "*schemas.JobAccepted *schemas.JobSucceeded"},
		{"prepare a host with a VM", nil, []any{hello("vm1"), pingOf(1, "vm1")}, &schemas.PrepareForMaintenance{HostCommand: cmd()}, StatusUp, ResourcePrepareForMaintenance, false, true, "*schemas.JobAccepted *schemas.JobStepped *schemas.Migrate"},
		{"prepare a disconnected host", nil, disconnected, &schemas.PrepareForMaintenance{HostCommand: cmd()}, StatusDisconnected, ResourceEnabled, false, false, "*schemas.JobRejected"},
		{"cancel maintenance of a host not in it", nil, disabled, &schemas.CancelMaintenance{HostCommand: cmd()}, StatusUp, ResourceDisabled, false, false, ""},
		{"check host answer nobody asked for", nil, upped, &schemas.CheckHostAnswer{TargetHostID: "h1", Result: "Down"}, StatusUp, ResourceEnabled, true, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			m := New(cfg)
			var r *schemas.HostRecord
			for _, v := range tt.setup {
				r, _ = m.Step(r, rec(v), t0)
			}
			var snapshot schemas.HostRecord
			if r != nil {
				snapshot = canon(clone(r))
			}
			before := r
			r, out := m.Step(r, rec(tt.in), t0.Add(time.Second))
			roundTrip(t, r)
			if tt.status == "" {
				if r != nil {
					t.Fatalf("want no state, got %+v", r)
				}
			} else if r == nil || r.Status.Status != tt.status || r.Status.ResourceState != tt.resource || r.Status.Reservable != tt.reservable {
				t.Fatalf("want %s/%s reservable=%v, got %+v", tt.status, tt.resource, tt.reservable, r)
			}
			sts := statuses(t, out)
			if tt.published != (len(sts) == 1) || len(sts) > 1 {
				t.Fatalf("published %d statuses, want published=%v: %+v", len(sts), tt.published, out)
			}
			if tt.published && (sts[0].Status != tt.status || sts[0].Reservable != tt.reservable || sts[0].UpdatedAt != t0.Add(time.Second).UnixMilli()) {
				t.Fatalf("published %+v", sts[0])
			}
			var others []string
			for _, o := range out {
				if _, ok := o.Value.(*schemas.HostStatus); !ok {
					others = append(others, typeName(o.Value))
				}
			}
			if want := strings.Split(tt.other, " "); tt.other == "" && len(others) != 0 || tt.other != "" && !slices.Equal(others, want) {
				t.Fatalf("other outputs %v, want %q", others, tt.other)
			}
			if before != nil && !reflect.DeepEqual(canon(before), snapshot) {
				t.Fatalf("Step changed the state it was given")
			}
		})
	}
}

func typeName(v any) string {
	return fmt.Sprintf("%T", v)
}

func TestRegistrationCopiesFacts(t *testing.T) {
	m := New(DefaultConfig())
	r, out := m.Step(nil, rec(hello("vm1")), t0)
	roundTrip(t, r)
	st := statuses(t, out)[0]
	if st.HostID != "h1" || st.Name != "host-1" || st.ZoneID != "z1" || st.PodID != "p1" || st.ClusterID != "c1" ||
		st.Hypervisor != "sim" || st.CPU != 8 || st.MemoryMB != 16384 || !slices.Equal(st.Tags, []string{"ssd"}) ||
		st.Properties["rack"] != "r7" || st.LastPingAt != t0.UnixMilli() || st.Reason != ReasonConnected {
		t.Fatalf("registered status %+v", st)
	}
	if r.AgentID != "agent-a" || r.PingDeadline != t0.Add(150*time.Second).UnixMilli() || r.VmLastSeen["vm1"] != t0.UnixMilli() {
		t.Fatalf("registered record %+v", r)
	}
}

// A host is Connecting from its agent's hello to the end of the agent's
// first report round (its ping): placement must not choose a host whose
// VMs the VM processor has not heard of yet.
func TestConnectingUntilFirstRound(t *testing.T) {
	m := New(DefaultConfig())
	r, out := m.Step(nil, rec(hello("vm1")), t0)
	if st := statuses(t, out); len(st) != 1 || st[0].Status != StatusConnecting || st[0].Reservable {
		t.Fatalf("after the hello: %+v", st)
	}
	r, out = m.Step(r, rec(pingOf(1, "vm1")), t0)
	if st := statuses(t, out); len(st) != 1 || st[0].Status != StatusUp || !st[0].Reservable || r.Status.Status != StatusUp {
		t.Fatalf("after the first round: %+v", st)
	}
	// A reconnect waits for its round again.
	_, out = m.Step(r, rec(hello("vm1")), t0.Add(time.Minute))
	if st := statuses(t, out); len(st) != 1 || st[0].Status != StatusConnecting {
		t.Fatalf("after a reconnect: %+v", st)
	}
}

func TestRejectionIsStable(t *testing.T) {
	cfg := DefaultConfig()
	cfg.AutoRegister = false
	m := New(cfg)
	_, a := m.Step(nil, rec(hello()), t0)
	_, b := m.Step(nil, rec(hello()), t0.Add(time.Minute))
	ra, rb := a[0].Value.(*schemas.AgentRejected), b[0].Value.(*schemas.AgentRejected)
	if a[0].Topic != schemas.TopicAgentCommands || a[0].Key != "h1" || ra.Reason != ReasonUnknownHost {
		t.Fatalf("rejection %+v", a[0])
	}
	if ra.CommandID != rb.CommandID || ra.CommandID == "" {
		t.Fatalf("redelivered hello rejected with another id: %q vs %q", ra.CommandID, rb.CommandID)
	}
}

func TestSteadyPingsUpdateStateOnly(t *testing.T) {
	m := New(DefaultConfig())
	r := up(t, m)
	for i := 2; i <= 5; i++ {
		now := t0.Add(time.Duration(i) * time.Minute)
		var out []schemas.Record
		r, out = m.Step(r, rec(pingOf(int64(i))), now)
		if len(out) != 0 {
			t.Fatalf("ping %d emitted %+v", i, out)
		}
		if r.Status.LastPingAt != now.UnixMilli() || r.PingDeadline != now.Add(150*time.Second).UnixMilli() || r.LastReportSeq != int64(i) {
			t.Fatalf("ping %d not recorded: %+v", i, r)
		}
	}
}

func TestPingTimeout(t *testing.T) {
	m := New(DefaultConfig())
	r := up(t, m)
	deadline := t0.Add(150 * time.Second)
	if w := m.Wake(r); !w.Equal(deadline) {
		t.Fatalf("wake %v, want %v", w, deadline)
	}
	tests := []struct {
		name   string
		at     time.Time
		status string
		wake   time.Time
	}{
		{"before the deadline", deadline.Add(-time.Second), StatusUp, deadline},
		// Disconnected, and the first investigator has StepTimeout (30 s).
		{"at the deadline", deadline, StatusDisconnected, deadline.Add(30 * time.Second)},
		{"a little late", deadline.Add(30 * time.Second), StatusDisconnected, deadline.Add(60 * time.Second)},
		// Later than the slack: the processor was not running, hosts get
		// the restart grace to ping again.
		{"after a restart", deadline.Add(time.Hour), StatusUp, deadline.Add(time.Hour + 300*time.Second)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, out := m.Tick(r, "h1", tt.at)
			roundTrip(t, got)
			if got.Status.Status != tt.status || !m.Wake(got).Equal(tt.wake) {
				t.Fatalf("status %s wake %v, want %s %v", got.Status.Status, m.Wake(got), tt.status, tt.wake)
			}
			sts := statuses(t, out)
			if changed := tt.status != StatusUp; changed != (len(sts) == 1) {
				t.Fatalf("outputs %+v", out)
			}
			if len(sts) == 1 && (sts[0].Reason != ReasonPingTimeout || sts[0].Reservable) {
				t.Fatalf("published %+v", sts[0])
			}
			if r.Status.Status != StatusUp {
				t.Fatalf("Tick changed its input")
			}
		})
	}
}

func TestRestartGraceThenTimeout(t *testing.T) {
	m := New(DefaultConfig())
	r := up(t, m)
	restart := t0.Add(time.Hour)
	r, out := m.Tick(r, "h1", restart)
	if len(out) != 0 || r.Status.Status != StatusUp {
		t.Fatalf("late tick acted: %+v", out)
	}
	// No ping within the grace: an ordinary timeout at its end.
	r, out = m.Tick(r, "h1", m.Wake(r))
	if r.Status.Status != StatusDisconnected || len(statuses(t, out)) != 1 {
		t.Fatalf("after grace: %+v %+v", r.Status, out)
	}
	// With a ping in the grace, the ordinary deadline applies again.
	r = up(t, m)
	r, _ = m.Tick(r, "h1", restart)
	r, _ = m.Step(r, rec(pingOf(1)), restart.Add(10*time.Second))
	if w := m.Wake(r); !w.Equal(restart.Add(160 * time.Second)) {
		t.Fatalf("wake after ping in grace %v", w)
	}
}

func TestVmMissingFromHost(t *testing.T) {
	m := New(DefaultConfig())
	r, _ := m.Step(nil, rec(hello("vm1", "vm2")), t0)
	step := func(at time.Duration, vms ...string) []*schemas.VmMissingFromHost {
		t.Helper()
		var out []schemas.Record
		r, out = m.Step(r, rec(pingOf(int64(at/time.Minute), vms...)), t0.Add(at))
		roundTrip(t, r)
		var ms []*schemas.VmMissingFromHost
		for _, o := range out {
			if v, ok := o.Value.(*schemas.VmMissingFromHost); ok {
				if o.Topic != schemas.TopicVmSignals || o.Key != v.VmID {
					t.Fatalf("missing signal on %s/%s", o.Topic, o.Key)
				}
				ms = append(ms, v)
			}
		}
		return ms
	}
	if ms := step(time.Minute, "vm1"); len(ms) != 0 {
		t.Fatalf("vm2 missing for 1 min reported: %+v", ms)
	}
	if ms := step(2*time.Minute, "vm1"); len(ms) != 0 {
		t.Fatalf("vm2 missing for exactly the grace reported: %+v", ms)
	}
	ms := step(3*time.Minute, "vm1")
	if len(ms) != 1 || ms[0].VmID != "vm2" || ms[0].HostID != "h1" || ms[0].LastSeenAt != t0.UnixMilli() || ms[0].ReportSeq != 3 {
		t.Fatalf("want one VmMissingFromHost for vm2, got %+v", ms)
	}
	if ms := step(4*time.Minute, "vm1"); len(ms) != 0 {
		t.Fatalf("repeated: %+v", ms)
	}
	// Listed again, then missing again: told again.
	step(5*time.Minute, "vm1", "vm2")
	step(6*time.Minute, "vm1")
	if ms := step(8*time.Minute, "vm1"); len(ms) != 1 || ms[0].LastSeenAt != t0.Add(5*time.Minute).UnixMilli() {
		t.Fatalf("second absence: %+v", ms)
	}
	// Told long ago: forgotten, and never told again.
	step(25*time.Hour, "vm1")
	if _, ok := r.VmLastSeen["vm2"]; ok || slices.Contains(r.MissingSent, "vm2") {
		t.Fatalf("vm2 not forgotten: %+v", r)
	}
}

// A hello carries no report sequence: a VM it leaves out is told missing
// by the next ping, under the ping's sequence, never under the sequence of
// the last ping before the reconnect, which the VM processor would take for
// stale (found by the simulation, seed 6411).
func TestHelloLeavingVmOutTellsByNextPing(t *testing.T) {
	m := New(DefaultConfig())
	r, _ := m.Step(nil, rec(hello("vm1", "vm2")), t0)
	r, _ = m.Step(r, rec(pingOf(7, "vm1", "vm2")), t0.Add(time.Minute))
	r, out := m.Step(r, rec(hello("vm1")), t0.Add(time.Hour))
	for _, o := range out {
		if _, ok := o.Value.(*schemas.VmMissingFromHost); ok {
			t.Fatalf("the hello told a VM missing: %+v", o.Value)
		}
	}
	_, out = m.Step(r, rec(pingOf(9000, "vm1")), t0.Add(time.Hour+time.Minute))
	var ms []*schemas.VmMissingFromHost
	for _, o := range out {
		if v, ok := o.Value.(*schemas.VmMissingFromHost); ok {
			ms = append(ms, v)
		}
	}
	if len(ms) != 1 || ms[0].VmID != "vm2" || ms[0].ReportSeq != 9000 {
		t.Fatalf("want vm2 told missing under the ping's sequence 9000, got %+v", ms)
	}
}

func TestMaintenanceJobID(t *testing.T) {
	tests := []struct {
		id    string
		host  string
		round int64
		ok    bool
	}{
		{MaintenanceJobID("z1-p1-c1-h1", 3, "vm-9"), "z1-p1-c1-h1", 3, true},
		{"maint:h1:x:vm1", "", 0, false},
		{"maint:h1:2", "", 0, false},
		{"maint::2:vm1", "", 0, false},
		{"d1-4", "", 0, false},
	}
	for _, tt := range tests {
		host, round, ok := ParseMaintenanceJobID(tt.id)
		if host != tt.host || round != tt.round || ok != tt.ok {
			t.Errorf("%q: got %q %d %v", tt.id, host, round, ok)
		}
	}
}

func TestRelay(t *testing.T) {
	id := MaintenanceJobID("h1", 2, "vm1")
	ref := schemas.JobRef{JobID: id, VmID: "vm1", At: 7}
	tests := []struct {
		name   string
		in     any
		ok     bool
		reason string
		relay  bool
	}{
		{"succeeded", &schemas.JobSucceeded{JobRef: ref}, true, "", true},
		{"failed", &schemas.JobFailed{JobRef: ref, Reason: "Timeout"}, false, "Timeout", true},
		{"cancelled", &schemas.JobCancelled{JobRef: ref}, false, "Cancelled", true},
		{"rejected", &schemas.JobRejected{JobRef: ref, Reason: "InvalidState"}, false, "Rejected: InvalidState", true},
		{"a step", &schemas.JobStepped{JobRef: ref}, false, "", false},
		{"another job", &schemas.JobSucceeded{JobRef: schemas.JobRef{JobID: "api-1", VmID: "vm1"}}, false, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, out := Relay{}.Step(nil, schemas.Record{Topic: schemas.TopicVmEvents, Key: "vm1", Value: tt.in}, t0)
			if s != nil {
				t.Fatalf("relay kept state %+v", s)
			}
			if !tt.relay {
				if len(out) != 0 {
					t.Fatalf("relayed %+v", out)
				}
				return
			}
			e, ok := out[0].Value.(*schemas.MaintenanceMigrationEnded)
			if len(out) != 1 || !ok || out[0].Topic != schemas.TopicHostEvents || out[0].Key != "h1" {
				t.Fatalf("relayed %+v", out)
			}
			if *e != (schemas.MaintenanceMigrationEnded{HostID: "h1", VmID: "vm1", JobID: id, OK: tt.ok, Reason: tt.reason, At: 7}) {
				t.Fatalf("relayed %+v", e)
			}
		})
	}
}

// host.auto.register changes at run time, as any setting: off, an unknown
// host's agent is refused; on again, the next hello registers its host.
func TestAutoRegisterSetting(t *testing.T) {
	m := New(DefaultConfig())
	set := func(v string) {
		t.Helper()
		if err := m.Configure(&schemas.SettingChanged{Name: "host.auto.register", Scope: "global", Value: v}); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Configure(&schemas.SettingChanged{Name: "host.auto.register", Scope: "global", Value: "maybe"}); err == nil {
		t.Fatal("a value that is no bool was taken")
	}
	set("false")
	r, out := m.Step(nil, rec(hello()), t0)
	if r != nil || len(out) != 1 || typeName(out[0].Value) != "*schemas.AgentRejected" {
		t.Fatalf("auto-registration off: %+v %+v", r, out)
	}
	set("true")
	if r, _ := m.Step(nil, rec(hello()), t0); r == nil || r.Status.Status != StatusConnecting {
		t.Fatalf("auto-registration on: %+v", r)
	}
}

// A late Tick is a restarted processor's for an unmanaged host too: its
// pings may still wait in the topic, so it gets the restart grace before
// it is shown Disconnected.
func TestUnmanagedLateTickGetsTheGrace(t *testing.T) {
	m := New(DefaultConfig())
	r, _ := m.Step(up(t, m), rec(&schemas.UnmanageHost{HostCommand: cmd()}), t0)
	r, out := m.Tick(r, "h1", t0.Add(time.Hour))
	if len(out) != 0 || r.Status.Status != StatusUp || r.GraceUntil == 0 {
		t.Fatalf("late tick: %+v %+v", r.Status, out)
	}
	r, out = m.Tick(r, "h1", m.Wake(r))
	if st := statuses(t, out); len(st) != 1 || st[0].Status != StatusDisconnected || r.Investigation != "" || r.AlertAt != 0 {
		t.Fatalf("after the grace: %+v %+v", r, out)
	}
}
