package gatewaytest

import (
	"context"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/readmodel"
)

// ReadModel is an in-memory gateway.ReadModel. Tests fill it with the Put
// methods, playing the projector. Like Postgres, it refuses text holding a
// NUL or bytes that are not UTF-8 (TextError).
type ReadModel struct {
	mu        sync.Mutex
	vms       map[string]readmodel.VM
	jobs      map[string]readmodel.Job
	steps     map[string][]readmodel.JobStep
	hosts     map[string]readmodel.Host
	offerings map[string]readmodel.Offering
	keys      map[string]readmodel.APIKey
	alerts    map[string]readmodel.Alert
	accounts  map[string]readmodel.Account
	leases    map[string]readmodel.Lease
	settings  map[[3]string]readmodel.Setting
	snapshots map[string][]readmodel.Snapshot
	// next is the projector's position in vm.events.v1 (Advance).
	next     map[int32]int64
	storage  *storage
	readyErr error
	keyReads int
}

var _ gateway.ReadModel = (*ReadModel)(nil)

// NewReadModel returns an empty read model.
func NewReadModel() *ReadModel {
	return &ReadModel{
		vms: map[string]readmodel.VM{}, jobs: map[string]readmodel.Job{}, steps: map[string][]readmodel.JobStep{},
		hosts: map[string]readmodel.Host{}, offerings: map[string]readmodel.Offering{}, keys: map[string]readmodel.APIKey{},
	}
}

// PutVM stores a VM.
func (m *ReadModel) PutVM(v readmodel.VM) { m.mu.Lock(); m.vms[v.ID] = v; m.mu.Unlock() }

// PutJob stores a job.
func (m *ReadModel) PutJob(j readmodel.Job) { m.mu.Lock(); m.jobs[j.ID] = j; m.mu.Unlock() }

// AddStep adds a step to its job's steps.
func (m *ReadModel) AddStep(s readmodel.JobStep) {
	m.mu.Lock()
	m.steps[s.JobID] = append(m.steps[s.JobID], s)
	m.mu.Unlock()
}

// PutHost stores a host.
func (m *ReadModel) PutHost(h readmodel.Host) { m.mu.Lock(); m.hosts[h.ID] = h; m.mu.Unlock() }

// PutOffering stores an offering.
func (m *ReadModel) PutOffering(o readmodel.Offering) {
	m.mu.Lock()
	m.offerings[o.ID] = o
	m.mu.Unlock()
}

// PutAPIKey stores an API key.
func (m *ReadModel) PutAPIKey(k readmodel.APIKey) { m.mu.Lock(); m.keys[k.KeyID] = k; m.mu.Unlock() }

// SetReady makes Ready answer err.
func (m *ReadModel) SetReady(err error) { m.mu.Lock(); m.readyErr = err; m.mu.Unlock() }

// VM returns the VM id, or readmodel.ErrNotFound.
func (m *ReadModel) VM(_ context.Context, id string) (readmodel.VM, error) {
	if err := TextError(id); err != nil {
		return readmodel.VM{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.vms[id]
	if !ok {
		return readmodel.VM{}, readmodel.ErrNotFound
	}
	return v, nil
}

// FilterVMs narrows VMs by account, state and host.
func (m *ReadModel) FilterVMs(_ context.Context, f readmodel.VMFilter, p readmodel.Page) ([]readmodel.VM, error) {
	if err := TextError(f.Account, f.VmState, f.HostID, p.After); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return page(m.vms, p, func(v readmodel.VM) bool {
		return (f.Account == "" || v.Account == f.Account) && (f.VmState == "" || v.VmState == f.VmState) && (f.HostID == "" || v.HostID == f.HostID)
	}), nil
}

// PutAlert stores an alert.
func (m *ReadModel) PutAlert(a readmodel.Alert) {
	m.mu.Lock()
	if m.alerts == nil {
		m.alerts = map[string]readmodel.Alert{}
	}
	m.alerts[a.ID] = a
	m.mu.Unlock()
}

// Alerts lists alerts narrowed by f.
func (m *ReadModel) Alerts(_ context.Context, f readmodel.AlertFilter, p readmodel.Page) ([]readmodel.Alert, error) {
	if err := TextError(f.Account, f.VmID, f.HostID, f.ZoneID, f.Kind, p.After); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return page(m.alerts, p, func(a readmodel.Alert) bool {
		return (f.Account == "" || a.Account == f.Account) && (f.VmID == "" || a.VmID == f.VmID) &&
			(f.HostID == "" || a.HostID == f.HostID) && (f.ZoneID == "" || a.ZoneID == f.ZoneID) &&
			(f.Kind == "" || a.Kind == f.Kind) && (f.Acked == nil || *f.Acked == (a.AckedAt != nil))
	}), nil
}

// Alert returns the alert id, or readmodel.ErrNotFound.
func (m *ReadModel) Alert(_ context.Context, id string) (readmodel.Alert, error) {
	if err := TextError(id); err != nil {
		return readmodel.Alert{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.alerts[id]
	if !ok {
		return readmodel.Alert{}, readmodel.ErrNotFound
	}
	return a, nil
}

// Job returns the job id, or readmodel.ErrNotFound.
func (m *ReadModel) Job(_ context.Context, id string) (readmodel.Job, error) {
	if err := TextError(id); err != nil {
		return readmodel.Job{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.jobs[id]
	if !ok {
		return readmodel.Job{}, readmodel.ErrNotFound
	}
	return j, nil
}

// JobsByID returns the jobs of ids it has, by id.
func (m *ReadModel) JobsByID(_ context.Context, ids []string) ([]readmodel.Job, error) {
	if err := TextError(ids...); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []readmodel.Job
	for _, id := range ids {
		if j, ok := m.jobs[id]; ok {
			out = append(out, j)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// JobSteps returns a job's steps in their order.
func (m *ReadModel) JobSteps(_ context.Context, jobID string) ([]readmodel.JobStep, error) {
	if err := TextError(jobID); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := slices.Clone(m.steps[jobID])
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out, nil
}

// Jobs lists a page of jobs, narrowed by account, VM and state.
func (m *ReadModel) Jobs(_ context.Context, f readmodel.JobFilter, p readmodel.Page) ([]readmodel.Job, error) {
	if err := TextError(f.Account, f.VmID, f.State, f.KeyID, p.After); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return page(m.jobs, p, func(j readmodel.Job) bool {
		return (f.Account == "" || j.Account == f.Account) && (f.VmID == "" || j.VmID == f.VmID) &&
			(f.State == "" || j.State == f.State) && (f.KeyID == "" || j.CallerKeyID == f.KeyID)
	}), nil
}

// Advance moves the projector's next offset of a partition of
// vm.events.v1 to next (never back), as its commit of the rows of the
// events before it does: a test that plays the projector puts the rows,
// then advances.
func (m *ReadModel) Advance(partition int32, next int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.next == nil {
		m.next = map[int32]int64{}
	}
	m.next[partition] = max(m.next[partition], next)
}

// JobSnapshot returns a job (nil when unknown), its steps and the position
// Advance set, read together.
func (m *ReadModel) JobSnapshot(_ context.Context, id string) (readmodel.JobSnapshot, error) {
	if err := TextError(id); err != nil {
		return readmodel.JobSnapshot{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	snap := readmodel.JobSnapshot{Steps: slices.Clone(m.steps[id]), Next: maps.Clone(m.next)}
	if j, ok := m.jobs[id]; ok {
		snap.Job = &j
	}
	if snap.Next == nil {
		snap.Next = map[int32]int64{}
	}
	sort.Slice(snap.Steps, func(i, j int) bool { return snap.Steps[i].Seq < snap.Steps[j].Seq })
	return snap, nil
}

// EventsPosition returns the position Advance set.
func (m *ReadModel) EventsPosition(context.Context) (map[int32]int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	next := maps.Clone(m.next)
	if next == nil {
		next = map[int32]int64{}
	}
	return next, nil
}

// Host returns the host id, or readmodel.ErrNotFound.
func (m *ReadModel) Host(_ context.Context, id string) (readmodel.Host, error) {
	if err := TextError(id); err != nil {
		return readmodel.Host{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.hosts[id]
	if !ok {
		return readmodel.Host{}, readmodel.ErrNotFound
	}
	return h, nil
}

// Hosts lists a page of the hosts, by id.
func (m *ReadModel) Hosts(_ context.Context, p readmodel.Page) ([]readmodel.Host, error) {
	if err := TextError(p.After); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return page(m.hosts, p, func(readmodel.Host) bool { return true }), nil
}

// Offering returns the offering of that id or name, or readmodel.ErrNotFound.
func (m *ReadModel) Offering(_ context.Context, idOrName string) (readmodel.Offering, error) {
	if err := TextError(idOrName); err != nil {
		return readmodel.Offering{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if o, ok := m.offerings[idOrName]; ok {
		return o, nil
	}
	for _, o := range m.offerings {
		if o.Name == idOrName {
			return o, nil
		}
	}
	return readmodel.Offering{}, readmodel.ErrNotFound
}

// Offerings lists every offering, by id.
func (m *ReadModel) Offerings(context.Context) ([]readmodel.Offering, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return page(m.offerings, readmodel.Page{}, func(readmodel.Offering) bool { return true }), nil
}

// OfferingVMs counts the stored VMs whose offering has that id.
func (m *ReadModel) OfferingVMs(_ context.Context, offeringID string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, v := range m.vms {
		if v.OfferingID == offeringID {
			n++
		}
	}
	return n, nil
}

// PutSnapshot stores a VM's snapshot after those stored before.
func (m *ReadModel) PutSnapshot(s readmodel.Snapshot) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.snapshots == nil {
		m.snapshots = map[string][]readmodel.Snapshot{}
	}
	m.snapshots[s.VmID] = append(m.snapshots[s.VmID], s)
}

// Snapshots lists a VM's snapshots in the order they were stored.
func (m *ReadModel) Snapshots(_ context.Context, vmID string) ([]readmodel.Snapshot, error) {
	if err := TextError(vmID); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]readmodel.Snapshot{}, m.snapshots[vmID]...), nil
}

// KeyReads says how many times APIKey was called.
func (m *ReadModel) KeyReads() int { m.mu.Lock(); defer m.mu.Unlock(); return m.keyReads }

// APIKey returns the key keyID, or readmodel.ErrNotFound, and counts the read.
func (m *ReadModel) APIKey(_ context.Context, keyID string) (readmodel.APIKey, error) {
	if err := TextError(keyID); err != nil {
		return readmodel.APIKey{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.keyReads++
	k, ok := m.keys[keyID]
	if !ok {
		return readmodel.APIKey{}, readmodel.ErrNotFound
	}
	return k, nil
}

// Ready answers what SetReady set.
func (m *ReadModel) Ready(context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.readyErr
}

// page returns the rows of rows that keep accepts, ordered by id, after the
// cursor, at most p.Limit of them (all when Limit is 0).
func page[T any](rows map[string]T, p readmodel.Page, keep func(T) bool) []T {
	ids := make([]string, 0, len(rows))
	for id, r := range rows {
		if keep(r) && strings.Compare(id, p.After) > 0 {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	if p.Limit > 0 && len(ids) > p.Limit {
		ids = ids[:p.Limit]
	}
	out := make([]T, len(ids))
	for i, id := range ids {
		out[i] = rows[id]
	}
	return out
}
