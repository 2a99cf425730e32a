package sim

import (
	"fmt"
	"maps"
	"slices"

	"github.com/vmplane/vmplane/schemas"
	"github.com/vmplane/vmplane/schemas/actions"
	"github.com/vmplane/vmplane/schemas/settings"
)

// clients ask for anything, allowed or not, as API users and admins do
// through the gateway: deploys, every VM action, host administration and
// leases, sometimes twice with the same command id, as a client retrying
// a request whose answer it lost.
type clients struct {
	n        int
	vms      []string
	leases   []string
	sent     []schemas.Record
	removed  map[string]bool
	accounts []string
}

var offerings = []schemas.Offering{
	{ID: "off-small", Name: "small", CPU: 1, MemoryMB: 1024},
	{ID: "off-medium", Name: "medium", CPU: 2, MemoryMB: 4096},
	{ID: "off-large", Name: "large", CPU: 4, MemoryMB: 8192, HA: true},
}

func newClients(*world) *clients {
	return &clients{removed: map[string]bool{}, accounts: []string{"acct-a", "acct-b"}}
}

func (c *clients) id(kind string) string {
	c.n++
	return fmt.Sprintf("%s-%d", kind, c.n)
}

// act sends one request at random.
func (c *clients) act(w *world) {
	p := w.prof
	switch k := w.pick(p.repeat, p.deploy, p.action, p.admin, p.lease); {
	case k == 0 && len(c.sent) > 0:
		rec := c.sent[len(c.sent)-1-w.rng.IntN(min(len(c.sent), 5))]
		w.trace("client repeats %s %s", typeName{rec.Value}, rec.Key)
		w.produce(rec)
	case k <= 1 || len(c.vms) == 0:
		c.deploy(w)
	case k == 2 && w.rng.IntN(6) == 0:
		c.cancel(w)
	case k == 2:
		c.action(w)
	case k == 3:
		c.hostAdmin(w)
	default:
		c.lease(w)
	}
}

func (c *clients) send(w *world, r schemas.Record) {
	w.trace("client sends %s %s", schemas.TypeName(r.Value), r.Key)
	c.sent = append(c.sent, r)
	if len(c.sent) > 50 {
		c.sent = c.sent[25:]
	}
	w.produce(r)
}

func (c *clients) common(w *world, vmID string) schemas.VmCommand {
	id := c.id("cmd")
	acct := c.accounts[w.rng.IntN(len(c.accounts))]
	return schemas.VmCommand{CommandID: id, VmID: vmID, Account: acct, Origin: schemas.OriginAPI, IssuedAt: w.ms(),
		Caller: callerOf(acct, id)}
}

// callerOf is who a client's command names as its caller, as the gateway
// would: the account's key and a request id. It draws nothing from the
// world's random source, so a seed plays as it did before callers.
func callerOf(account, commandID string) schemas.Caller {
	return schemas.Caller{Account: account, KeyID: "k-" + account, RequestID: "req-" + commandID}
}

func (c *clients) deploy(w *world) {
	vmID := ""
	if len(c.vms) > 0 && w.rng.IntN(10) == 0 {
		vmID = c.vms[w.rng.IntN(len(c.vms))] // one that exists: refused
	} else {
		vmID = c.id("vm")
		c.vms = append(c.vms, vmID)
	}
	off := offerings[w.rng.IntN(len(offerings))]
	d := &schemas.Deploy{VmCommand: c.common(w, vmID), Name: vmID, ZoneID: "z1", Offering: off,
		HA: off.HA || w.prof.allHA || w.rng.IntN(3) == 0}
	if w.rng.IntN(4) == 0 {
		d.AffinityGroup = []string{"anti:web", "aff:db"}[w.rng.IntN(2)]
	}
	c.withStorage(w, d)
	c.send(w, schemas.Record{Topic: schemas.TopicVmCommands, Key: vmID, Value: d})
}

func (c *clients) action(w *world) {
	a := actions.Catalog[w.rng.IntN(len(actions.Catalog))]
	if names := w.prof.actions; len(names) > 0 {
		a, _ = actions.ByName(names[w.rng.IntN(len(names))])
	}
	vmID := c.vms[w.rng.IntN(len(c.vms))]
	if w.rng.IntN(20) == 0 {
		vmID = "vm-unknown"
	}
	args := map[string]any{}
	for _, p := range a.Params {
		switch p.Kind {
		case actions.KindBool:
			args[p.Name] = w.rng.IntN(2) == 0
		case actions.KindOffering:
			args[p.Name] = offerings[w.rng.IntN(len(offerings))]
		case actions.KindInt:
			// Sizes in GiB: some below a volume's size, some beyond a
			// pool's free space.
			args[p.Name] = []int64{0, 1, 4, 10, 40}[w.rng.IntN(5)]
		case actions.KindString:
			if p.Name == "host_id" {
				if w.rng.IntN(2) == 0 {
					args[p.Name] = w.hosts[w.rng.IntN(len(w.hosts))].ID
				}
			} else if p.Name == "volume_id" {
				if p.Required || w.rng.IntN(2) == 0 {
					args[p.Name] = c.volumeArg(w, vmID)
				}
			} else if p.Name == "snapshot_name" {
				// Few names, so that reverts and deletes find snapshots
				// and some takes find the name taken.
				args[p.Name] = []string{"snap-a", "snap-b"}[w.rng.IntN(2)]
			} else if p.Required || w.rng.IntN(2) == 0 {
				args[p.Name] = "img-1"
			}
		}
	}
	cmd, err := schemas.NewVmCommand(a, c.common(w, vmID), args)
	if err != nil {
		w.fail("client: %v", err)
		return
	}
	c.send(w, schemas.Record{Topic: schemas.TopicVmCommands, Key: vmID, Value: cmd})
}

// cancel asks to cancel a job, as a caller of POST /v1/jobs/{id}/cancel
// does: one a VM runs now (internal ones too: HA restarts, maintenance
// moves), or one the clients sent lately, which may be queued, ended or a
// terminate (the gateway refuses those it knows have ended; the others
// race it).
func (c *clients) cancel(w *world) {
	var vmID, jobID string
	if running := w.views.running; len(running) > 0 && (len(c.sent) == 0 || w.rng.IntN(2) == 0) {
		vms := slices.Sorted(maps.Keys(running))
		vmID = vms[w.rng.IntN(len(vms))]
		jobID = running[vmID]
	} else if len(c.sent) > 0 {
		rec := c.sent[len(c.sent)-1-w.rng.IntN(min(len(c.sent), 8))]
		cmd, ok := rec.Value.(schemas.VmCommandRecord)
		if !ok {
			return
		}
		vmID, jobID = rec.Key, cmd.Common().CommandID
	} else {
		return
	}
	acct := c.accounts[w.rng.IntN(len(c.accounts))]
	id := c.id("cancel")
	c.send(w, schemas.Record{Topic: schemas.TopicVmCommands, Key: vmID, Value: &schemas.CancelJob{CommandID: id,
		VmID: vmID, JobID: jobID, Account: acct, By: "key k-" + acct + " of account " + acct, IssuedAt: w.ms(), Caller: callerOf(acct, id)}})
}

func (c *clients) hostAdmin(w *world) {
	h := w.hosts[w.rng.IntN(len(w.hosts))].ID
	id := c.id("hcmd")
	hc := schemas.HostCommand{CommandID: id, HostID: h, Account: "admin", IssuedAt: w.ms(), Caller: callerOf("admin", id)}
	var v any
	switch w.rng.IntN(9) {
	case 0, 1:
		v = &schemas.EnableHost{HostCommand: hc}
	case 2:
		v = &schemas.DisableHost{HostCommand: hc}
	case 3, 4:
		v = &schemas.PrepareForMaintenance{HostCommand: hc}
	case 5, 6, 7:
		v = &schemas.CancelMaintenance{HostCommand: hc}
	default:
		if w.rng.IntN(4) != 0 {
			// Removing is rare: a removed host stays gone. An admin
			// changes a setting or a storage pool instead.
			if w.rng.IntN(2) == 0 {
				c.poolAdmin(w)
			} else {
				c.setting(w)
			}
			return
		}
		v = &schemas.RemoveHost{HostCommand: hc}
		c.removed[h] = true
	}
	c.send(w, schemas.Record{Topic: schemas.TopicHostCommands, Key: h, Value: v})
}

// simSettings are the settings an admin of the simulation changes, with
// values that keep the settle phase's bounds (a host's truth shows within
// six ping intervals, no job outlives the job timeout): "" sets the
// default again.
var simSettings = []struct {
	name   string
	values []string
}{
	{settings.PingTimeout, []string{"", "20s", "30s"}},
	{settings.AlertWait, []string{"", "30s", "90s"}},
	{settings.HAMaxRetries, []string{"", "2", "8"}},
	{settings.HABackoff, []string{"", "5s", "20s"}},
	{settings.DeploymentPlanner, []string{"", "UserDispersingPlanner", "BinpackPlanner", "SpreadPlanner"}},
}

// setting changes one setting globally, as PUT /v1/settings/{name} does.
func (c *clients) setting(w *world) {
	s := simSettings[w.rng.IntN(len(simSettings))]
	v := s.values[w.rng.IntN(len(s.values))]
	c.send(w, schemas.Record{Topic: schemas.TopicSettings, Key: settings.Key(settings.Global, "", s.name),
		Value: &schemas.SettingChanged{Name: s.name, Scope: settings.Global, Value: v, By: "admin", At: w.ms()}})
}

func (c *clients) lease(w *world) {
	project := c.accounts[w.rng.IntN(len(c.accounts))]
	switch r := w.rng.IntN(10); {
	case r < 6 || len(c.leases) == 0:
		id := c.id("lease")
		c.leases = append(c.leases, id)
		start := w.ms() + int64(w.rng.IntN(120_000))
		spec := schemas.ReservationSpec{MinHosts: 1, MaxHosts: int32(1 + w.rng.IntN(2)), HostProperties: map[string]string{}}
		if w.rng.IntN(2) == 0 {
			spec.HostProperties["gpu"] = "yes"
		}
		c.send(w, schemas.Record{Topic: schemas.TopicLeaseCommands, Key: "z1", Value: &schemas.CreateLease{
			CommandID: c.id("lcmd"), LeaseID: id, ZoneID: "z1", Project: project, Name: id, Start: start,
			End: start + int64(60_000+w.rng.IntN(600_000)), Reservations: []schemas.ReservationSpec{spec}, IssuedAt: w.ms()}})
	case r < 8:
		id := c.leases[w.rng.IntN(len(c.leases))]
		c.send(w, schemas.Record{Topic: schemas.TopicLeaseCommands, Key: "z1", Value: &schemas.UpdateLease{
			CommandID: c.id("lcmd"), LeaseID: id, ZoneID: "z1", Project: project, End: w.ms() + int64(w.rng.IntN(600_000)),
			Reservations: []schemas.ReservationSpec{}, IssuedAt: w.ms()}})
	default:
		id := c.leases[w.rng.IntN(len(c.leases))]
		c.send(w, schemas.Record{Topic: schemas.TopicLeaseCommands, Key: "z1", Value: &schemas.DeleteLease{
			CommandID: c.id("lcmd"), LeaseID: id, ZoneID: "z1", Project: project, IssuedAt: w.ms()}})
	}
}
