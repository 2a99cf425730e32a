package main

import (
	"strings"
	"testing"
	"time"

	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

// storageStack is the test stack with a template, a pool with vm-1's root
// volume, the zone's default network with vm-1's NIC, and a pool whose
// last change was refused.
func storageStack(t *testing.T) *stack {
	s := newStack(t)
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	s.rm.PutTemplate(readmodel.Template{ID: "tiny-linux", Name: "tiny-linux", Format: "qcow2", SizeMB: 1024, OsType: "Linux (busybox)", CreatedAt: t0})
	s.rm.PutPool(readmodel.Pool{ID: "pool-zone-1-primary", ZoneID: "zone-1", Name: "primary", Scope: "Zone", Path: "/srv/primary",
		CapacityMB: 100 << 10, UsedMB: 25 << 10, Volumes: 1, State: "Up", Applied: true, Tags: []string{"ssd"}})
	s.rm.PutPool(readmodel.Pool{ID: "pool-zone-1-local", ZoneID: "zone-1", Name: "local", Scope: "Host", HostID: "host-2",
		Path: "/srv/local", CapacityMB: 10 << 10, State: "Up", Applied: true, LastError: "capacity below what its volumes use"})
	s.rm.PutNetwork(readmodel.Network{ID: "net-zone-1-guest", ZoneID: "zone-1", Name: "guest", Cidr: "10.1.0.0/24", Gateway: "10.1.0.1",
		Default: true, Size: 253, Allocated: 3, Applied: true})
	s.rm.PutVolume(readmodel.Volume{ID: "vol-1", VmID: "vm-1", Account: "acct-a", ZoneID: "zone-1", Name: "root", Kind: "Root",
		PoolID: "pool-zone-1-primary", SizeMB: 25 << 10, TemplateID: "tiny-linux", State: "Ready", CreatedAt: t0,
		Snapshots: []readmodel.VolumeSnapshot{{VolumeID: "vol-1", Name: "before", JobID: "job-s", TakenAt: t0}}})
	s.rm.PutNic(readmodel.Nic{ID: "nic-1", VmID: "vm-1", NetworkID: "net-zone-1-guest", MAC: "02:00:0a:01:00:02", IP: "10.1.0.2", Gateway: "10.1.0.1"})
	return s
}

func TestStorageCommands(t *testing.T) {
	s := storageStack(t)
	for _, tc := range []struct {
		key  string
		args []string
		want []string
	}{
		{s.user, []string{"template", "list"}, []string{"tiny-linux", "qcow2", "Linux (busybox)"}},
		{s.user, []string{"template", "get", "tiny-linux"}, []string{"size:", "1 GiB"}},
		{s.admin, []string{"pool", "list"}, []string{"pool-zone-1-primary", "25/100", "25%", "Host host-2", "capacity below what its volumes use"}},
		{s.admin, []string{"pool", "get", "pool-zone-1-primary"}, []string{"used:", "25 of 100 GiB (25%), 1 volumes"}},
		{s.user, []string{"network", "list"}, []string{"10.1.0.0/24", "3/253", "250", "yes"}},
		{s.user, []string{"volume", "list"}, []string{"vol-1", "Root", "25", "pool-zone-1-primary", "vm-1"}},
		{s.user, []string{"volume", "list", "--vm", "vm-1", "--deleted"}, []string{"vol-1"}},
		{s.user, []string{"volume", "get", "vol-1"}, []string{"snapshot:", "before (job job-s, 2026-11-26T12:00:00Z)"}},
		{s.user, []string{"vm", "get", "vm-1"}, []string{"vol-1", "nic-1", "10.1.0.2", "02:00:0a:01:00:02"}},
		{s.admin, []string{"template", "create", "--name", "alpine", "--size", "2", "--os-type", "Alpine"}, []string{"created template alpine (alpine)"}},
		{s.admin, []string{"pool", "create", "--name", "fast", "--path", "/srv/fast", "--capacity", "500", "--tags", "ssd,nvme"},
			[]string{"asked for pool fast (pool-zone-1-fast): Up, 500 GiB"}},
		{s.admin, []string{"pool", "update", "pool-zone-1-primary", "--state", "Maintenance"}, []string{"asked to update pool primary", "Maintenance, 100 GiB"}},
		{s.admin, []string{"network", "create", "--name", "lab", "--cidr", "10.2.0.0/24", "--gateway", "10.2.0.1"},
			[]string{"asked for network lab (net-zone-1-lab): 10.2.0.0/24 gateway 10.2.0.1"}},
	} {
		code, out, errOut := s.run(t, tc.key, tc.args...)
		if code != 0 {
			t.Errorf("vmctl %s: exit %d: %s", strings.Join(tc.args, " "), code, errOut)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("vmctl %s: no %q in\n%s", strings.Join(tc.args, " "), w, out)
			}
		}
	}
	// The filter reaches the gateway: vm-9 has no volume.
	if code, out, errOut := s.run(t, s.user, "volume", "list", "--vm", "vm-9", "--output", "json"); code != 0 || strings.TrimSpace(out) != "[]" {
		t.Errorf("volume list --vm vm-9: exit %d %q %q", code, out, errOut)
	}
	// Refusals name what is wrong.
	for _, tc := range []struct {
		key  string
		args []string
		code int
		want string
	}{
		{s.user, []string{"pool", "list"}, 1, "admin"},
		{s.admin, []string{"pool", "create", "--name", "x", "--path", "srv", "--capacity", "1"}, 1, "path"},
		{s.admin, []string{"pool", "delete", "pool-zone-1-primary"}, 1, "holds 1 volumes"},
		{s.admin, []string{"pool", "update", "pool-zone-1-primary"}, 2, "needs --capacity"},
		{s.user, []string{"vm", "deploy", "--name", "w", "--offering", "small", "--template", "nope"}, 1, `template "nope" does not exist`},
	} {
		code, _, errOut := s.run(t, tc.key, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("vmctl %s: exit %d %q, want %d and %q", strings.Join(tc.args, " "), code, errOut, tc.code, tc.want)
		}
	}
}

func TestDeployWithStorageFlags(t *testing.T) {
	s := storageStack(t)
	code, _, errOut := s.run(t, s.user, "vm", "deploy", "--name", "web-9", "--offering", "small", "--template", "tiny-linux",
		"--root-disk", "8", "--data-disk", "4", "--network", "guest")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var d *schemas.Deploy
	for _, r := range s.rec.Records() {
		if v, ok := r.Value.(*schemas.Deploy); ok {
			d = v
		}
	}
	if d == nil || d.Template.ID != "tiny-linux" || d.RootSizeMB != 8<<10 || d.DataDiskMB != 4<<10 ||
		len(d.NetworkIDs) != 1 || d.NetworkIDs[0] != "net-zone-1-guest" {
		t.Fatalf("deploy %+v", d)
	}
}

// The volume actions post to the volume, which names its VM.
func TestVolumeActionCommands(t *testing.T) {
	s := storageStack(t)
	s.rm.PutVM(readmodel.VM{ID: "vm-x", Account: "acct-a"}) // no allowed actions yet: the processor judges
	s.rm.PutVolume(readmodel.Volume{ID: "vol-x", VmID: "vm-x", Account: "acct-a", Kind: "Data", State: "Ready"})
	for _, tc := range []struct {
		args  []string
		check func(v any) bool
	}{
		{[]string{"volume", "resize", "vol-x", "--size", "20"}, func(v any) bool {
			r, ok := v.(*schemas.ResizeVolume)
			return ok && r.VmID == "vm-x" && r.VolumeID == "vol-x" && r.SizeGB == 20
		}},
		{[]string{"volume", "snapshot", "vol-x", "--name", "before"}, func(v any) bool {
			r, ok := v.(*schemas.SnapshotVolume)
			return ok && r.VolumeID == "vol-x" && r.SnapshotName == "before"
		}},
		{[]string{"volume", "detach", "vol-x"}, func(v any) bool {
			r, ok := v.(*schemas.DetachVolume)
			return ok && r.VolumeID == "vol-x"
		}},
	} {
		code, _, errOut := s.run(t, s.user, tc.args...)
		if code != 0 {
			t.Fatalf("vmctl %s: exit %d: %s", strings.Join(tc.args, " "), code, errOut)
		}
		recs := s.rec.Records()
		if last := recs[len(recs)-1]; last.Key != "vm-x" || !tc.check(last.Value) {
			t.Errorf("vmctl %s published %s %+v", strings.Join(tc.args, " "), last.Key, last.Value)
		}
	}
	if code, _, errOut := s.run(t, s.user, "volume", "resize", "vol-x"); code != 2 || !strings.Contains(errOut, "needs --size") {
		t.Errorf("resize without a size: exit %d %q", code, errOut)
	}
}
