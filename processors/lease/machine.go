package lease

import (
	"cmp"
	"slices"
	"time"

	"github.com/vmplane/vmplane/schemas"
	"github.com/vmplane/vmplane/schemas/settings"
)

// Machine is the lease state machine. It satisfies the runtime's
// Machine[*schemas.LeaseZoneRecord] without importing it.
//
// Like placement, Step and Tick change the zone they are given and return
// it: a zone's calendar is one record, and copying it per input would cost
// more than the decision. The runtime never steps a state again after a
// failed transaction but restores it from the changelog. Outputs never
// share memory with the state (see snapshot). A Machine is driven by one
// goroutine.
type Machine struct {
	cfg Config
	// settings are the operator's, over cfg, by zone.
	settings settings.Values
	// indexes find each zone's hosts and VMs by id and mark what changed
	// for the changelog (parts.go), by zone id.
	indexes map[string]*zoneIndex
}

// New returns a lease machine; zero durations take their defaults. Start
// from DefaultConfig: it turns both kinds of monitoring on.
func New(cfg Config) *Machine { return &Machine{cfg: cfg.withDefaults()} }

// Forget lets go of the index of zone key, whose state the runtime drops
// (engine.Forgetter): a zone moved to another instance, or restored anew.
func (m *Machine) Forget(key string) { delete(m.indexes, key) }

// Configure applies an operator setting (docs/design.md §13) from the
// zone's next step: a poll already scheduled keeps its time.
func (m *Machine) Configure(c *schemas.SettingChanged) error {
	return m.settings.Apply(c.Name, c.Scope, c.ScopeID, c.Value)
}

// monitor returns how a zone's hosts are watched: lease.monitor.type and
// lease.monitor.poll.interval of the zone, else of Config.
func (m *Machine) monitor(zone string) Monitor {
	mo := m.cfg.monitor(zone)
	switch m.settings.String(settings.LeaseMonitorType, zone, "", "") {
	case settings.MonitorPush:
		mo.Push, mo.Poll = true, false
	case settings.MonitorPoll:
		mo.Push, mo.Poll = false, true
	case settings.MonitorBoth:
		mo.Push, mo.Poll = true, true
	}
	mo.PollInterval = m.settings.Duration(settings.LeaseMonitorPoll, zone, "", mo.PollInterval)
	return mo
}

// healingWindow is healing.window.
func (m *Machine) healingWindow() time.Duration {
	return m.settings.Duration(settings.HealingWindow, "", "", m.cfg.HealingWindow)
}

// tx is one Step or Tick over a zone: the outputs it has made so far.
type tx struct {
	m   *Machine
	z   *schemas.LeaseZoneRecord
	ix  *zoneIndex // z's
	now int64
	hdr map[string]string
	out []schemas.Record
}

func (m *Machine) tx(z *schemas.LeaseZoneRecord, now time.Time, hdr map[string]string) *tx {
	return &tx{m: m, z: z, ix: m.index(z), now: now.UnixMilli(), hdr: hdr}
}

// Step applies one record of lease.commands.v1 or placement.events.v1 to
// the zone in.Key. Values are the pointers schemas.Unmarshal returns;
// records of other types leave the state as it is.
func (m *Machine) Step(s *schemas.LeaseZoneRecord, in schemas.Record, now time.Time) (*schemas.LeaseZoneRecord, []schemas.Record) {
	switch in.Value.(type) {
	case *schemas.CreateLease, *schemas.UpdateLease, *schemas.DeleteLease, *schemas.HostStatus,
		*schemas.CapacityAllocated, *schemas.CapacityReleased:
	default:
		return s, nil
	}
	z := s
	if z == nil {
		z = &schemas.LeaseZoneRecord{ZoneID: in.Key}
	}
	t := m.tx(z, now, carried(in))
	pollAt := z.PollAt
	switch v := in.Value.(type) {
	case *schemas.CreateLease:
		t.ix.header = true // the command ids handled, the leases
		if t.fresh(v.CommandID) {
			t.create(v)
		}
	case *schemas.UpdateLease:
		t.ix.header = true
		if t.fresh(v.CommandID) {
			t.update(v)
		}
	case *schemas.DeleteLease:
		t.ix.header = true
		if t.fresh(v.CommandID) {
			t.delete(v)
		}
	case *schemas.HostStatus:
		t.hostStatus(v)
	case *schemas.CapacityAllocated:
		t.allocated(v)
	case *schemas.CapacityReleased:
		t.released(v)
	}
	t.schedulePoll()
	if z.PollAt != pollAt {
		t.ix.header = true
	}
	return z, t.out
}

// Tick runs the zone's due timers: lease ends, stop deadlines, lease starts
// (ends first, so a host handed from one lease to the next is freed before
// it is taken), the periodic reconcile and the retention of ended leases.
func (m *Machine) Tick(s *schemas.LeaseZoneRecord, _ string, now time.Time) (*schemas.LeaseZoneRecord, []schemas.Record) {
	if s == nil {
		return nil, nil
	}
	t := m.tx(s, now, nil)
	t.ix.header = true // leases start, end and expire; the next poll
	t.runEnds()
	for _, l := range t.sorted(func(l *schemas.LeaseRecord) int64 { return l.Start }) {
		if l.Status == Pending && l.Start <= t.now {
			t.start(l)
		}
	}
	// A lease that started and ended while the processor was away ends now.
	t.runEnds()
	if mo := m.monitor(s.ZoneID); mo.Poll && s.PollAt > 0 && s.PollAt <= t.now {
		t.reconcile()
		s.PollAt = 0
	}
	t.schedulePoll()
	s.Leases = slices.DeleteFunc(s.Leases, func(l schemas.LeaseRecord) bool {
		return terminal(l.Status) && l.DoneAt+m.cfg.Retention.Milliseconds() <= t.now
	})
	return s, t.out
}

func (t *tx) runEnds() {
	for _, l := range t.sorted(func(l *schemas.LeaseRecord) int64 { return l.End }) {
		switch {
		case l.Status == Active && l.End <= t.now:
			t.end(l)
		case (l.Status == Terminating || l.Status == Deleting) && l.StopDeadline > 0 && l.StopDeadline <= t.now:
			t.finish(l, "VMs did not stop in time: "+joinIDs(l.StopWait))
		}
	}
}

// Wake returns the zone's next timer: a start, an end, a stop deadline, the
// reconcile or a retention expiry.
func (m *Machine) Wake(s *schemas.LeaseZoneRecord) time.Time {
	if s == nil {
		return time.Time{}
	}
	var next int64
	at := func(ms int64) {
		if ms > 0 && (next == 0 || ms < next) {
			next = ms
		}
	}
	at(s.PollAt)
	for i := range s.Leases {
		l := &s.Leases[i]
		switch {
		case l.Status == Pending:
			at(max(l.Start, 1))
		case l.Status == Active:
			at(max(l.End, 1))
		case l.Status == Terminating || l.Status == Deleting:
			at(l.StopDeadline)
		case terminal(l.Status):
			at(l.DoneAt + m.cfg.Retention.Milliseconds())
		}
	}
	if next == 0 {
		return time.Time{}
	}
	return time.UnixMilli(next)
}

// schedulePoll arms the periodic reconcile when polling is on.
func (t *tx) schedulePoll() {
	mo := t.m.monitor(t.z.ZoneID)
	switch {
	case !mo.Poll:
		t.z.PollAt = 0
	case t.z.PollAt == 0:
		t.z.PollAt = t.now + mo.PollInterval.Milliseconds()
	}
}

// fresh records a command id and says whether it is new.
func (t *tx) fresh(id string) bool {
	if id == "" {
		return true
	}
	if slices.Contains(t.z.Handled, id) {
		return false
	}
	t.z.Handled = append(t.z.Handled, id)
	if n := len(t.z.Handled) - t.m.cfg.Dedup; n > 0 {
		t.z.Handled = slices.Delete(t.z.Handled, 0, n)
	}
	return true
}

func (t *tx) lease(id string) *schemas.LeaseRecord {
	for i := range t.z.Leases {
		if t.z.Leases[i].LeaseID == id {
			return &t.z.Leases[i]
		}
	}
	return nil
}

func (t *tx) host(id string) *schemas.LeaseHost { return t.ix.host(id) }

// reservable says the status table has the host reservable; a host it does
// not know is not.
func (t *tx) reservable(id string) bool {
	h := t.host(id)
	return h != nil && h.Reservable
}

// sorted returns pointers to the zone's leases ordered by key, then id, so
// timers fire in a fixed order. The pointers stay valid while no lease is
// added or removed.
func (t *tx) sorted(key func(*schemas.LeaseRecord) int64) []*schemas.LeaseRecord {
	out := make([]*schemas.LeaseRecord, len(t.z.Leases))
	for i := range t.z.Leases {
		out[i] = &t.z.Leases[i]
	}
	slices.SortFunc(out, func(a, b *schemas.LeaseRecord) int {
		return cmp.Or(cmp.Compare(key(a), key(b)), cmp.Compare(a.LeaseID, b.LeaseID))
	})
	return out
}

func (t *tx) emit(topic, key string, v any) {
	t.out = append(t.out, schemas.Record{Topic: topic, Key: key, Value: v, Headers: t.hdr})
}

// carried returns the headers an output inherits from its input: the trace
// context, so one request can be followed across processors.
func carried(in schemas.Record) map[string]string {
	if tp, ok := in.Headers["traceparent"]; ok {
		return map[string]string{"traceparent": tp}
	}
	return nil
}
