package gatewaytest

import (
	"cmp"
	"context"
	"slices"

	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

// PutSetting applies a SettingChanged as the projector does: an empty
// value removes the scope's row.
func (m *ReadModel) PutSetting(c schemas.SettingChanged, row readmodel.Setting) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [3]string{c.Name, c.Scope, c.ScopeID}
	if m.settings == nil {
		m.settings = map[[3]string]readmodel.Setting{}
	}
	if c.Value == "" {
		delete(m.settings, k)
		return
	}
	row.Name, row.Scope, row.ScopeID, row.Value, row.By = c.Name, c.Scope, c.ScopeID, c.Value, c.By
	m.settings[k] = row
}

// Settings lists the values set for name (every one when empty), by name,
// scope and scope id.
func (m *ReadModel) Settings(_ context.Context, name string) ([]readmodel.Setting, error) {
	if err := TextError(name); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []readmodel.Setting{}
	for k, s := range m.settings {
		if name == "" || k[0] == name {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b readmodel.Setting) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Scope, b.Scope), cmp.Compare(a.ScopeID, b.ScopeID))
	})
	return out, nil
}
