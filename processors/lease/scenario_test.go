package lease

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vmplane/vmplane/internal/scenario"
	"github.com/vmplane/vmplane/internal/testkit"
	"github.com/vmplane/vmplane/schemas"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const zone = "z1"

// TestScenarios plays testdata/*.txt (see internal/scenario for the
// syntax). The directives:
//
//	host <id> <status> [enabled|disabled] [k=v ...]   HostStatus on lease.commands.v1
//	create <lease> <project> <start> <end> <min>..<max>[:k=v,...] ... [admin]
//	update <lease> [start=<d>] [end=<d>] [res=<min>..<max>] ... [admin]
//	delete <lease>
//	alloc <vm> <host> <account>                         CapacityAllocated
//	release <vm> <host>                                 CapacityReleased
//	tick <d>                                            advance the clock to <d>, ticking at every wake
//	show <lease>                                        the lease in state
//
// Durations are from the scenario's start. Directives run at the current
// clock, with DefaultConfig's policy (leases of at most 168h, a quota of
// 336 host-hours); admin marks a request an admin made. Run with -update
// to rewrite the outputs, then read the diff.
func TestScenarios(t *testing.T) {
	scenario.Run(t, "testdata/*.txt", func(t *testing.T) scenario.Step {
		cfg := DefaultConfig()
		cfg.StopTimeout = 10 * time.Minute
		s := &player{t: t, m: New(cfg), log: testkit.PartsLog{}}
		return s.run
	})
}

type player struct {
	t   *testing.T
	m   *Machine
	z   *schemas.LeaseZoneRecord
	now time.Duration
	seq int
	// log is the zone's changelog as its parts made it (checkParts), and
	// directives counts the directives played.
	log        testkit.PartsLog
	directives int
}

func dur(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("duration %q: %v", s, err)
	}
	return d
}

func ms(d time.Duration) int64 { return t0.Add(d).UnixMilli() }

// spec parses <min>..<max>[:k=v,...].
func spec(t *testing.T, s string) schemas.ReservationSpec {
	counts, props, _ := strings.Cut(s, ":")
	lo, hi, _ := strings.Cut(counts, "..")
	a, err1 := strconv.Atoi(lo)
	b, err2 := strconv.Atoi(hi)
	if err1 != nil || err2 != nil {
		t.Fatalf("reservation %q", s)
	}
	r := schemas.ReservationSpec{MinHosts: int32(a), MaxHosts: int32(b)}
	if props != "" {
		r.HostProperties = map[string]string{}
		for _, kv := range strings.Split(props, ",") {
			k, v, _ := strings.Cut(kv, "=")
			r.HostProperties[k] = v
		}
	}
	return r
}

func (s *player) step(v any) []schemas.Record {
	s.seq++
	var out []schemas.Record
	s.z, out = s.m.Step(s.z, schemas.Record{Topic: schemas.TopicLeaseCommands, Key: zone, Value: v}, t0.Add(s.now))
	return out
}

func (s *player) cmdID() string { return fmt.Sprintf("c%d", s.seq+1) }

// run plays a directive, then checks the zone's parts (checkParts).
func (s *player) run(d scenario.Case) []string {
	lines := s.play(d)
	if s.z != nil {
		s.directives++
		s.z = checkParts(s.t, s.m, s.log, s.z, s.directives%4 == 0)
	}
	return lines
}

func (s *player) play(d scenario.Case) []string {
	t := s.t
	a := d.Args
	var out []schemas.Record
	switch d.Cmd {
	case "host":
		st := &schemas.HostStatus{HostID: a[0], ZoneID: zone, Status: a[1], ResourceState: "Enabled", Properties: map[string]string{}}
		for _, w := range a[2:] {
			switch w {
			case "disabled":
				st.ResourceState = "Disabled"
			case "enabled":
			default:
				k, v, _ := strings.Cut(w, "=")
				st.Properties[k] = v
			}
		}
		st.Reservable = st.Status == "Up" && st.ResourceState == "Enabled"
		out = s.step(st)
	case "create":
		c := &schemas.CreateLease{CommandID: s.cmdID(), LeaseID: a[0], ZoneID: zone, Project: a[1], Name: a[0],
			Start: ms(dur(t, a[2])), End: ms(dur(t, a[3]))}
		for _, r := range a[4:] {
			if r == "admin" {
				c.Admin = true
				continue
			}
			c.Reservations = append(c.Reservations, spec(t, r))
		}
		out = s.step(c)
	case "update":
		c := &schemas.UpdateLease{CommandID: s.cmdID(), LeaseID: a[0], ZoneID: zone}
		for _, w := range a[1:] {
			k, v, _ := strings.Cut(w, "=")
			switch k {
			case "start":
				c.Start = ms(dur(t, v))
			case "end":
				c.End = ms(dur(t, v))
			case "res":
				c.Reservations = append(c.Reservations, spec(t, v))
			case "project":
				c.Project = v
			case "admin":
				c.Admin = true
			}
		}
		out = s.step(c)
	case "delete":
		id := s.cmdID()
		out = s.step(&schemas.DeleteLease{CommandID: id, LeaseID: a[0], ZoneID: zone,
			Caller: schemas.Caller{Account: "acme", KeyID: "k1", RequestID: "req-" + id}})
	case "alloc":
		out = s.step(&schemas.CapacityAllocated{ZoneID: zone, VmID: a[0], HostID: a[1], Account: a[2]})
	case "release":
		out = s.step(&schemas.CapacityReleased{ZoneID: zone, VmID: a[0], HostID: a[1]})
	case "tick":
		to := dur(t, a[0])
		var lines []string
		for {
			w := s.m.Wake(s.z)
			if w.IsZero() || w.After(t0.Add(to)) {
				break
			}
			s.now = w.Sub(t0)
			var o []schemas.Record
			s.z, o = s.m.Tick(s.z, zone, w)
			for _, r := range o {
				lines = append(lines, fmt.Sprintf("@%v %s", s.now, render(r)))
			}
		}
		s.now = to
		return lines
	case "show":
		for _, l := range s.z.Leases {
			if l.LeaseID == a[0] {
				return []string{showLease(&l)}
			}
		}
		return []string{"no lease " + a[0]}
	default:
		t.Fatalf("%s: unknown directive %q", d.Pos, d.Directive)
	}
	var lines []string
	for _, r := range out {
		lines = append(lines, render(r))
	}
	return lines
}

func rel(v int64) time.Duration { return time.UnixMilli(v).Sub(t0) }

func showRes(rs []schemas.Reservation) string {
	var parts []string
	for _, r := range rs {
		p := fmt.Sprintf("%s %s %d..%d hosts=%s", r.ID, r.Status, r.MinHosts, r.MaxHosts, strings.Join(r.Hosts, ","))
		if r.MissingResources {
			p += " missing_resources"
		}
		if r.ResourcesChanged {
			p += " resources_changed"
		}
		parts = append(parts, p)
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

func showLease(l *schemas.LeaseRecord) string {
	s := fmt.Sprintf("%s %s %v..%v", l.LeaseID, l.Status, rel(l.Start), rel(l.End))
	if l.Degraded {
		s += " degraded"
	}
	s += " " + showRes(l.Reservations)
	if len(l.StopWait) > 0 {
		s += " stop_wait=" + strings.Join(l.StopWait, ",")
	}
	if l.Reason != "" {
		s += fmt.Sprintf(" reason=%q", l.Reason)
	}
	return s
}

func render(r schemas.Record) string {
	switch v := r.Value.(type) {
	case *schemas.LeaseStatusChanged:
		topic := "event"
		if r.Topic == schemas.TopicPlacementRequests {
			topic = "placement"
		}
		s := fmt.Sprintf("%s %s %s %s", topic, v.LeaseID, v.Event, v.Status)
		if v.Degraded {
			s += " degraded"
		}
		if v.Status != "" {
			s += " " + showRes(v.Reservations)
		}
		if v.Detail != "" {
			s += fmt.Sprintf(" %q", v.Detail)
		}
		return s
	case *schemas.LeaseHostChanged:
		return fmt.Sprintf("host %s reservable=%v leases=%s", v.HostID, v.Reservable, strings.Join(v.Leases, ","))
	case *schemas.JobAccepted:
		return fmt.Sprintf("job %s accepted %s account=%s caller=%s", v.JobID, v.JobType, v.Account, callerOf(v.Caller))
	case *schemas.JobStepped:
		return fmt.Sprintf("job %s step %d %s %q obj=%s", v.JobID, v.Seq, v.Step, v.Text, v.Obj)
	case *schemas.JobSucceeded:
		return fmt.Sprintf("job %s succeeded", v.JobID)
	case *schemas.JobFailed:
		return fmt.Sprintf("job %s failed %s %q", v.JobID, v.Reason, v.Detail)
	case *schemas.AlertRaised:
		if r.Topic != schemas.TopicVmEvents || r.Key != v.HostID || v.ZoneID == "" || v.AlertID == "" {
			return fmt.Sprintf("misaddressed alert %s/%s %+v", r.Topic, r.Key, v)
		}
		return fmt.Sprintf("alert %s %s: %s", v.Kind, v.HostID, v.Message)
	case *schemas.Stop:
		return fmt.Sprintf("vm.commands Stop %s id=%s account=%s caller=%s", v.VmID, v.CommandID, v.Account, callerOf(v.Caller))
	case *schemas.Migrate:
		return fmt.Sprintf("vm.commands Migrate %s to=%s id=%s caller=%s", v.VmID, v.HostID, v.CommandID, callerOf(v.Caller))
	}
	return fmt.Sprintf("%s %T", r.Topic, r.Value)
}

// callerOf shows who caused a command or a job: account/key/request.
func callerOf(c schemas.Caller) string {
	return c.Account + "/" + c.KeyID + "/" + c.RequestID
}
