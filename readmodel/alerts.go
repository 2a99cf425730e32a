package readmodel

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

const alertColumnsSQL = `a.id, a.kind, a.vm_id, a.host_id, a.account, a.job_id, a.zone_id, a.message, a.at,
	coalesce(k.by, ''), k.at`

const alertFromSQL = ` FROM alerts a LEFT JOIN alert_acks k ON k.alert_id = a.id`

func scanAlert(row pgx.Row) (Alert, error) {
	var a Alert
	err := row.Scan(&a.ID, &a.Kind, &a.VmID, &a.HostID, &a.Account, &a.JobID, &a.ZoneID, &a.Message, &a.At, &a.AckedBy, &a.AckedAt)
	return a, err
}

// Alerts lists alerts by id after p.After, narrowed by f.
func (r *Reader) Alerts(ctx context.Context, f AlertFilter, p Page) ([]Alert, error) {
	rows, err := r.pool.Query(ctx, `SELECT `+alertColumnsSQL+alertFromSQL+`
		WHERE a.id > $1 AND ($2 = '' OR a.account = $2) AND ($3 = '' OR a.vm_id = $3) AND ($4 = '' OR a.host_id = $4)
		AND ($5 = '' OR a.zone_id = $5) AND ($6 = '' OR a.kind = $6) AND ($7::boolean IS NULL OR (k.alert_id IS NOT NULL) = $7)
		ORDER BY a.id LIMIT $8`, p.After, f.Account, f.VmID, f.HostID, f.ZoneID, f.Kind, f.Acked, limitOf(p))
	if err != nil {
		return nil, fmt.Errorf("list alerts: %w", err)
	}
	return collect(rows, scanAlert, "list alerts")
}

// Alert returns one alert.
func (r *Reader) Alert(ctx context.Context, id string) (Alert, error) {
	a, err := scanAlert(r.pool.QueryRow(ctx, `SELECT `+alertColumnsSQL+alertFromSQL+` WHERE a.id = $1`, id))
	return a, one("alert "+id, err)
}
