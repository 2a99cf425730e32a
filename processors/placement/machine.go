package placement

import (
	"sort"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// Machine is the placement state machine. It satisfies the runtime's
// Machine[*schemas.ZoneRecord] without importing it.
type Machine struct {
	cfg      Config
	planners map[string]Planner
}

// New returns a placement machine with the built-in planners.
func New(cfg Config) *Machine {
	m := &Machine{cfg: cfg.withDefaults(), planners: map[string]Planner{}}
	for _, p := range []Planner{FirstFit{}} {
		m.planners[p.Name()] = p
	}
	return m
}

// Planners lists the names of the planners this machine knows, sorted.
func (m *Machine) Planners() []string {
	names := make([]string, 0, len(m.planners))
	for n := range m.planners {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Step applies one record of placement.requests.v1 to the zone in.Key.
// Values are the pointers schemas.Unmarshal returns. Records of types this
// machine does not act on leave the state as it is.
func (m *Machine) Step(s *schemas.ZoneRecord, in schemas.Record, now time.Time) (*schemas.ZoneRecord, []schemas.Record) {
	var z *schemas.ZoneRecord
	if s == nil {
		z = &schemas.ZoneRecord{ZoneID: in.Key}
	} else {
		z = clone(s)
	}
	hdr := carried(in)
	switch v := in.Value.(type) {
	case *schemas.HostStatus:
		m.applyHostStatus(z, v)
		return z, nil
	case *schemas.PlaceVm:
		return z, m.place(z, v, now, hdr)
	case *schemas.ReleaseVm:
		return z, m.releaseVm(z, v, now, hdr)
	case *schemas.ResizeVm:
		// Resizing in place needs the VM's old claim and the new offering to
		// be weighed together; until that is built the VM is told plainly.
		return s, []schemas.Record{signal(v.VmID, &schemas.PlacementFailed{
			VmID: v.VmID, RequestID: v.RequestID, Epoch: v.Epoch, Reason: ReasonUnsupported,
		}, hdr)}
	case *schemas.LeaseStatusChanged:
		// Lease dedications (HostCapacity.LeaseProject) come with the lease
		// processor; until then leases do not restrict placement.
		return s, nil
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
	z := clone(s)
	out := m.releaseReservations(z, now)
	if len(out) == 0 {
		return s, nil
	}
	return z, out
}

// Wake returns when the next host reservation is due for release.
func (m *Machine) Wake(s *schemas.ZoneRecord) time.Time {
	var next time.Time
	if s == nil {
		return next
	}
	for _, h := range s.Hosts {
		if due, ok := m.releaseDue(h); ok && (next.IsZero() || due.Before(next)) {
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
