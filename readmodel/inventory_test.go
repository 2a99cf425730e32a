package readmodel

import (
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestInventory counts VMs by state, hosts by status and the free
// capacity of each zone's reservable hosts, over-commit applied as
// ZoneCapacity applies it.
func TestInventory(t *testing.T) {
	r := seededReader(t) // five Active VMs
	conn, err := pgx.Connect(t.Context(), r.pool.Config().ConnConfig.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	if _, err := conn.Exec(t.Context(), `UPDATE vms SET vm_state = 'Stopped' WHERE id = 'vm-1'`); err != nil {
		t.Fatal(err)
	}
	// z1: h1 (cpu 8 × 2.0 − 4 used = 12; memory 1000 × 1.5 − 200 = 1300),
	// h2 over-used (counts 0, not −), h3 not reservable, h4 removed.
	if _, err := conn.Exec(t.Context(), `INSERT INTO hosts
		(id, zone_id, status, reservable, cpu, memory_mb, cpu_overcommit, mem_overcommit, used_cpu, used_memory_mb, updated_at) VALUES
		('h1', 'z1', 'Up', true, 8, 1000, 2, 1.5, 4, 200, now()),
		('h2', 'z1', 'Up', true, 4, 1000, 1, 1, 6, 2000, now()),
		('h3', 'z1', 'Down', false, 64, 1000, 1, 1, 0, 0, now()),
		('h4', 'z1', 'Removed', true, 64, 1000, 1, 1, 0, 0, now()),
		('h5', 'z2', 'Up', true, 2, 512, 1, 1, 1, 256, now())`); err != nil {
		t.Fatal(err)
	}
	inv, err := r.Inventory(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if inv.VMsByState["Active"] != 4 || inv.VMsByState["Stopped"] != 1 || len(inv.VMsByState) != 2 {
		t.Errorf("VMs by state %v", inv.VMsByState)
	}
	if inv.HostsByStatus["Up"] != 3 || inv.HostsByStatus["Down"] != 1 || inv.HostsByStatus["Removed"] != 1 {
		t.Errorf("hosts by status %v", inv.HostsByStatus)
	}
	want := []ZoneFree{{"z1", 12, 1300}, {"z2", 1, 256}}
	if len(inv.Zones) != 2 || inv.Zones[0] != want[0] || inv.Zones[1] != want[1] {
		t.Errorf("zones %v, want %v", inv.Zones, want)
	}
}
