package gatewaytest

import (
	"context"

	"github.com/vmplane/vmplane/projectors/postgres"
)

var _ postgres.LeaseReader = (*ReadModel)(nil)

// PutLease stores a lease.
func (m *ReadModel) PutLease(l postgres.Lease) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.leases == nil {
		m.leases = map[string]postgres.Lease{}
	}
	m.leases[l.ID] = l
}

func (m *ReadModel) Lease(_ context.Context, id string) (postgres.Lease, error) {
	if err := TextError(id); err != nil {
		return postgres.Lease{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.leases[id]
	if !ok {
		return postgres.Lease{}, postgres.ErrNotFound
	}
	return l, nil
}

func (m *ReadModel) Leases(_ context.Context, project string, p postgres.Page) ([]postgres.Lease, error) {
	if err := TextError(project, p.After); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return page(m.leases, p, func(l postgres.Lease) bool { return project == "" || l.Project == project }), nil
}

// LeaseEvents has no events: tests of lease notifications use Postgres.
func (m *ReadModel) LeaseEvents(_ context.Context, id string, p postgres.Page) ([]postgres.LeaseEvent, error) {
	if err := TextError(id, p.After); err != nil {
		return nil, err
	}
	return []postgres.LeaseEvent{}, nil
}
