package postgres

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// A notification with no status is a command's answer about a lease the
// zone does not have: an event row, never a lease row.
const sqlLease = `
INSERT INTO leases (id, zone_id, project, name, status, degraded, start_at, end_at, reason, created_at, updated_at, version)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10, $11)
ON CONFLICT (id) DO UPDATE SET zone_id = excluded.zone_id, project = excluded.project, name = excluded.name,
	status = excluded.status, degraded = excluded.degraded, start_at = excluded.start_at, end_at = excluded.end_at,
	reason = excluded.reason, updated_at = excluded.updated_at, version = excluded.version
WHERE leases.version < excluded.version`

const sqlLeaseReservation = `
INSERT INTO lease_reservations (id, lease_id, idx, status, min_hosts, max_hosts, host_properties, hosts,
	missing_resources, resources_changed, version)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
ON CONFLICT (id) DO UPDATE SET status = excluded.status, min_hosts = excluded.min_hosts,
	max_hosts = excluded.max_hosts, host_properties = excluded.host_properties, hosts = excluded.hosts,
	missing_resources = excluded.missing_resources, resources_changed = excluded.resources_changed,
	version = excluded.version
WHERE lease_reservations.version < excluded.version`

const sqlLeaseEvent = `
INSERT INTO lease_events (zone_id, version, lease_id, project, event, status, degraded, host_id, detail, command_id,
	reservations, at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
ON CONFLICT (zone_id, version, lease_id) DO NOTHING`

// leaseStmts folds one lease.events.v1 record into statements. Versions are
// offsets of the zone's one partition, so they order a zone's records.
func leaseStmts(v any, offset int64, ts time.Time) []stmt {
	switch v := v.(type) {
	case *schemas.LeaseStatusChanged:
		at := ms(v.At, ts)
		rs, _ := json.Marshal(v.Reservations)
		out := []stmt{{sqlLeaseEvent, []any{v.ZoneID, offset, v.LeaseID, v.Project, v.Event, v.Status, v.Degraded, "",
			v.Detail, v.CommandID, rs, at}}}
		if v.Status == "" {
			return out
		}
		out = append(out, stmt{sqlLease, []any{v.LeaseID, v.ZoneID, v.Project, v.Name, v.Status, v.Degraded,
			ms(v.Start, ts), ms(v.End, ts), v.Reason, at, offset}})
		for i, r := range v.Reservations {
			props, _ := json.Marshal(nonNilMap(r.HostProperties))
			out = append(out, stmt{sqlLeaseReservation, []any{r.ID, v.LeaseID, i, r.Status, r.MinHosts, r.MaxHosts,
				props, nonNil(r.Hosts), r.MissingResources, r.ResourcesChanged, offset}})
		}
		return out
	case *schemas.LeaseHostChanged:
		at := ms(v.At, ts)
		event := "host_unreservable"
		if v.Reservable {
			event = "host_reservable"
		}
		detail := fmt.Sprintf("host %s is %s/%s", v.HostID, v.Status, v.ResourceState)
		if v.Reason != "" {
			detail += ": " + v.Reason
		}
		leases := v.Leases
		if len(leases) == 0 {
			leases = []string{""}
		}
		var out []stmt
		for _, id := range leases {
			out = append(out, stmt{sqlLeaseEvent, []any{v.ZoneID, offset, id, "", event, "", false, v.HostID, detail, "",
				[]byte("[]"), at}})
		}
		return out
	}
	return nil
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
