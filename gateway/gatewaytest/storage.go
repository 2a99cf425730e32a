package gatewaytest

import (
	"cmp"
	"context"
	"slices"

	"github.com/vmplane/vmplane/readmodel"
)

// storage is the ReadModel's templates, pools, networks, volumes and NICs.
type storage struct {
	templates map[string]readmodel.Template
	pools     map[string]readmodel.Pool
	networks  map[string]readmodel.Network
	volumes   map[string]readmodel.Volume
	nics      map[string]readmodel.Nic
}

func (m *ReadModel) store() *storage {
	if m.storage == nil {
		m.storage = &storage{templates: map[string]readmodel.Template{}, pools: map[string]readmodel.Pool{},
			networks: map[string]readmodel.Network{}, volumes: map[string]readmodel.Volume{}, nics: map[string]readmodel.Nic{}}
	}
	return m.storage
}

// PutTemplate stores a template.
func (m *ReadModel) PutTemplate(t readmodel.Template) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.store().templates[t.ID] = t
}

// PutPool stores a pool.
func (m *ReadModel) PutPool(p readmodel.Pool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.store().pools[p.ID] = p
}

// PutNetwork stores a network.
func (m *ReadModel) PutNetwork(n readmodel.Network) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.store().networks[n.ID] = n
}

// PutVolume stores a volume.
func (m *ReadModel) PutVolume(v readmodel.Volume) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.store().volumes[v.ID] = v
}

// PutNic stores a NIC.
func (m *ReadModel) PutNic(n readmodel.Nic) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.store().nics[n.ID] = n
}

// Templates lists the templates not deleted, by name.
func (m *ReadModel) Templates(context.Context) ([]readmodel.Template, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []readmodel.Template{}
	for _, t := range m.store().templates {
		if !t.Deleted {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b readmodel.Template) int { return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID)) })
	return out, nil
}

// Template returns the template of an id, or else the one of that name not
// deleted, or readmodel.ErrNotFound.
func (m *ReadModel) Template(_ context.Context, idOrName string) (readmodel.Template, error) {
	if err := TextError(idOrName); err != nil {
		return readmodel.Template{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if t, ok := m.store().templates[idOrName]; ok {
		return t, nil
	}
	for _, t := range m.store().templates {
		if t.Name == idOrName && !t.Deleted {
			return t, nil
		}
	}
	return readmodel.Template{}, readmodel.ErrNotFound
}

// Pools lists the applied pools of a zone ("" for all), by zone and name.
func (m *ReadModel) Pools(_ context.Context, zoneID string) ([]readmodel.Pool, error) {
	if err := TextError(zoneID); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []readmodel.Pool{}
	for _, p := range m.store().pools {
		if p.Applied && (zoneID == "" || p.ZoneID == zoneID) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b readmodel.Pool) int {
		return cmp.Or(cmp.Compare(a.ZoneID, b.ZoneID), cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// Pool returns a pool, or readmodel.ErrNotFound.
func (m *ReadModel) Pool(_ context.Context, id string) (readmodel.Pool, error) {
	if err := TextError(id); err != nil {
		return readmodel.Pool{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, ok := m.store().pools[id]; ok {
		return p, nil
	}
	return readmodel.Pool{}, readmodel.ErrNotFound
}

// Networks lists the applied networks of a zone ("" for all).
func (m *ReadModel) Networks(_ context.Context, zoneID string) ([]readmodel.Network, error) {
	if err := TextError(zoneID); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []readmodel.Network{}
	for _, n := range m.store().networks {
		if n.Applied && (zoneID == "" || n.ZoneID == zoneID) {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b readmodel.Network) int {
		return cmp.Or(cmp.Compare(a.ZoneID, b.ZoneID), cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// Network returns the network of an id, or else the applied one of that
// name in the zone, or readmodel.ErrNotFound.
func (m *ReadModel) Network(_ context.Context, zoneID, idOrName string) (readmodel.Network, error) {
	if err := TextError(zoneID, idOrName); err != nil {
		return readmodel.Network{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if n, ok := m.store().networks[idOrName]; ok {
		return n, nil
	}
	for _, n := range m.store().networks {
		if n.Name == idOrName && n.ZoneID == zoneID && n.Applied {
			return n, nil
		}
	}
	return readmodel.Network{}, readmodel.ErrNotFound
}

// Volumes lists a page of volumes by id, narrowed by f.
func (m *ReadModel) Volumes(_ context.Context, f readmodel.VolumeFilter, p readmodel.Page) ([]readmodel.Volume, error) {
	if err := TextError(f.Account, f.VmID, p.After); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return page(m.store().volumes, p, func(v readmodel.Volume) bool {
		return (f.Account == "" || v.Account == f.Account) && (f.VmID == "" || v.VmID == f.VmID) && (f.Deleted || !v.Deleted)
	}), nil
}

// Volume returns a volume, or readmodel.ErrNotFound.
func (m *ReadModel) Volume(_ context.Context, id string) (readmodel.Volume, error) {
	if err := TextError(id); err != nil {
		return readmodel.Volume{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.store().volumes[id]; ok {
		return v, nil
	}
	return readmodel.Volume{}, readmodel.ErrNotFound
}

// VMStorage returns the volumes (not deleted) and NICs of the VMs of ids,
// each by device.
func (m *ReadModel) VMStorage(_ context.Context, vmIDs []string) (map[string]readmodel.VMStorage, error) {
	if err := TextError(vmIDs...); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]readmodel.VMStorage{}
	for _, v := range m.store().volumes {
		if slices.Contains(vmIDs, v.VmID) && !v.Deleted {
			s := out[v.VmID]
			s.Volumes = append(s.Volumes, v)
			out[v.VmID] = s
		}
	}
	for _, n := range m.store().nics {
		if slices.Contains(vmIDs, n.VmID) {
			s := out[n.VmID]
			s.Nics = append(s.Nics, n)
			out[n.VmID] = s
		}
	}
	for id, s := range out {
		slices.SortFunc(s.Volumes, func(a, b readmodel.Volume) int { return cmp.Compare(a.DeviceID, b.DeviceID) })
		slices.SortFunc(s.Nics, func(a, b readmodel.Nic) int { return cmp.Compare(a.DeviceID, b.DeviceID) })
		out[id] = s
	}
	return out, nil
}
