package placement

import (
	"time"

	"github.com/vmplane/vmplane/schemas"
	"github.com/vmplane/vmplane/schemas/settings"
)

// Machine is the placement state machine. It satisfies the runtime's
// Machine[*schemas.ZoneRecord] without importing it.
//
// Unlike the VM and host machines, Step and Tick change the zone they are
// given and return it: a zone of 10,000 hosts is megabytes, and copying it
// per decision would cost more than the decision. This is safe with the
// runtime, which never steps a state again after a failed transaction but
// restores it from the changelog. A Machine is driven by one goroutine.
type Machine struct {
	cfg Config
	// settings are the operator's, over cfg, by zone and cluster.
	settings settings.Values
	planners map[string]Planner
	// indexes are derived from the zones (see zoneIndex), by zone id.
	indexes map[string]*zoneIndex
}

// Forget lets go of the index of zone key, whose state the runtime drops
// (engine.Forgetter): a zone moved to another instance, or restored anew.
func (m *Machine) Forget(key string) { delete(m.indexes, key) }

// New returns a placement machine with the built-in planners.
func New(cfg Config) *Machine {
	m := &Machine{cfg: cfg.withDefaults(), planners: map[string]Planner{}, indexes: map[string]*zoneIndex{}}
	for _, p := range builtins() {
		m.planners[p.Name()] = p
	}
	return m
}

// Configure applies an operator setting (docs/design.md §13): a new
// planner decides the next request, a new release period holds from the
// zone's next step, a new over-commit ratio reaches a host with its next
// status.
func (m *Machine) Configure(c *schemas.SettingChanged) error {
	return m.settings.Apply(c.Name, c.Scope, c.ScopeID, c.Value)
}

// Planners lists the planners this machine knows, in the order of
// schemas.Planners (the API's listDeploymentPlanners).
func (m *Machine) Planners() []schemas.PlannerSpec {
	var out []schemas.PlannerSpec
	for _, s := range schemas.Planners {
		if p, ok := m.planners[s.Name]; ok {
			s.ResourceUsage = p.ResourceUsage()
			out = append(out, s)
		}
	}
	return out
}

// Step applies one record of placement.requests.v1 to the zone in.Key.
// Values are the pointers schemas.Unmarshal returns. Records of types this
// machine does not act on leave the state as it is.
func (m *Machine) Step(s *schemas.ZoneRecord, in schemas.Record, now time.Time) (*schemas.ZoneRecord, []schemas.Record) {
	z := s
	if z == nil {
		z = &schemas.ZoneRecord{ZoneID: in.Key}
	}
	hdr := carried(in)
	switch v := in.Value.(type) {
	case *schemas.HostStatus:
		m.applyHostStatus(z, v)
		return z, nil
	case *schemas.PlaceVm:
		if v.Adopt && v.HostID != "" {
			return z, m.adopt(z, v, now, hdr)
		}
		if v.VolumesOnly {
			return z, m.placeVolumes(z, v, now, hdr)
		}
		return z, m.place(z, v, now, hdr)
	case *schemas.ReleaseVm:
		return z, m.releaseVm(z, v, now, hdr)
	case *schemas.ResizeVm:
		return z, m.resize(z, v, now, hdr)
	case *schemas.UpdateStoragePool:
		return z, m.updateStoragePool(z, v, now, hdr)
	case *schemas.UpdateNetwork:
		return z, m.updateNetwork(z, v, now, hdr)
	case *schemas.LeaseStatusChanged:
		m.applyLease(z, v)
		return z, nil
	default:
		return s, nil
	}
}

// Tick releases the reservations of hosts that have been empty for the
// release period.
func (m *Machine) Tick(s *schemas.ZoneRecord, _ string, now time.Time) (*schemas.ZoneRecord, []schemas.Record) {
	if s == nil {
		return nil, nil
	}
	return s, m.releaseReservations(s, now)
}

// Wake returns when the next host reservation is due for release.
func (m *Machine) Wake(s *schemas.ZoneRecord) time.Time {
	var next time.Time
	if s == nil {
		return next
	}
	ix := m.index(s)
	for id := range ix.releasable {
		if due, ok := m.releaseDue(s.ZoneID, &s.Hosts[ix.host[id]]); ok && (next.IsZero() || due.Before(next)) {
			next = due
		}
	}
	return next
}

// carried returns the headers an output inherits from its input: the trace
// context, so one request can be followed across processors.
func carried(in schemas.Record) map[string]string {
	if tp, ok := in.Headers["traceparent"]; ok {
		return map[string]string{"traceparent": tp}
	}
	return nil
}

func signal(vmID string, v any, hdr map[string]string) schemas.Record {
	return schemas.Record{Topic: schemas.TopicVmSignals, Key: vmID, Value: v, Headers: hdr}
}

func event(zoneID string, v any, hdr map[string]string) schemas.Record {
	return schemas.Record{Topic: schemas.TopicPlacementEvents, Key: zoneID, Value: v, Headers: hdr}
}
