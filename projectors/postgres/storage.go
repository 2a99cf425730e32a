package postgres

import (
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// The storage and network read models (docs/design.md §9): templates from
// catalog.v1, pools and networks from placement.events.v1 as placement
// holds them, and the volumes, NICs and volume snapshots of VMs from
// vm.events.v1. Each record sets or removes rows of its own, in log order
// with the other low-volume statements.

// storageStmts is the write of one storage or network record.
func storageStmts(v any, offset int64, ts time.Time) []stmt {
	switch v := v.(type) {
	case *schemas.Template:
		return []stmt{{sqlTemplate, []any{v.ID, v.Name, v.Format, v.SizeMB, v.OsType, v.Deleted, ms(v.CreatedAt, ts), offset}}}
	case *schemas.StoragePoolChanged:
		return []stmt{poolStmt(v, offset, ts)}
	case *schemas.NetworkChanged:
		return []stmt{networkStmt(v, offset, ts)}
	case *schemas.VolumeChanged:
		return volumeStmts(v, offset, ts)
	case *schemas.NicChanged:
		n := v.Nic
		if v.Released {
			return []stmt{{sqlNicDelete, []any{n.NicID, offset}}}
		}
		return []stmt{{sqlNic, []any{n.NicID, v.VmID, v.Account, v.ZoneID, n.NetworkID, n.DeviceID, n.MAC, n.IP,
			n.Gateway, n.Cidr, ms(v.At, ts), offset}}}
	case *schemas.VolumeSnapshotTaken:
		return []stmt{{sqlVolumeSnapshot, []any{v.VolumeID, v.SnapshotName, v.VmID, v.Account, v.JobID, ms(v.At, ts), offset}}}
	}
	return nil
}

// poolStmt sets a pool's row as placement holds it; a refusal only tells
// why, on the row it leaves as it was (or on a row of its own, not applied,
// when the refused request would have created the pool).
func poolStmt(v *schemas.StoragePoolChanged, offset int64, ts time.Time) stmt {
	p := v.Pool
	at := ms(v.At, ts)
	switch {
	case v.Refused != "":
		return stmt{sqlPoolRefused, []any{p.PoolID, p.ZoneID, p.Name, p.Scope, p.ClusterID, p.HostID, p.Path,
			p.CapacityMB, nonNil(p.Tags), p.State, v.Refused, at, offset}}
	case v.Deleted:
		return stmt{sqlPoolDelete, []any{p.PoolID, offset}}
	}
	return stmt{sqlPool, []any{p.PoolID, p.ZoneID, p.Name, p.Scope, p.ClusterID, p.HostID, p.Path, p.CapacityMB,
		p.UsedMB, p.Volumes, nonNil(p.Tags), p.State, at, offset}}
}

// networkStmt is poolStmt for a network.
func networkStmt(v *schemas.NetworkChanged, offset int64, ts time.Time) stmt {
	n := v.Network
	at := ms(v.At, ts)
	switch {
	case v.Refused != "":
		return stmt{sqlNetworkRefused, []any{n.NetworkID, n.ZoneID, n.Name, n.Cidr, n.Gateway, n.Default, v.Refused, at, offset}}
	case v.Deleted:
		return stmt{sqlNetworkDelete, []any{n.NetworkID, offset}}
	}
	return stmt{sqlNetwork, []any{n.NetworkID, n.ZoneID, n.Name, n.Cidr, n.Gateway, n.Default, n.Size, n.Allocated, at, offset}}
}

// volumeStmts sets a volume's row; a deleted volume keeps its row, marked,
// until its VM is expunged, and loses its snapshots, which lived in its
// file.
func volumeStmts(v *schemas.VolumeChanged, offset int64, ts time.Time) []stmt {
	vol := v.Volume
	at := ms(v.At, ts)
	out := []stmt{{sqlVolume, []any{vol.VolumeID, v.VmID, v.Account, v.ZoneID, vol.Name, vol.Kind, vol.DeviceID, vol.PoolID,
		vol.SizeMB, vol.TemplateID, vol.State, v.Deleted, v.JobID, ms(vol.CreatedAt, at), at, offset}}}
	if v.Deleted {
		out = append(out, stmt{sqlVolumeSnapshotsDelete, []any{vol.VolumeID, offset}})
	}
	return out
}

// expungedStorageStmts removes what an expunged VM leaves in the storage
// tables: its volumes, their snapshots and its NICs.
func expungedStorageStmts(vmID string, offset int64) []stmt {
	return []stmt{
		{sqlVolumesExpunged, []any{vmID, offset}},
		{sqlVolumeSnapshotsExpunged, []any{vmID, offset}},
		{sqlNicsExpunged, []any{vmID, offset}},
	}
}

const sqlTemplate = `
INSERT INTO templates (id, name, format, size_mb, os_type, deleted, created_at, version)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (id) DO UPDATE SET name = excluded.name, format = excluded.format, size_mb = excluded.size_mb,
	os_type = excluded.os_type, deleted = excluded.deleted, created_at = excluded.created_at,
	version = excluded.version
WHERE templates.version < excluded.version`

const sqlPool = `
INSERT INTO storage_pools (id, zone_id, name, scope, cluster_id, host_id, path, capacity_mb, used_mb, volumes, tags,
	state, applied, last_error, updated_at, version)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, true, '', $13, $14)
ON CONFLICT (id) DO UPDATE SET zone_id = excluded.zone_id, name = excluded.name, scope = excluded.scope,
	cluster_id = excluded.cluster_id, host_id = excluded.host_id, path = excluded.path,
	capacity_mb = excluded.capacity_mb, used_mb = excluded.used_mb, volumes = excluded.volumes, tags = excluded.tags,
	state = excluded.state, applied = true, last_error = '', updated_at = excluded.updated_at,
	version = excluded.version
WHERE storage_pools.version < excluded.version`

const sqlPoolRefused = `
INSERT INTO storage_pools (id, zone_id, name, scope, cluster_id, host_id, path, capacity_mb, tags, state, applied,
	last_error, updated_at, version)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, false, $11, $12, $13)
ON CONFLICT (id) DO UPDATE SET last_error = excluded.last_error, updated_at = excluded.updated_at,
	version = excluded.version
WHERE storage_pools.version < excluded.version`

const sqlPoolDelete = `DELETE FROM storage_pools WHERE id = $1 AND version < $2`

const sqlNetwork = `
INSERT INTO networks (id, zone_id, name, cidr, gateway, is_default, size, allocated, applied, last_error, updated_at, version)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, true, '', $9, $10)
ON CONFLICT (id) DO UPDATE SET zone_id = excluded.zone_id, name = excluded.name, cidr = excluded.cidr,
	gateway = excluded.gateway, is_default = excluded.is_default, size = excluded.size,
	allocated = excluded.allocated, applied = true, last_error = '', updated_at = excluded.updated_at,
	version = excluded.version
WHERE networks.version < excluded.version`

const sqlNetworkRefused = `
INSERT INTO networks (id, zone_id, name, cidr, gateway, is_default, applied, last_error, updated_at, version)
VALUES ($1, $2, $3, $4, $5, $6, false, $7, $8, $9)
ON CONFLICT (id) DO UPDATE SET last_error = excluded.last_error, updated_at = excluded.updated_at,
	version = excluded.version
WHERE networks.version < excluded.version`

const sqlNetworkDelete = `DELETE FROM networks WHERE id = $1 AND version < $2`

const sqlVolume = `
INSERT INTO volumes (id, vm_id, account, zone_id, name, kind, device_id, pool_id, size_mb, template_id, state, deleted,
	job_id, created_at, updated_at, version)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
ON CONFLICT (id) DO UPDATE SET vm_id = excluded.vm_id, account = excluded.account, zone_id = excluded.zone_id,
	name = excluded.name, kind = excluded.kind, device_id = excluded.device_id, pool_id = excluded.pool_id,
	size_mb = excluded.size_mb, template_id = excluded.template_id, state = excluded.state,
	deleted = excluded.deleted, job_id = excluded.job_id, created_at = excluded.created_at,
	updated_at = excluded.updated_at, version = excluded.version
WHERE volumes.version < excluded.version`

const sqlVolumesExpunged = `DELETE FROM volumes WHERE vm_id = $1 AND version < $2`

const sqlNic = `
INSERT INTO nics (id, vm_id, account, zone_id, network_id, device_id, mac, ip, gateway, cidr, updated_at, version)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
ON CONFLICT (id) DO UPDATE SET vm_id = excluded.vm_id, account = excluded.account, zone_id = excluded.zone_id,
	network_id = excluded.network_id, device_id = excluded.device_id, mac = excluded.mac, ip = excluded.ip,
	gateway = excluded.gateway, cidr = excluded.cidr, updated_at = excluded.updated_at, version = excluded.version
WHERE nics.version < excluded.version`

const sqlNicDelete = `DELETE FROM nics WHERE id = $1 AND version < $2`

const sqlNicsExpunged = `DELETE FROM nics WHERE vm_id = $1 AND version < $2`

const sqlVolumeSnapshot = `
INSERT INTO volume_snapshots (volume_id, name, vm_id, account, job_id, taken_at, version)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (volume_id, name) DO UPDATE SET vm_id = excluded.vm_id, account = excluded.account,
	job_id = excluded.job_id, taken_at = excluded.taken_at, version = excluded.version
WHERE volume_snapshots.version < excluded.version`

const sqlVolumeSnapshotsDelete = `DELETE FROM volume_snapshots WHERE volume_id = $1 AND version < $2`

const sqlVolumeSnapshotsExpunged = `DELETE FROM volume_snapshots WHERE vm_id = $1 AND version < $2`
