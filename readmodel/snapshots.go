package readmodel

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Snapshot is a row of snapshots: one snapshot a VM keeps.
type Snapshot struct {
	VmID    string
	Name    string
	Account string
	JobID   string
	TakenAt time.Time
}

// Snapshots lists a VM's snapshots, oldest first; none for an unknown VM.
func (r *Reader) Snapshots(ctx context.Context, vmID string) ([]Snapshot, error) {
	rows, err := r.pool.Query(ctx, `SELECT vm_id, name, account, job_id, taken_at FROM snapshots
		WHERE vm_id = $1 ORDER BY taken_at, name`, vmID)
	if err != nil {
		return nil, fmt.Errorf("snapshots of %s: %w", vmID, err)
	}
	return collect(rows, func(row pgx.Row) (Snapshot, error) {
		var s Snapshot
		err := row.Scan(&s.VmID, &s.Name, &s.Account, &s.JobID, &s.TakenAt)
		return s, err
	}, "snapshots of "+vmID)
}

// OfferingVMs counts the VMs of an offering that are not expunged, Deleted
// ones included: a Deleted VM may be recovered with its offering.
func (r *Reader) OfferingVMs(ctx context.Context, offeringID string) (int, error) {
	var n int
	if err := r.pool.QueryRow(ctx, `SELECT count(*) FROM vms WHERE offering_id = $1`, offeringID).Scan(&n); err != nil {
		return 0, fmt.Errorf("vms of offering %s: %w", offeringID, err)
	}
	return n, nil
}
