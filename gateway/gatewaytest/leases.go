package gatewaytest

import (
	"context"

	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/readmodel"
)

var _ gateway.LeaseReader = (*ReadModel)(nil)

// PutLease stores a lease.
func (m *ReadModel) PutLease(l readmodel.Lease) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.leases == nil {
		m.leases = map[string]readmodel.Lease{}
	}
	m.leases[l.ID] = l
}

// Lease returns the lease id, or readmodel.ErrNotFound.
func (m *ReadModel) Lease(_ context.Context, id string) (readmodel.Lease, error) {
	if err := TextError(id); err != nil {
		return readmodel.Lease{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.leases[id]
	if !ok {
		return readmodel.Lease{}, readmodel.ErrNotFound
	}
	return l, nil
}

// Leases lists a page of a project's leases (every project's for ""), by id.
func (m *ReadModel) Leases(_ context.Context, project string, p readmodel.Page) ([]readmodel.Lease, error) {
	if err := TextError(project, p.After); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return page(m.leases, p, func(l readmodel.Lease) bool { return project == "" || l.Project == project }), nil
}

// LeaseEvents has no events: tests of lease notifications use Postgres.
func (m *ReadModel) LeaseEvents(_ context.Context, id string, p readmodel.Page) ([]readmodel.LeaseEvent, error) {
	if err := TextError(id, p.After); err != nil {
		return nil, err
	}
	return []readmodel.LeaseEvent{}, nil
}
