package vm

import (
	"testing"
	"time"
	"unsafe"

	"github.com/vmplane/vmplane/schemas"
)

// An idle VM pays for storage only with the nil pointer of
// VmRecord.Storage, and for what most VMs leave zero with the nil pointer
// of VmRecord.Rare: the record takes 384 bytes, all of its size class.
// At 392 it goes to the 416-byte class: 32 B per VM in the storm's heap.
// A VM deployed with no template, data disk or network has no storage at
// all, in the machine and in its encoding.
func TestIdleVmStaysSmall(t *testing.T) {
	if n := unsafe.Sizeof(schemas.VmRecord{}); n > 384 {
		t.Errorf("VmRecord is %d bytes, more than 384: keep what most VMs lack in VmRecord.Rare", n)
	}
	m := New(DefaultConfig())
	now := time.UnixMilli(1_000_000).UTC()
	deploy := func(d *schemas.Deploy) *schemas.VmRecord {
		d.VmCommand = schemas.VmCommand{CommandID: "d1", VmID: "vm1", Account: "acme"}
		d.ZoneID, d.Name = "z1", "web"
		s, _ := m.Step(nil, schemas.Record{Topic: schemas.TopicVmCommands, Key: "vm1", Value: d}, now)
		return restore(t, s)
	}
	if s := deploy(&schemas.Deploy{}); s == nil || s.Storage != nil {
		t.Errorf("a VM deployed with no storage has storage %+v", s.Storage)
	}
	s := deploy(&schemas.Deploy{Template: schemas.Template{ID: "t1", SizeMB: 2048}, RootSizeMB: 1024, NetworkIDs: []string{"n1", "n2"}})
	st := s.Storage
	if st == nil || len(st.Volumes) != 1 || len(st.Nics) != 2 {
		t.Fatalf("storage %+v, want a root and two NICs", st)
	}
	if v := st.Volumes[0]; v.SizeMB != 2048 || v.Kind != schemas.VolumeRoot || v.TemplateID != "t1" {
		t.Errorf("root %+v: want the template's 2048 MiB, more than the 1024 asked for", v)
	}
	if st.Nics[1].NicID != "vm1-nic-1" || st.Nics[1].DeviceID != 1 || st.Nics[1].NetworkID != "n2" {
		t.Errorf("second NIC %+v", st.Nics[1])
	}
}

// A Deploy whose storage request makes no sense is refused before any VM
// exists.
func TestDeployStorageRefused(t *testing.T) {
	m := New(DefaultConfig())
	now := time.UnixMilli(1_000_000).UTC()
	for _, d := range []*schemas.Deploy{
		{RootSizeMB: -1, Template: schemas.Template{ID: "t1"}},
		{DataDiskMB: -5},
		{DataDiskMB: maxVolumeMB + 1},
		{RootSizeMB: 1024},
		{NetworkIDs: []string{"n1", ""}},
	} {
		d.VmCommand = schemas.VmCommand{CommandID: "d1", VmID: "vm1", Account: "acme"}
		s, out := m.Step(nil, schemas.Record{Topic: schemas.TopicVmCommands, Key: "vm1", Value: d}, now)
		if s != nil || len(out) != 1 {
			t.Errorf("%+v: state %v, %d outputs", d, s, len(out))
			continue
		}
		if r, ok := out[0].Value.(*schemas.JobRejected); !ok || r.Reason != "Invalid" {
			t.Errorf("%+v: got %+v, want JobRejected{Invalid}", d, out[0].Value)
		}
	}
}
