package readmodel

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// FilterVMs lists VMs by id after p.After, narrowed by account, vm_state
// and host where set.
func (r *Reader) FilterVMs(ctx context.Context, f VMFilter, p Page) ([]VM, error) {
	rows, err := r.pool.Query(ctx, `SELECT `+vmColumnsSQL+` FROM vms
		WHERE id > $1 AND ($2 = '' OR account = $2) AND ($3 = '' OR vm_state = $3) AND ($4 = '' OR host_id = $4)
		ORDER BY id LIMIT $5`, p.After, f.Account, f.VmState, f.HostID, limitOf(p))
	if err != nil {
		return nil, fmt.Errorf("filter vms: %w", err)
	}
	return collect(rows, scanVM, "filter vms")
}

// Alerts lists alerts by id after p.After, narrowed by account and VM
// where set.
func (r *Reader) Alerts(ctx context.Context, account, vmID string, p Page) ([]Alert, error) {
	rows, err := r.pool.Query(ctx, `SELECT id, kind, vm_id, host_id, account, job_id, message, at FROM alerts
		WHERE id > $1 AND ($2 = '' OR account = $2) AND ($3 = '' OR vm_id = $3)
		ORDER BY id LIMIT $4`, p.After, account, vmID, limitOf(p))
	if err != nil {
		return nil, fmt.Errorf("list alerts: %w", err)
	}
	return collect(rows, func(row pgx.Row) (Alert, error) {
		var a Alert
		err := row.Scan(&a.ID, &a.Kind, &a.VmID, &a.HostID, &a.Account, &a.JobID, &a.Message, &a.At)
		return a, err
	}, "list alerts")
}
