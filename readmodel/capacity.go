package readmodel

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vmplane/vmplane/schemas"
)

// ClusterCapacity is one cluster of a zone: what its hosts have, with
// over-commit, what is allocated, and what is free on reservable hosts.
type ClusterCapacity struct {
	PodID, ClusterID         string
	Hosts, ReservableHosts   int
	CPU, UsedCPU, FreeCPU    int64
	MemoryMB, UsedMemoryMB   int64
	FreeMemoryMB             int64
	ReservedHosts, Dedicated int // hosts with a planner reservation; of them Dedicated
}

// HostPlacement is a host's planner reservation and its allocations.
type HostPlacement struct {
	Planner, ResourceUsage, ReservedFor string
	Allocations                         []Allocation
}

// Allocation is one VM's claim on a host.
type Allocation struct {
	VmID, Account, RequestID string
	CPU                      int32
	MemoryMB                 int64
	At                       time.Time
}

// sqlZoneCapacity counts capacity with each host's over-commit ratios, or
// the defaults placement applies ($2, $3) to a host that reports none.
const sqlZoneCapacity = `
WITH h AS (
	SELECT id, pod_id, cluster_id, reservable, used_cpu, used_memory_mb,
		floor(cpu * (CASE WHEN cpu_overcommit > 0 THEN cpu_overcommit ELSE $2 END) + 1e-9) AS cap_cpu,
		floor(memory_mb * (CASE WHEN mem_overcommit > 0 THEN mem_overcommit ELSE $3 END) + 1e-9) AS cap_mem
	FROM hosts WHERE zone_id = $1 AND status <> 'Removed'
)
SELECT h.pod_id, h.cluster_id, count(*), count(*) FILTER (WHERE h.reservable),
	COALESCE(sum(h.cap_cpu), 0)::bigint,
	COALESCE(sum(h.used_cpu), 0)::bigint,
	COALESCE(sum(GREATEST(h.cap_cpu - h.used_cpu, 0)) FILTER (WHERE h.reservable), 0)::bigint,
	COALESCE(sum(h.cap_mem), 0)::bigint,
	COALESCE(sum(h.used_memory_mb), 0)::bigint,
	COALESCE(sum(GREATEST(h.cap_mem - h.used_memory_mb, 0)) FILTER (WHERE h.reservable), 0)::bigint,
	count(r.host_id) FILTER (WHERE r.planner <> ''),
	count(r.host_id) FILTER (WHERE r.resource_usage = 'Dedicated' AND r.planner <> '')
FROM h LEFT JOIN host_reservations r ON r.host_id = h.id
GROUP BY h.pod_id, h.cluster_id
ORDER BY h.pod_id, h.cluster_id`

// ZoneCapacity returns a zone's clusters by pod and cluster; an unknown zone
// has none.
func (r *Reader) ZoneCapacity(ctx context.Context, zoneID string) ([]ClusterCapacity, error) {
	rows, err := r.pool.Query(ctx, sqlZoneCapacity, zoneID, schemas.DefaultCPUOvercommit, schemas.DefaultMemOvercommit)
	if err != nil {
		return nil, fmt.Errorf("zone capacity %s: %w", zoneID, err)
	}
	return collect(rows, func(row pgx.Row) (ClusterCapacity, error) {
		var c ClusterCapacity
		err := row.Scan(&c.PodID, &c.ClusterID, &c.Hosts, &c.ReservableHosts, &c.CPU, &c.UsedCPU, &c.FreeCPU,
			&c.MemoryMB, &c.UsedMemoryMB, &c.FreeMemoryMB, &c.ReservedHosts, &c.Dedicated)
		return c, err
	}, "zone capacity")
}

// HostPlacement returns a host's reservation and allocations; a host
// without them has empty fields.
func (r *Reader) HostPlacement(ctx context.Context, hostID string) (HostPlacement, error) {
	var p HostPlacement
	err := r.pool.QueryRow(ctx, `SELECT planner, resource_usage, account FROM host_reservations WHERE host_id = $1`, hostID).
		Scan(&p.Planner, &p.ResourceUsage, &p.ReservedFor)
	if err != nil && err != pgx.ErrNoRows {
		return p, fmt.Errorf("host reservation %s: %w", hostID, err)
	}
	rows, err := r.pool.Query(ctx, `SELECT vm_id, account, request_id, cpu, memory_mb, at FROM allocations WHERE host_id = $1 ORDER BY vm_id`, hostID)
	if err != nil {
		return p, fmt.Errorf("allocations of %s: %w", hostID, err)
	}
	p.Allocations, err = collect(rows, func(row pgx.Row) (Allocation, error) {
		var a Allocation
		err := row.Scan(&a.VmID, &a.Account, &a.RequestID, &a.CPU, &a.MemoryMB, &a.At)
		return a, err
	}, "allocations")
	return p, err
}
