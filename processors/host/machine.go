package host

import (
	"time"

	"github.com/vmplane/vmplane/schemas"
	"github.com/vmplane/vmplane/schemas/settings"
)

// Machine is the host state machine. It satisfies the runtime's
// Machine[*schemas.HostRecord] without importing it.
type Machine struct {
	// base is the Config the machine was made with; cfg is base with the
	// operator settings over it.
	base     Config
	cfg      Config
	settings settings.Values
	// current says whether, at the last input, the newest input read had
	// been written within TickSlack; false until one is (lag.go).
	current bool
	// newest is the newest Kafka timestamp of an input read, Unix ms.
	newest int64
}

// New returns a host machine; zero settings take their defaults.
func New(cfg Config) *Machine {
	return &Machine{base: cfg, cfg: cfg.withDefaults()}
}

// Configure applies an operator setting (docs/design.md §13). A deadline
// already set stays: a new ping.timeout holds each host from its next
// ping, a new alert.wait from the next investigation.
func (m *Machine) Configure(c *schemas.SettingChanged) error {
	if err := m.settings.Apply(c.Name, c.Scope, c.ScopeID, c.Value); err != nil {
		return err
	}
	m.cfg = m.base.with(&m.settings).withDefaults()
	return nil
}

// Step applies one record of host.events.v1 or host.commands.v1 to the host
// in.Key. Values are the pointers schemas.Unmarshal returns; records of other
// types leave the state as it is.
func (m *Machine) Step(s *schemas.HostRecord, in schemas.Record, now time.Time) (*schemas.HostRecord, []schemas.Record) {
	m.observe(in, now)
	hdr := carried(in)
	switch v := in.Value.(type) {
	case *schemas.AgentConnected:
		return m.connected(s, v, in, now, hdr)
	case *schemas.AgentPing:
		return m.ping(s, v, now, hdr)
	case *schemas.AgentDisconnected:
		return m.disconnected(s, v, now, hdr)
	case *schemas.CheckHostAnswer:
		return m.answer(s, v, now, hdr)
	case *schemas.MaintenanceMigrationEnded:
		return m.migrationEnded(s, v, now, hdr)
	case *schemas.EnableHost:
		return m.admin(s, now, hdr, func(r *schemas.HostRecord) { m.enable(r) })
	case *schemas.DisableHost:
		return m.admin(s, now, hdr, func(r *schemas.HostRecord) { m.disable(r) })
	case *schemas.RemoveHost:
		return m.removeHost(s, v, now, hdr)
	case *schemas.PrepareForMaintenance:
		return m.prepare(s, v, now, hdr)
	case *schemas.CancelMaintenance:
		return m.cancelMaintenance(s, v, now, hdr)
	case *schemas.AddHost:
		return m.add(s, v, now, hdr)
	case *schemas.UnmanageHost:
		return m.admin(s, now, hdr, func(r *schemas.HostRecord) { m.unmanage(r) })
	case *schemas.ManageHost:
		return m.admin(s, now, hdr, func(r *schemas.HostRecord) { m.manage(r, now) })
	default:
		return s, nil
	}
}

// Tick runs the host's one due timer: an investigator's deadline, the alert
// deadline of an inconclusive investigation, or the ping deadline.
func (m *Machine) Tick(s *schemas.HostRecord, _ string, now time.Time) (*schemas.HostRecord, []schemas.Record) {
	switch {
	case s == nil:
		return nil, nil
	case s.Investigation != "":
		return m.stepTimeout(s, now)
	case s.AlertAt != 0 && !now.Before(time.UnixMilli(s.AlertAt)):
		return m.alert(s, now)
	default:
		return m.pingTimeout(s, now)
	}
}

// Wake returns when the host next needs a Tick: the deadline of the
// investigator in progress, else the earlier of the alert deadline of a
// host no round found Down and when a missed ping is next to be looked at.
func (m *Machine) Wake(s *schemas.HostRecord) time.Time {
	switch {
	case s == nil:
		return time.Time{}
	case s.Investigation != "":
		return time.UnixMilli(s.StepDeadline)
	case s.AlertAt != 0 && s.PingDeadline != 0:
		return time.UnixMilli(min(s.AlertAt, max(s.PingDeadline, s.GraceUntil)))
	case s.AlertAt != 0:
		return time.UnixMilli(s.AlertAt)
	}
	return pingWake(s)
}

// pingWake is when a missed ping is next to be looked at: the ping
// deadline, or the end of the restart grace if that is later.
func pingWake(s *schemas.HostRecord) time.Time {
	if s.PingDeadline == 0 {
		return time.Time{}
	}
	return time.UnixMilli(max(s.PingDeadline, s.GraceUntil))
}

// carried returns the headers an output inherits from its input: the trace
// context, so one request can be followed across processors.
func carried(in schemas.Record) map[string]string {
	if tp, ok := in.Headers["traceparent"]; ok {
		return map[string]string{"traceparent": tp}
	}
	return nil
}
