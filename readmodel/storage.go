package readmodel

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Template is a row of templates: an image of the catalog.
type Template struct {
	ID, Name, Format, OsType string
	SizeMB                   int64
	Deleted                  bool
	CreatedAt                time.Time
}

// Pool is a row of storage_pools: a primary storage pool as placement
// holds it. Applied is false for a pool whose creation was refused (the
// row only keeps LastError); LastError is why the latest change was
// refused, empty once a change is applied.
type Pool struct {
	ID, ZoneID, Name, Scope, ClusterID, HostID, Path string
	CapacityMB, UsedMB                               int64
	Volumes                                          int32
	Tags                                             []string
	State                                            string
	Applied                                          bool
	LastError                                        string
	UpdatedAt                                        time.Time
}

// Network is a row of networks: a guest network as placement holds it,
// Applied and LastError as a Pool's.
type Network struct {
	ID, ZoneID, Name, Cidr, Gateway string
	Default                         bool
	Size, Allocated                 int32
	Applied                         bool
	LastError                       string
	UpdatedAt                       time.Time
}

// Volume is a row of volumes: a disk of a VM, with its snapshots when read
// one at a time (Volume).
type Volume struct {
	ID, VmID, Account, ZoneID, Name, Kind string
	DeviceID                              int32
	PoolID                                string
	SizeMB                                int64
	TemplateID, State                     string
	Deleted                               bool
	JobID                                 string
	CreatedAt, UpdatedAt                  time.Time
	Snapshots                             []VolumeSnapshot
}

// VolumeSnapshot is a row of volume_snapshots.
type VolumeSnapshot struct {
	VolumeID, Name, JobID string
	TakenAt               time.Time
}

// Nic is a row of nics: a VM's network interface and its address.
type Nic struct {
	ID, VmID, NetworkID    string
	DeviceID               int32
	MAC, IP, Gateway, Cidr string
}

// VolumeFilter narrows a volume list; "" fields match everything. Deleted
// volumes are listed only when Deleted is set.
type VolumeFilter struct {
	Account, VmID string
	Deleted       bool
}

// VMStorage is what a VM has besides CPU and memory, as its view shows.
type VMStorage struct {
	Volumes []Volume
	Nics    []Nic
}

const templateColumns = `id, name, format, size_mb, os_type, deleted, created_at`

func scanTemplate(row pgx.Row) (Template, error) {
	var t Template
	err := row.Scan(&t.ID, &t.Name, &t.Format, &t.SizeMB, &t.OsType, &t.Deleted, &t.CreatedAt)
	return t, err
}

// Templates lists the templates that are not deleted, by name.
func (r *Reader) Templates(ctx context.Context) ([]Template, error) {
	rows, err := r.pool.Query(ctx, `SELECT `+templateColumns+` FROM templates WHERE NOT deleted ORDER BY name, id`)
	if err != nil {
		return nil, fmt.Errorf("templates: %w", err)
	}
	return collect(rows, scanTemplate, "templates")
}

// Template returns the template of an id, deleted or not, or else the
// template of that name that is not deleted.
func (r *Reader) Template(ctx context.Context, idOrName string) (Template, error) {
	t, err := scanTemplate(r.pool.QueryRow(ctx, `SELECT `+templateColumns+` FROM templates
		WHERE id = $1 OR (name = $1 AND NOT deleted) ORDER BY id = $1 DESC LIMIT 1`, idOrName))
	return t, one("template "+idOrName, err)
}

const poolColumns = `id, zone_id, name, scope, cluster_id, host_id, path, capacity_mb, used_mb, volumes, tags, state,
	applied, last_error, updated_at`

func scanPool(row pgx.Row) (Pool, error) {
	var p Pool
	err := row.Scan(&p.ID, &p.ZoneID, &p.Name, &p.Scope, &p.ClusterID, &p.HostID, &p.Path, &p.CapacityMB, &p.UsedMB,
		&p.Volumes, &p.Tags, &p.State, &p.Applied, &p.LastError, &p.UpdatedAt)
	return p, err
}

// Pools lists the pools of a zone ("" for every zone) that exist, by zone
// and name.
func (r *Reader) Pools(ctx context.Context, zoneID string) ([]Pool, error) {
	rows, err := r.pool.Query(ctx, `SELECT `+poolColumns+` FROM storage_pools
		WHERE applied AND ($1 = '' OR zone_id = $1) ORDER BY zone_id, name, id`, zoneID)
	if err != nil {
		return nil, fmt.Errorf("pools: %w", err)
	}
	return collect(rows, scanPool, "pools")
}

// Pool returns one pool, a refused creation's row included.
func (r *Reader) Pool(ctx context.Context, id string) (Pool, error) {
	p, err := scanPool(r.pool.QueryRow(ctx, `SELECT `+poolColumns+` FROM storage_pools WHERE id = $1`, id))
	return p, one("pool "+id, err)
}

const networkColumns = `id, zone_id, name, cidr, gateway, is_default, size, allocated, applied, last_error, updated_at`

func scanNetwork(row pgx.Row) (Network, error) {
	var n Network
	err := row.Scan(&n.ID, &n.ZoneID, &n.Name, &n.Cidr, &n.Gateway, &n.Default, &n.Size, &n.Allocated, &n.Applied,
		&n.LastError, &n.UpdatedAt)
	return n, err
}

// Networks lists the networks of a zone ("" for every zone) that exist, by
// zone and name.
func (r *Reader) Networks(ctx context.Context, zoneID string) ([]Network, error) {
	rows, err := r.pool.Query(ctx, `SELECT `+networkColumns+` FROM networks
		WHERE applied AND ($1 = '' OR zone_id = $1) ORDER BY zone_id, name, id`, zoneID)
	if err != nil {
		return nil, fmt.Errorf("networks: %w", err)
	}
	return collect(rows, scanNetwork, "networks")
}

// Network returns the network of an id, a refused creation's row included,
// or else the network of that name in the zone.
func (r *Reader) Network(ctx context.Context, zoneID, idOrName string) (Network, error) {
	n, err := scanNetwork(r.pool.QueryRow(ctx, `SELECT `+networkColumns+` FROM networks
		WHERE id = $1 OR (name = $1 AND zone_id = $2 AND applied) ORDER BY id = $1 DESC LIMIT 1`, idOrName, zoneID))
	return n, one("network "+idOrName, err)
}

const volumeColumns = `id, vm_id, account, zone_id, name, kind, device_id, pool_id, size_mb, template_id, state, deleted,
	job_id, created_at, updated_at`

func scanVolume(row pgx.Row) (Volume, error) {
	var v Volume
	err := row.Scan(&v.ID, &v.VmID, &v.Account, &v.ZoneID, &v.Name, &v.Kind, &v.DeviceID, &v.PoolID, &v.SizeMB,
		&v.TemplateID, &v.State, &v.Deleted, &v.JobID, &v.CreatedAt, &v.UpdatedAt)
	return v, err
}

// Volumes lists volumes by id after p.After, narrowed by f.
func (r *Reader) Volumes(ctx context.Context, f VolumeFilter, p Page) ([]Volume, error) {
	rows, err := r.pool.Query(ctx, `SELECT `+volumeColumns+` FROM volumes
		WHERE id > $1 AND ($2 = '' OR account = $2) AND ($3 = '' OR vm_id = $3) AND ($4 OR NOT deleted)
		ORDER BY id LIMIT $5`, p.After, f.Account, f.VmID, f.Deleted, limitOf(p))
	if err != nil {
		return nil, fmt.Errorf("volumes: %w", err)
	}
	return collect(rows, scanVolume, "volumes")
}

// Volume returns one volume with its snapshots, oldest first.
func (r *Reader) Volume(ctx context.Context, id string) (Volume, error) {
	v, err := scanVolume(r.pool.QueryRow(ctx, `SELECT `+volumeColumns+` FROM volumes WHERE id = $1`, id))
	if err := one("volume "+id, err); err != nil {
		return v, err
	}
	rows, err := r.pool.Query(ctx, `SELECT volume_id, name, job_id, taken_at FROM volume_snapshots
		WHERE volume_id = $1 ORDER BY taken_at, name`, id)
	if err != nil {
		return v, fmt.Errorf("snapshots of volume %s: %w", id, err)
	}
	v.Snapshots, err = collect(rows, func(row pgx.Row) (VolumeSnapshot, error) {
		var s VolumeSnapshot
		err := row.Scan(&s.VolumeID, &s.Name, &s.JobID, &s.TakenAt)
		return s, err
	}, "snapshots of volume "+id)
	return v, err
}

// VMStorage returns the volumes (not deleted, by device) and NICs (by
// device) of the VMs of ids, by VM id; a VM with neither has no entry.
func (r *Reader) VMStorage(ctx context.Context, vmIDs []string) (map[string]VMStorage, error) {
	out := map[string]VMStorage{}
	if len(vmIDs) == 0 {
		return out, nil
	}
	rows, err := r.pool.Query(ctx, `SELECT `+volumeColumns+` FROM volumes
		WHERE vm_id = ANY($1) AND NOT deleted ORDER BY vm_id, device_id, id`, vmIDs)
	if err != nil {
		return nil, fmt.Errorf("volumes of vms: %w", err)
	}
	vols, err := collect(rows, scanVolume, "volumes of vms")
	if err != nil {
		return nil, err
	}
	for _, v := range vols {
		s := out[v.VmID]
		s.Volumes = append(s.Volumes, v)
		out[v.VmID] = s
	}
	rows, err = r.pool.Query(ctx, `SELECT id, vm_id, network_id, device_id, mac, ip, gateway, cidr FROM nics
		WHERE vm_id = ANY($1) ORDER BY vm_id, device_id, id`, vmIDs)
	if err != nil {
		return nil, fmt.Errorf("nics of vms: %w", err)
	}
	nics, err := collect(rows, func(row pgx.Row) (Nic, error) {
		var n Nic
		err := row.Scan(&n.ID, &n.VmID, &n.NetworkID, &n.DeviceID, &n.MAC, &n.IP, &n.Gateway, &n.Cidr)
		return n, err
	}, "nics of vms")
	if err != nil {
		return nil, err
	}
	for _, n := range nics {
		s := out[n.VmID]
		s.Nics = append(s.Nics, n)
		out[n.VmID] = s
	}
	return out, nil
}
