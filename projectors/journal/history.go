package journal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// VmEvent is one record of a VM's history, as vm_events keeps it.
type VmEvent struct {
	At         time.Time
	Type       string
	JobID      string
	VmState    string
	TaskState  string
	PowerState string
	HostID     string
	// Reason is why the VM changed, a job ended or a step ran.
	Reason string
	// Payload is the whole event as JSON (Go field names).
	Payload   string
	Partition int32
	Offset    int64
}

// VmSnapshot is a VM as it was at an instant: the full VmStateChanged in
// force then, with the power fields of later PowerStateObserved events up to
// the instant applied.
type VmSnapshot struct {
	// At is the instant asked about; Since is when the state in force began.
	At, Since time.Time
	State     schemas.VmStateChanged
	// PendingJob is the job in flight at the instant; "" for none.
	PendingJob string
	// Offset names the VmStateChanged record the snapshot comes from.
	Partition int32
	Offset    int64
}

// ErrNoHistory means vm_events knows nothing of the VM before the instant.
var ErrNoHistory = errors.New("no history")

// VmHistory returns the VM's events in the order they happened, at most
// limit of them (from the start; limit <= 0 means 10000).
func (r *Reader) VmHistory(ctx context.Context, vmID string, limit int) ([]VmEvent, error) {
	if limit <= 0 {
		limit = 10000
	}
	q := fmt.Sprintf(`SELECT at_ms, "type", job_id, vm_state, task_state, power_state, host_id, reason, payload, "partition", "offset"
FROM %s.vm_events FINAL
WHERE vm_id = ?
ORDER BY at_ms, "partition", "offset"
LIMIT %d`, quoteIdent(r.database), limit)
	rows, err := r.conn.Query(ctx, q, vmID)
	if err != nil {
		return nil, fmt.Errorf("history of vm %s: %w", vmID, err)
	}
	defer rows.Close()
	var out []VmEvent
	for rows.Next() {
		var e VmEvent
		var atMs int64
		if err := rows.Scan(&atMs, &e.Type, &e.JobID, &e.VmState, &e.TaskState, &e.PowerState, &e.HostID, &e.Reason,
			&e.Payload, &e.Partition, &e.Offset); err != nil {
			return nil, fmt.Errorf("history of vm %s: %w", vmID, err)
		}
		e.At = time.UnixMilli(atMs).UTC()
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history of vm %s: %w", vmID, err)
	}
	return out, nil
}

// VmAt returns the VM as it was at the instant at: the last VmStateChanged
// at or before it (each carries the whole VM), then the power reports that
// followed it up to the instant. ErrNoHistory when the VM had no state yet.
func (r *Reader) VmAt(ctx context.Context, vmID string, at time.Time) (VmSnapshot, error) {
	db := quoteIdent(r.database)
	atMs := at.UnixMilli()
	var snap VmSnapshot
	var payload string
	var sinceMs int64
	err := r.conn.QueryRow(ctx, fmt.Sprintf(`SELECT payload, at_ms, "partition", "offset"
FROM %s.vm_events FINAL
WHERE vm_id = ? AND "type" = 'VmStateChanged' AND at_ms <= ?
ORDER BY at_ms DESC, "offset" DESC
LIMIT 1`, db), vmID, atMs).Scan(&payload, &sinceMs, &snap.Partition, &snap.Offset)
	if err != nil {
		if isNoRows(err) {
			return VmSnapshot{}, fmt.Errorf("vm %s at %s: %w", vmID, at.UTC().Format(time.RFC3339), ErrNoHistory)
		}
		return VmSnapshot{}, fmt.Errorf("vm %s at %s: %w", vmID, at.UTC().Format(time.RFC3339), err)
	}
	if err := json.Unmarshal([]byte(payload), &snap.State); err != nil {
		return VmSnapshot{}, fmt.Errorf("vm %s at %s: decode VmStateChanged at offset %d: %w", vmID, at.UTC().Format(time.RFC3339), snap.Offset, err)
	}
	snap.At, snap.Since = at.UTC(), time.UnixMilli(sinceMs).UTC()
	if snap.State.TaskState != "" {
		snap.PendingJob = snap.State.JobID
	}

	// Reports that agreed with the VM after its last change moved only the
	// power fields (the read model folds them the same way).
	rows, err := r.conn.Query(ctx, fmt.Sprintf(`SELECT payload
FROM %s.vm_events FINAL
WHERE vm_id = ? AND "type" = 'PowerStateObserved' AND at_ms <= ? AND (at_ms > ? OR (at_ms = ? AND "offset" > ?))
ORDER BY at_ms, "offset"`, db), vmID, atMs, sinceMs, sinceMs, snap.Offset)
	if err != nil {
		return VmSnapshot{}, fmt.Errorf("vm %s power reports: %w", vmID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return VmSnapshot{}, fmt.Errorf("vm %s power reports: %w", vmID, err)
		}
		var o schemas.PowerStateObserved
		if err := json.Unmarshal([]byte(p), &o); err != nil {
			return VmSnapshot{}, fmt.Errorf("vm %s power report: %w", vmID, err)
		}
		snap.State.PowerState, snap.State.PowerHost = o.PowerState, o.HostID
		snap.State.PowerStateUpdateCount, snap.State.PowerStateUpdateTime = o.Count, o.At
	}
	if err := rows.Err(); err != nil {
		return VmSnapshot{}, fmt.Errorf("vm %s power reports: %w", vmID, err)
	}
	return snap, nil
}
