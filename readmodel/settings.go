package readmodel

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Setting is a row of the settings read model: the value an admin set for
// a setting at a scope (ScopeID empty for global). A setting at its
// default has no row; the catalogue (schemas/settings) says what it is.
type Setting struct {
	Name    string
	Scope   string
	ScopeID string
	Value   string
	By      string
	At      time.Time
}

func scanSetting(row pgx.Row) (Setting, error) {
	var s Setting
	err := row.Scan(&s.Name, &s.Scope, &s.ScopeID, &s.Value, &s.By, &s.At)
	return s, err
}

// Settings lists the values set for name, or for every setting when name is
// empty, by name, scope and scope id. There are few: one per setting and
// scope an admin set.
func (r *Reader) Settings(ctx context.Context, name string) ([]Setting, error) {
	rows, err := r.pool.Query(ctx, `SELECT name, scope, scope_id, value, set_by, set_at FROM settings
		WHERE $1 = '' OR name = $1 ORDER BY name, scope, scope_id`, name)
	if err != nil {
		return nil, fmt.Errorf("list settings: %w", err)
	}
	return collect(rows, scanSetting, "list settings")
}
