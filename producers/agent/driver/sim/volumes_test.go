package sim

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/vmplane/vmplane/producers/agent"
	"github.com/vmplane/vmplane/schemas"
)

func volumeIDs(vs []schemas.Volume) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.VolumeID)
	}
	return out
}

// TestVolumes: a VM's volumes and NICs are as Start and the volume
// operations left them, and the operations a hypervisor refuses fail.
func TestVolumes(t *testing.T) {
	ctx := t.Context()
	d := newSim(t, Config{})
	root := schemas.Volume{VolumeID: "v1-root", Kind: schemas.VolumeRoot, SizeMB: 2048, TemplateID: "t1", PoolID: "p1"}
	data := schemas.Volume{VolumeID: "v1-data-1", Kind: schemas.VolumeData, DeviceID: 1, SizeMB: 1024, PoolID: "p1"}
	nic := schemas.Nic{NicID: "v1-nic-0", NetworkID: "n1", IP: "10.1.0.5"}
	s := spec("v1")
	s.Volumes, s.Nics = []schemas.Volume{root, data}, []schemas.Nic{nic}
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	must("start", d.Start(ctx, "h1", s))
	check := func(wantAttached, wantDetached []string) {
		t.Helper()
		att, det, nics, err := d.Disks("h1", "v1")
		must("disks", err)
		if !slices.Equal(volumeIDs(att), wantAttached) || !slices.Equal(volumeIDs(det), wantDetached) {
			t.Fatalf("attached %v detached %v, want %v and %v", volumeIDs(att), volumeIDs(det), wantAttached, wantDetached)
		}
		if len(nics) != 1 || nics[0] != nic {
			t.Fatalf("nics %+v", nics)
		}
	}
	check([]string{"v1-root", "v1-data-1"}, nil)

	extra := schemas.Volume{VolumeID: "v1-data-2", Kind: schemas.VolumeData, DeviceID: 2, SizeMB: 512, PoolID: "p1"}
	must("attach", d.AttachVolume(ctx, "h1", "v1", extra))
	must("attach again", d.AttachVolume(ctx, "h1", "v1", extra))
	check([]string{"v1-root", "v1-data-1", "v1-data-2"}, nil)
	must("detach", d.DetachVolume(ctx, "h1", "v1", extra))
	must("detach again", d.DetachVolume(ctx, "h1", "v1", extra))
	check([]string{"v1-root", "v1-data-1"}, []string{"v1-data-2"})

	grown := data
	grown.SizeMB = 4096
	must("resize", d.ResizeVolume(ctx, "h1", "v1", grown))
	att, _, _, _ := d.Disks("h1", "v1")
	if att[1].SizeMB != 4096 {
		t.Fatalf("resized volume has %d MiB", att[1].SizeMB)
	}
	must("snapshot", d.SnapshotVolume(ctx, "h1", "v1", root, "s1"))
	must("snapshot again", d.SnapshotVolume(ctx, "h1", "v1", root, "s1"))
	if names, err := d.VolumeSnapshots("h1", "v1", "v1-root"); err != nil || !slices.Equal(names, []string{"s1"}) {
		t.Fatalf("snapshots %v, %v", names, err)
	}

	// A restart with the VM's attached volumes keeps the detached one.
	must("stop", d.Stop(ctx, "h1", "v1", false))
	s.Volumes = []schemas.Volume{root, grown}
	must("start again", d.Start(ctx, "h1", s))
	check([]string{"v1-root", "v1-data-1"}, []string{"v1-data-2"})

	for _, tt := range []struct {
		name string
		err  error
		want error
	}{
		{"attach on an unknown vm", d.AttachVolume(ctx, "h1", "nope", extra), agent.ErrUnknownVM},
		{"detach an unknown volume", d.DetachVolume(ctx, "h1", "v1", schemas.Volume{VolumeID: "x"}), ErrUnknownVolume},
		{"detach the root", d.DetachVolume(ctx, "h1", "v1", root), ErrInvalidVolume},
		{"shrink", d.ResizeVolume(ctx, "h1", "v1", data), ErrInvalidVolume},
		{"resize an unknown volume", d.ResizeVolume(ctx, "h1", "v1", schemas.Volume{VolumeID: "x", SizeMB: 9}), ErrUnknownVolume},
		{"snapshot an unknown volume", d.SnapshotVolume(ctx, "h1", "v1", schemas.Volume{VolumeID: "x"}, "s"), ErrUnknownVolume},
		{"delete an attached volume", d.DeleteVolume(ctx, "h1", "v1", data), ErrVolumeAttached},
		{"no volume id", d.AttachVolume(ctx, "h1", "v1", schemas.Volume{}), ErrInvalidVolume},
		{"unknown host", d.AttachVolume(ctx, "nope", "v1", extra), agent.ErrUnknownHost},
	} {
		if !errors.Is(tt.err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, tt.err, tt.want)
		}
	}
	check([]string{"v1-root", "v1-data-1"}, []string{"v1-data-2"})

	must("delete", d.DeleteVolume(ctx, "h1", "v1", extra))
	must("delete again", d.DeleteVolume(ctx, "h1", "v1", extra))
	check([]string{"v1-root", "v1-data-1"}, nil)

	// Rebuild makes the root of its template again, without snapshots.
	rebuilt := root
	rebuilt.TemplateID = "t2"
	must("rebuild", d.Rebuild(ctx, "h1", "v1", "t2", []schemas.Volume{rebuilt, grown}))
	att, _, _, _ = d.Disks("h1", "v1")
	if att[0].TemplateID != "t2" {
		t.Fatalf("root after rebuild: %+v", att[0])
	}
	if names, _ := d.VolumeSnapshots("h1", "v1", "v1-root"); len(names) != 0 {
		t.Fatalf("root snapshots after rebuild: %v", names)
	}

	// The disks move with a live migration and go with a destroy.
	must("migrate", d.Migrate(ctx, "h1", "v1", "h2", agent.VMSpec{ID: "v1"}))
	if att, _, _, _ := d.Disks("h1", "v1"); len(att) != 0 {
		t.Fatalf("source still has %v", volumeIDs(att))
	}
	if att, _, nics, _ := d.Disks("h2", "v1"); len(att) != 2 || len(nics) != 1 {
		t.Fatalf("destination has %v and %d nics", volumeIDs(att), len(nics))
	}
	must("destroy", d.Destroy(ctx, "h2", "v1", nil))
	if att, det, nics, _ := d.Disks("h2", "v1"); att != nil || det != nil || nics != nil {
		t.Fatalf("a destroyed VM keeps %v %v %v", att, det, nics)
	}
	if len(d.hosts["h2"].disks) != 0 {
		t.Fatalf("the host keeps an entry for the destroyed VM")
	}
}

// A VM with no volumes or NICs leaves no entry: the hosts of a benchmark
// keep nothing for storage.
func TestNoVolumesNoCost(t *testing.T) {
	d := newSim(t, Config{})
	if err := d.Start(t.Context(), "h1", spec("v1")); err != nil {
		t.Fatal(err)
	}
	if d.hosts["h1"].disks != nil {
		t.Fatalf("disks %v for a VM with none", d.hosts["h1"].disks)
	}
	if allocs := testing.AllocsPerRun(100, func() { d.hosts["h1"].started("v1", nil, nil) }); allocs != 0 {
		t.Fatalf("%v allocations to start a VM with no storage", allocs)
	}
}

// The disks survive a restart through the state file.
func TestVolumesSurviveRestart(t *testing.T) {
	ctx := t.Context()
	cfg := stateConfig(t)
	d := newSim(t, cfg)
	s := spec("a")
	s.Volumes = []schemas.Volume{{VolumeID: "a-root", Kind: schemas.VolumeRoot, SizeMB: 100}}
	s.Nics = []schemas.Nic{{NicID: "a-nic-0", NetworkID: "n1", IP: "10.0.0.2"}}
	if err := d.Start(ctx, "h1", s); err != nil {
		t.Fatal(err)
	}
	if err := d.SnapshotVolume(ctx, "h1", "a", s.Volumes[0], "s1"); err != nil {
		t.Fatal(err)
	}
	d2 := newSim(t, cfg)
	if got, want := d2.snapshot(), d.snapshot(); !reflect.DeepEqual(got, want) {
		t.Fatalf("restored state\n%+v\nwant\n%+v", got, want)
	}
	if names, err := d2.VolumeSnapshots("h1", "a", "a-root"); err != nil || !slices.Equal(names, []string{"s1"}) {
		t.Fatalf("snapshots after the restart %v, %v", names, err)
	}
}
