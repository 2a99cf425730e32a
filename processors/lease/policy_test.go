package lease

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vmplane/vmplane/processors/placement"
	"github.com/vmplane/vmplane/schemas"
)

// held is a lease an account already has when a case's request comes.
type held struct {
	project  string
	from, to time.Duration // from the scenario's start
	hosts    int32
}

// TestPolicy: each request meets the limits as they stand at its time,
// after the leases the case sets up (made by an admin, so only the request
// is judged). want is the hosts the lease got, or a part of its refusal.
func TestPolicy(t *testing.T) {
	def := DefaultConfig().Policy
	tests := []struct {
		name   string
		policy Policy
		before []held
		at     time.Duration // when the request comes
		req    []schemas.ReservationSpec
		length time.Duration
		admin  bool
		want   string
	}{
		{name: "a day on one host", policy: def, length: 24 * time.Hour, req: res(1, 1), want: "hosts=1"},
		{name: "the longest lease", policy: def, length: 168 * time.Hour, req: res(1, 1), want: "hosts=1"},
		{name: "a minute longer", policy: def, length: 168*time.Hour + time.Minute, req: res(1, 1),
			want: "the lease is 168h1m long, over the maximum lease length of 168h"},
		{name: "ten years, admin", policy: def, length: 87600 * time.Hour, req: res(1, 8), admin: true, want: "hosts=8"},
		{name: "ten years, no length limit", policy: Policy{MaxLength: -1, HostHours: def.HostHours}, length: 87600 * time.Hour,
			req: res(1, 1), want: "336 host-hours, of which its leases hold 0.0 from now on; this lease needs at least 87600.0 more (1 host for 87600h)"},
		{name: "ten years, no limits", policy: Policy{MaxLength: -1, HostHours: -1}, length: 87600 * time.Hour, req: res(1, 8), want: "hosts=8"},
		{name: "the quota caps max_hosts", policy: def, length: 100 * time.Hour, req: res(1, 8), want: "hosts=3 (acme-r1 has 3 of its 8 max_hosts"},
		{name: "minimum over the quota", policy: def, length: 100 * time.Hour, req: res(4, 8),
			want: "this lease needs at least 400.0 more (4 hosts for 100h)"},
		{name: "later reservations keep their minimum", policy: def, length: 84 * time.Hour, req: append(res(1, 4), res(2, 4)...),
			want: "hosts=4 (acme-r1 has 2 of its 4 max_hosts: the lease quota allows no more; acme-r2 has 2 of its 4 max_hosts"},
		{name: "a future lease counts", policy: def, before: []held{{"acme", 50 * time.Hour, 150 * time.Hour, 2}},
			length: 137 * time.Hour, req: res(1, 1), want: "of which its leases hold 200.0 from now on; this lease needs at least 137.0 more"},
		{name: "up to the quota exactly", policy: def, before: []held{{"acme", 50 * time.Hour, 150 * time.Hour, 2}},
			length: 136 * time.Hour, req: res(1, 1), want: "hosts=1"},
		{name: "an active lease counts from now", policy: def, before: []held{{"acme", 0, 168 * time.Hour, 2}},
			at: 100 * time.Hour, length: 168 * time.Hour, req: res(1, 1), want: "hosts=1"},
		{name: "an ended lease counts nothing", policy: def, before: []held{{"acme", 0, 168 * time.Hour, 2}},
			at: 168 * time.Hour, length: 168 * time.Hour, req: res(2, 2), want: "hosts=2"},
		{name: "another account's leases do not count", policy: def, before: []held{{"bolt", 0, 168 * time.Hour, 2}},
			length: 168 * time.Hour, req: res(2, 2), want: "hosts=2"},
		{name: "an account's own quota", policy: Policy{MaxLength: def.MaxLength, HostHours: def.HostHours, Accounts: map[string]int64{"acme": 1000}},
			length: 168 * time.Hour, req: res(5, 5), want: "hosts=5"},
		{name: "an account that may lease nothing", policy: Policy{MaxLength: def.MaxLength, HostHours: def.HostHours, Accounts: map[string]int64{"acme": 0}},
			length: time.Hour, req: res(1, 1), want: "over the lease quota of acme in zone z1: 0 host-hours"},
		{name: "an account with no quota", policy: Policy{MaxLength: def.MaxLength, HostHours: def.HostHours, Accounts: map[string]int64{"acme": -1}},
			length: 168 * time.Hour, req: res(8, 8), want: "hosts=8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Policy = tc.policy
			m := New(cfg)
			var z *schemas.LeaseZoneRecord
			for i := range 8 {
				z, _ = m.Step(z, rec(up(fmt.Sprintf("h%d", i+1), true)), t0)
			}
			for i, h := range tc.before {
				z, _ = m.Step(z, rec(&schemas.CreateLease{CommandID: fmt.Sprint("setup", i), LeaseID: fmt.Sprint("setup", i), ZoneID: zone,
					Project: h.project, Start: ms(h.from), End: ms(h.to), Reservations: res(h.hosts, h.hosts), Admin: true}), t0)
			}
			_, out := m.Step(z, rec(&schemas.CreateLease{CommandID: "c", LeaseID: "acme", ZoneID: zone, Project: "acme",
				Start: ms(tc.at), End: ms(tc.at + tc.length), Reservations: tc.req, Admin: tc.admin}), t0.Add(tc.at))
			if got := outcome(out); !strings.Contains(got, tc.want) {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func res(lo, hi int32) []schemas.ReservationSpec {
	return []schemas.ReservationSpec{{MinHosts: lo, MaxHosts: hi}}
}

// outcome renders the first notification of a create: the hosts it got
// (and the note on them), or its refusal.
func outcome(out []schemas.Record) string {
	for _, r := range out {
		v, ok := r.Value.(*schemas.LeaseStatusChanged)
		switch {
		case !ok:
		case v.Event == "create_failed":
			return v.Detail
		case v.Event == "created":
			n := 0
			for _, r := range v.Reservations {
				n += len(r.Hosts)
			}
			return fmt.Sprintf("hosts=%d (%s)", n, v.Detail)
		}
	}
	return fmt.Sprintf("no create notification in %d outputs", len(out))
}

// TestUpdateWithinPolicy: an update is judged like a create, but never has
// to cure what the lease already is, so a user may shrink a lease an admin
// made past both limits.
func TestUpdateWithinPolicy(t *testing.T) {
	tests := []struct {
		name string
		upd  schemas.UpdateLease
		want string // the update's notification and its detail
	}{
		{"shrink the window", schemas.UpdateLease{End: ms(1000 * time.Hour)}, "updated"},
		{"fewer hosts", schemas.UpdateLease{Reservations: res(1, 1)}, "updated"},
		{"lengthen", schemas.UpdateLease{End: ms(90000 * time.Hour)}, "update_failed the lease is 90000h long, over the maximum lease length of 168h"},
		{"more hosts", schemas.UpdateLease{Reservations: res(3, 3)}, "update_failed over the lease quota of acme"},
		{"more hosts, admin", schemas.UpdateLease{Reservations: res(3, 3), Admin: true}, "updated"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := New(DefaultConfig())
			var z *schemas.LeaseZoneRecord
			for i := range 4 {
				z, _ = m.Step(z, rec(up(fmt.Sprintf("h%d", i+1), true)), t0)
			}
			z, _ = m.Step(z, rec(&schemas.CreateLease{CommandID: "c1", LeaseID: "l1", ZoneID: zone, Project: "acme",
				End: ms(87600 * time.Hour), Reservations: res(2, 2), Admin: true}), t0)
			u := tc.upd
			u.CommandID, u.LeaseID, u.ZoneID, u.Project = "c2", "l1", zone, "acme"
			_, out := m.Step(z, rec(&u), t0.Add(time.Hour))
			got := ""
			for _, r := range out {
				if v, ok := r.Value.(*schemas.LeaseStatusChanged); ok && r.Topic == schemas.TopicLeaseEvents && v.Event != "updating" {
					got = strings.TrimSpace(v.Event + " " + v.Detail)
				}
			}
			if !strings.HasPrefix(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// zonePair runs a zone's lease and placement machines as the log joins
// them: the lease processor's copies on placement.requests.v1 go to
// placement, placement's capacity events on placement.events.v1 go back
// to the lease processor.
type zonePair struct {
	t     *testing.T
	lease *Machine
	place *placement.Machine
	lz    *schemas.LeaseZoneRecord
	pz    *schemas.ZoneRecord
}

func (p *zonePair) toLease(v any) []schemas.Record {
	var out []schemas.Record
	p.lz, out = p.lease.Step(p.lz, rec(v), t0)
	for _, r := range out {
		if r.Topic == schemas.TopicPlacementRequests {
			p.pz, _ = p.place.Step(p.pz, schemas.Record{Topic: r.Topic, Key: zone, Value: r.Value}, t0)
		}
	}
	return out
}

func (p *zonePair) toPlacement(v any) []schemas.Record {
	var out []schemas.Record
	p.pz, out = p.place.Step(p.pz, schemas.Record{Topic: schemas.TopicPlacementRequests, Key: zone, Value: v}, t0)
	for _, r := range out {
		if r.Topic == schemas.TopicPlacementEvents {
			p.toLease(r.Value)
		}
	}
	return out
}

// deploy asks placement for a host for vm and returns it, or fails the
// test with placement's reason.
func (p *zonePair) deploy(vm, account string, avoid ...string) string {
	p.t.Helper()
	for _, r := range p.toPlacement(&schemas.PlaceVm{RequestID: "place-" + vm + strings.Join(avoid, ","), VmID: vm, ZoneID: zone,
		Account: account, Offering: schemas.Offering{ID: "small", Name: "small", CPU: 1, MemoryMB: 1024}, AvoidHosts: avoid}) {
		switch v := r.Value.(type) {
		case *schemas.PlacementDecided:
			return v.HostID
		case *schemas.PlacementFailed:
			p.t.Fatalf("%s of %s: %s", vm, account, v.Detail)
		}
	}
	p.t.Fatalf("%s of %s: no decision", vm, account)
	return ""
}

// TestOneAccountCannotLockOutTheZone replays issue 23's attack through the
// lease and placement machines together: a user leases every host of a
// six-host zone until 2036, hosts with other accounts' VMs among them. It
// is refused, as is every host for the longest lease; what the quota allows
// takes only empty hosts, and an admin's lease past both limits takes no
// host that runs another account's VMs. The other accounts still deploy
// and migrate, where before they failed "6 leased to another project".
func TestOneAccountCannotLockOutTheZone(t *testing.T) {
	p := &zonePair{t: t, lease: New(DefaultConfig()), place: placement.New(placement.DefaultConfig())}
	for i := range 6 {
		h := &schemas.HostStatus{HostID: fmt.Sprintf("h%d", i+1), ZoneID: zone, PodID: "p1", ClusterID: "c1", Status: "Up",
			ResourceState: "Enabled", Reservable: true, CPU: 16, MemoryMB: 16384}
		p.toLease(h)
		p.toPlacement(h)
	}
	boltHost, carlHost := p.deploy("vm-b1", "bolt"), p.deploy("vm-c1", "carl", "h1")
	if boltHost != "h1" || carlHost != "h2" {
		t.Fatalf("setup: bolt on %s, carl on %s", boltHost, carlHost)
	}
	until2036 := time.Date(2036, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	create := func(id string, lo, hi int32, end int64, admin bool) (string, []string) {
		out := p.toLease(&schemas.CreateLease{CommandID: id, LeaseID: id, ZoneID: zone, Project: "acme", Start: t0.UnixMilli(),
			End: end, Reservations: res(lo, hi), Admin: admin})
		for _, r := range out {
			if v, ok := r.Value.(*schemas.LeaseStatusChanged); ok && (v.Event == "created" || v.Event == "create_failed") {
				return v.Detail, v.Reservations[0].Hosts
			}
		}
		t.Fatalf("%s: no answer", id)
		return "", nil
	}

	if why, hosts := create("attack", 6, 6, until2036, false); len(hosts) != 0 || !strings.Contains(why, "maximum lease length of 168h") {
		t.Fatalf("every host until 2036: %v %q", hosts, why)
	}
	if why, hosts := create("week", 6, 6, ms(168*time.Hour), false); len(hosts) != 0 || !strings.Contains(why, "quota of acme") {
		t.Fatalf("every host for a week: %v %q", hosts, why)
	}
	if _, hosts := create("quota", 1, 6, ms(168*time.Hour), false); fmt.Sprint(hosts) != "[h3 h4]" {
		t.Fatalf("what the quota allows: %v, want the empty h3 and h4", hosts)
	}
	if _, hosts := create("admin", 1, 6, until2036, true); fmt.Sprint(hosts) != "[h5 h6]" {
		t.Fatalf("an admin's lease: %v, want the empty h5 and h6 only", hosts)
	}

	// bolt and carl deploy again, and bolt migrates away from h1.
	if h := p.deploy("vm-b2", "bolt"); h != "h1" && h != "h2" {
		t.Fatalf("bolt's deploy landed on %s", h)
	}
	if h := p.deploy("vm-c2", "carl"); h != "h1" && h != "h2" {
		t.Fatalf("carl's deploy landed on %s", h)
	}
	if h := p.deploy("vm-b1", "bolt", "h1"); h != "h2" {
		t.Fatalf("bolt's migrate landed on %s", h)
	}
}

// TestParsePolicy: the settings as an operator writes them; an empty one
// keeps the default (0 here, which New turns into DefaultConfig's).
func TestParsePolicy(t *testing.T) {
	tests := []struct {
		maxLength, quota, accounts string
		want                       string // the policy, or a part of the error
	}{
		{"", "", "", "{MaxLength:0s HostHours:0 Accounts:map[]}"},
		{"72h", "100", "", "{MaxLength:72h0m0s HostHours:100 Accounts:map[]}"},
		{"none", "none", "acme=1000, lab=none,ro=0", "{MaxLength:-1ns HostHours:-1 Accounts:map[acme:1000 lab:-1 ro:0]}"},
		{"0s", "", "", `maximum lease length "0s"`},
		{"a week", "", "", `maximum lease length "a week"`},
		{"", "0", "", `lease quota "0": want a whole number of host-hours above 0, or none`},
		{"", "-5", "", `lease quota "-5"`},
		{"", "1.5", "", `lease quota "1.5"`},
		{"", "", "acme", `account lease quota "acme"`},
		{"", "", "=5", `account lease quota "=5"`},
		{"", "", "acme=lots", `account lease quota "acme=lots"`},
	}
	for _, tc := range tests {
		p, err := ParsePolicy(tc.maxLength, tc.quota, tc.accounts)
		got := fmt.Sprintf("%+v", p)
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("ParsePolicy(%q, %q, %q) = %s, want %s", tc.maxLength, tc.quota, tc.accounts, got, tc.want)
		}
	}
	if c := New(Config{}).cfg.Policy; c.MaxLength != 168*time.Hour || c.HostHours != 336 {
		t.Errorf("the zero policy became %+v, want DefaultConfig's", c)
	}
}
