package readmodel

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
)

// storageReader is a Reader over templates, pools, networks, and the
// volumes and NICs of vm-1 (acme) and vm-2 (other).
func storageReader(t *testing.T) *Reader {
	t.Helper()
	dsn := migratedDB(t)
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	for _, q := range []string{
		// "deb" is a template's id and another's name: the id wins.
		`INSERT INTO templates (id, name, format, size_mb, os_type, deleted, created_at, version) VALUES
			('deb', 'debian', 'qcow2', 2048, 'Debian', false, now(), 1),
			('t2', 'deb', 'raw', 1024, 'x', false, now(), 2),
			('gone', 'gone', 'raw', 1024, 'x', true, now(), 3)`,
		`INSERT INTO storage_pools (id, zone_id, name, scope, path, capacity_mb, used_mb, volumes, state, applied, last_error, updated_at, version) VALUES
			('p1', 'z1', 'primary', 'Zone', '/p1', 1000, 10, 1, 'Up', true, '', now(), 1),
			('p2', 'z1', 'refused', 'Host', '/p2', 1000, 0, 0, 'Up', false, 'no such host', now(), 2),
			('p3', 'z2', 'other', 'Zone', '/p3', 1000, 0, 0, 'Maintenance', true, '', now(), 3)`,
		`INSERT INTO networks (id, zone_id, name, cidr, gateway, is_default, size, allocated, applied, updated_at, version) VALUES
			('n1', 'z1', 'guest', '10.1.0.0/24', '10.1.0.1', true, 253, 2, true, now(), 1),
			('n2', 'z2', 'guest', '10.2.0.0/24', '10.2.0.1', true, 253, 0, true, now(), 2),
			('n3', 'z1', 'clash', '10.1.0.0/25', '10.1.0.1', false, 0, 0, false, now(), 3)`,
		`INSERT INTO nics (id, vm_id, network_id, device_id, ip, updated_at, version) VALUES
			('nic-b', 'vm-1', 'n1', 1, '10.1.0.3', now(), 1), ('nic-a', 'vm-1', 'n1', 0, '10.1.0.2', now(), 2)`,
	} {
		if _, err := conn.Exec(t.Context(), q); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		vm, account := "vm-1", "acme"
		if i == 4 {
			vm, account = "vm-2", "other"
		}
		if _, err := conn.Exec(t.Context(), `INSERT INTO volumes (id, vm_id, account, zone_id, name, kind, device_id, pool_id,
			size_mb, state, deleted, created_at, updated_at, version) VALUES ($1, $2, $3, 'z1', $1, 'Data', $4, 'p1', 1024, 'Ready', $5, now(), now(), $6)`,
			fmt.Sprintf("vol-%d", i), vm, account, int32(4-i), i == 3, int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(t.Context(), `INSERT INTO volume_snapshots (volume_id, name, vm_id, taken_at, version) VALUES
		('vol-0', 'b', 'vm-1', now(), 2), ('vol-0', 'a', 'vm-1', now() - interval '1 hour', 1)`); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

func TestStorageReads(t *testing.T) {
	r := storageReader(t)
	ctx := t.Context()
	if tm, err := r.Template(ctx, "deb"); err != nil || tm.ID != "deb" {
		t.Errorf("template deb = %+v, err %v; want the one of that id", tm, err)
	}
	if tm, err := r.Template(ctx, "debian"); err != nil || tm.ID != "deb" {
		t.Errorf("template debian = %+v, err %v", tm, err)
	}
	if tm, err := r.Template(ctx, "gone"); err != nil || !tm.Deleted {
		t.Errorf("deleted template by id = %+v, err %v", tm, err)
	}
	if ts, err := r.Templates(ctx); err != nil || len(ts) != 2 || ts[0].Name != "deb" || ts[1].Name != "debian" {
		t.Errorf("templates = %+v, err %v", ts, err)
	}
	if ps, err := r.Pools(ctx, "z1"); err != nil || len(ps) != 1 || ps[0].ID != "p1" || ps[0].UsedMB != 10 {
		t.Errorf("pools of z1 = %+v, err %v; want p1 alone, p2 refused", ps, err)
	}
	if ps, err := r.Pools(ctx, ""); err != nil || len(ps) != 2 {
		t.Errorf("every pool = %+v, err %v", ps, err)
	}
	if p, err := r.Pool(ctx, "p2"); err != nil || p.Applied || p.LastError != "no such host" {
		t.Errorf("refused p2 = %+v, err %v", p, err)
	}
	if _, err := r.Pool(ctx, "p9"); !errors.Is(err, ErrNotFound) {
		t.Errorf("pool p9: err %v", err)
	}
	if n, err := r.Network(ctx, "z2", "guest"); err != nil || n.ID != "n2" {
		t.Errorf("network guest of z2 = %+v, err %v", n, err)
	}
	if _, err := r.Network(ctx, "z1", "clash"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a refused network by name: err %v", err)
	}
	if n, err := r.Network(ctx, "z1", "n3"); err != nil || n.Applied || n.ID != "n3" {
		t.Errorf("a refused network by id = %+v, err %v", n, err)
	}
	// Two pages of acme's volumes, the deleted one left out.
	p1, err := r.Volumes(ctx, VolumeFilter{Account: "acme"}, Page{Limit: 2})
	if err != nil || len(p1) != 2 || p1[0].ID != "vol-0" || p1[1].ID != "vol-1" {
		t.Fatalf("first page = %+v, err %v", p1, err)
	}
	if p2, err := r.Volumes(ctx, VolumeFilter{Account: "acme"}, Page{Limit: 2, After: p1[1].ID}); err != nil || len(p2) != 1 || p2[0].ID != "vol-2" {
		t.Errorf("second page = %+v, err %v", p2, err)
	}
	if all, err := r.Volumes(ctx, VolumeFilter{VmID: "vm-1", Deleted: true}, Page{}); err != nil || len(all) != 4 {
		t.Errorf("vm-1's volumes, deleted too = %+v, err %v", all, err)
	}
	if v, err := r.Volume(ctx, "vol-0"); err != nil || len(v.Snapshots) != 2 || v.Snapshots[0].Name != "a" {
		t.Errorf("vol-0 = %+v, err %v; want its snapshots oldest first", v, err)
	}
	st, err := r.VMStorage(ctx, []string{"vm-1", "vm-2", "vm-9"})
	if err != nil || len(st) != 2 {
		t.Fatalf("storage = %+v, err %v", st, err)
	}
	vols, nics := st["vm-1"].Volumes, st["vm-1"].Nics
	if len(vols) != 3 || vols[0].ID != "vol-2" || vols[2].ID != "vol-0" || len(nics) != 2 || nics[0].ID != "nic-a" {
		t.Errorf("vm-1's volumes %+v and NICs %+v; want them by device, the deleted volume left out", vols, nics)
	}
	if empty, err := r.VMStorage(ctx, nil); err != nil || len(empty) != 0 {
		t.Errorf("no VMs: %+v, err %v", empty, err)
	}
}
