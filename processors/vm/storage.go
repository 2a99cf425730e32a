package vm

import (
	"fmt"
	"slices"
	"strings"

	"github.com/vmplane/vmplane/schemas"
)

// A VM's storage and network (docs/design.md §5.7): its template, volumes
// and NICs, kept out of line in VmRecord.Storage, nil for a VM with none,
// so that the many VMs with only CPU and memory cost one nil pointer.
//
// Placement gives each volume a pool and each NIC an address in the
// decision that places the VM; the record keeps them, and every PlaceVm
// after that carries them, so that placement keeps the VM on hosts that
// reach its pools and the NICs keep their addresses. The agent commands
// that make, move or remove the VM carry them too. Ids derive from the VM
// id (and, for volumes made after the deploy, the epoch of the job that
// made them), so a replay makes the same ones and no two are alike.

// maxVolumes bounds a VM's volumes, attached and detached: a guest has a
// bounded number of disk slots, and the record stays small.
const maxVolumes = 16

// maxVolumeMB bounds a volume's size (1 PiB): sizes in GiB times 1024 stay
// far from overflowing, and a larger request is a mistake.
const maxVolumeMB = 1 << 30

// storageOf is the VM's storage; the zero value for none.
func storageOf(s *schemas.VmRecord) *schemas.VmStorage {
	if s.Storage == nil {
		return &schemas.VmStorage{}
	}
	return s.Storage
}

// storage is the working copy's storage, made when it has none; compact
// drops it again when it stays empty.
func (t *tx) storage() *schemas.VmStorage {
	if t.s.Storage == nil {
		t.s.Storage = &schemas.VmStorage{}
	}
	return t.s.Storage
}

func cloneStorage(st *schemas.VmStorage) *schemas.VmStorage {
	if st == nil {
		return nil
	}
	return &schemas.VmStorage{TemplateID: st.TemplateID, StorageTags: slices.Clone(st.StorageTags),
		Volumes: slices.Clone(st.Volumes), Nics: slices.Clone(st.Nics)}
}

func emptyStorage(st *schemas.VmStorage) bool {
	return st.TemplateID == "" && len(st.Volumes) == 0 && len(st.Nics) == 0
}

// rootVolumeID, dataVolumeID and nicID name what a deploy makes; a volume
// made later (an attach, a recover) adds the epoch of its job, which no
// other job of the VM shares.
func rootVolumeID(vm string, epoch int64) string {
	if epoch == 0 {
		return schemas.BoundID(vm + "-root")
	}
	return schemas.BoundID(fmt.Sprintf("%s-root-e%d", vm, epoch))
}

func dataVolumeID(vm string, device int32, epoch int64) string {
	if epoch == 0 {
		return schemas.BoundID(fmt.Sprintf("%s-data-%d", vm, device))
	}
	return schemas.BoundID(fmt.Sprintf("%s-data-%d-e%d", vm, device, epoch))
}

func nicID(vm string, device int) string {
	return schemas.BoundID(fmt.Sprintf("%s-nic-%d", vm, device))
}

// deployRefused checks a Deploy's storage request: a reason and detail for
// JobRejected, or "" to go on.
func deployRefused(d *schemas.Deploy) (reason, detail string) {
	switch {
	case d.RootSizeMB < 0 || d.RootSizeMB > maxVolumeMB:
		return schemas.CodeInvalid, fmt.Sprintf("root_size_mb %d is not between 0 and %d", d.RootSizeMB, maxVolumeMB)
	case d.DataDiskMB < 0 || d.DataDiskMB > maxVolumeMB:
		return schemas.CodeInvalid, fmt.Sprintf("data_disk_mb %d is not between 0 and %d", d.DataDiskMB, maxVolumeMB)
	case d.Template.ID == "" && d.RootSizeMB > 0:
		return schemas.CodeInvalid, "root_size_mb needs a template: a VM with no template has no root volume"
	case d.Template.SizeMB < 0:
		return schemas.CodeInvalid, fmt.Sprintf("template %s has a negative size", d.Template.ID)
	case len(d.NetworkIDs) > maxVolumes:
		return schemas.CodeInvalid, fmt.Sprintf("%d networks; a VM takes at most %d NICs", len(d.NetworkIDs), maxVolumes)
	case slices.Contains(d.NetworkIDs, ""):
		return schemas.CodeInvalid, "network_ids holds an empty id"
	}
	return "", ""
}

// deployStorage is the storage a Deploy asks for; nil for none. The root
// is at least as big as its template.
func deployStorage(vm, name string, d *schemas.Deploy, now int64) *schemas.VmStorage {
	if d.Template.ID == "" && d.DataDiskMB == 0 && len(d.NetworkIDs) == 0 {
		return nil
	}
	st := &schemas.VmStorage{TemplateID: d.Template.ID, StorageTags: d.StorageTags}
	if d.Template.ID != "" {
		st.Volumes = append(st.Volumes, schemas.Volume{VolumeID: rootVolumeID(vm, 0), Name: name + "-root", Kind: schemas.VolumeRoot,
			SizeMB: max(d.RootSizeMB, d.Template.SizeMB), TemplateID: d.Template.ID, State: schemas.VolumeAllocated, CreatedAt: now})
	}
	if d.DataDiskMB > 0 {
		st.Volumes = append(st.Volumes, schemas.Volume{VolumeID: dataVolumeID(vm, 1, 0), Name: name + "-data-1", Kind: schemas.VolumeData,
			DeviceID: 1, SizeMB: d.DataDiskMB, State: schemas.VolumeAllocated, CreatedAt: now})
	}
	for i, n := range d.NetworkIDs {
		st.Nics = append(st.Nics, schemas.Nic{NicID: nicID(vm, i), NetworkID: n, DeviceID: int32(i)})
	}
	return st
}

// placedVolumes are every volume of the VM, detached ones too, as PlaceVm
// and ResizeVm carry them: the VM's host must reach the pool of each, so
// that a detached volume is attached again, deleted or destroyed by an
// agent that reaches its file (a volume on host-local storage keeps its VM
// on that host, attached or not).
func placedVolumes(s *schemas.VmRecord) []schemas.Volume { return storageOf(s).Volumes }

// attachedVolumes are the volumes the VM runs with: all but the detached
// ones, the root first. StartVm and MigrateVm carry these.
func attachedVolumes(s *schemas.VmRecord) []schemas.Volume {
	var out []schemas.Volume
	for _, v := range storageOf(s).Volumes {
		if v.State != schemas.VolumeDetached {
			out = append(out, v)
		}
	}
	return out
}

// unplacedVolumes lists the volumes the record holds on no pool: any claim
// placement holds for them is one of a decision the VM never took.
func unplacedVolumes(s *schemas.VmRecord) []string {
	var ids []string
	for _, v := range storageOf(s).Volumes {
		if v.PoolID == "" {
			ids = append(ids, v.VolumeID)
		}
	}
	return ids
}

// unaddressed says whether the VM has NICs and none holds an address: any
// address placement holds for them is of a decision the VM never took.
// NICs are all addressed in one decision, so a VM has both kinds never.
func unaddressed(s *schemas.VmRecord) bool {
	nics := storageOf(s).Nics
	return len(nics) > 0 && !slices.ContainsFunc(nics, func(n schemas.Nic) bool { return n.IP != "" })
}

// nicsOf is the VM's NICs; nil for none.
func nicsOf(s *schemas.VmRecord) []schemas.Nic { return storageOf(s).Nics }

// volumeIndex is the index of a volume of the VM; -1 for none.
func volumeIndex(s *schemas.VmRecord, id string) int {
	return slices.IndexFunc(storageOf(s).Volumes, func(v schemas.Volume) bool { return v.VolumeID == id })
}

// placedStorage records what a placement decision gave the VM: the pool of
// each volume, the address of each NIC. A field the decision leaves empty
// keeps what the record has.
func (t *tx) placedStorage(d *schemas.PlacementDecided) {
	if t.s.Storage == nil || (len(d.Volumes) == 0 && len(d.Nics) == 0) {
		return
	}
	st := t.storage()
	for _, dv := range d.Volumes {
		if i := volumeIndex(t.s, dv.VolumeID); i >= 0 && dv.PoolID != "" {
			st.Volumes[i].PoolID, st.Volumes[i].PoolPath = dv.PoolID, dv.PoolPath
		}
	}
	for _, dn := range d.Nics {
		i := slices.IndexFunc(st.Nics, func(n schemas.Nic) bool { return n.NicID == dn.NicID })
		if i < 0 || dn.IP == "" {
			continue
		}
		n := &st.Nics[i]
		n.IP, n.MAC, n.Gateway, n.Cidr = dn.IP, dn.MAC, dn.Gateway, dn.Cidr
	}
}

// nicsText describes the VM's NICs and their addresses, for a step.
func nicsText(s *schemas.VmRecord) (text string, ips []string) {
	var parts []string
	for _, n := range nicsOf(s) {
		ip := n.IP
		if ip == "" {
			ip = "no address"
		}
		ips = append(ips, n.IP)
		parts = append(parts, fmt.Sprintf("%s %s on network %s", n.NicID, ip, n.NetworkID))
	}
	return strings.Join(parts, ", "), ips
}

// nicsTaken emits NicChanged for each NIC: the Networking step of a deploy
// gave them their addresses.
func (t *tx) nicsTaken() {
	s := t.s
	for _, n := range nicsOf(s) {
		t.event(&schemas.NicChanged{VmID: s.VmID, Account: s.Account, ZoneID: s.ZoneID, Nic: n, At: t.ms})
	}
}

// volumesText describes the VM's attached volumes and their pools, for a
// step.
func volumesText(s *schemas.VmRecord) (text string, pools []string) {
	var parts []string
	for _, v := range attachedVolumes(s) {
		where := "on no pool"
		if v.PoolID != "" {
			where = "on pool " + v.PoolID
		}
		if !slices.Contains(pools, v.PoolID) {
			pools = append(pools, v.PoolID)
		}
		parts = append(parts, fmt.Sprintf("%s (%d MiB) %s", v.VolumeID, v.SizeMB, where))
	}
	return strings.Join(parts, ", "), pools
}

// volumesPlaced tells, with a VolumeChanged each, where the VM's
// Allocated volumes are now: on the pools placement chose, their files
// not made yet.
func (t *tx) volumesPlaced() {
	s := t.s
	if s.Storage == nil {
		return
	}
	for _, v := range s.Storage.Volumes {
		if v.State == schemas.VolumeAllocated && v.PoolID != "" {
			t.volumeChanged(v, false)
		}
	}
}

// volumesReady makes the VM's Allocated volumes Ready, each with a
// VolumeChanged, once a host answered ok to the StartVm that made their
// files. An agent makes the file of an Allocated volume it lacks, and
// refuses a Ready one whose file is missing (a pool not mounted, a lost
// file) rather than give the guest a blank disk.
func (t *tx) volumesReady() {
	s := t.s
	if s.Storage == nil {
		return
	}
	for i := range s.Storage.Volumes {
		if v := &s.Storage.Volumes[i]; v.State == schemas.VolumeAllocated {
			v.State = schemas.VolumeReady
			t.volumeChanged(*v, false)
		}
	}
}

// volumeChanged emits VolumeChanged for v, of the running job.
func (t *tx) volumeChanged(v schemas.Volume, deleted bool) {
	s := t.s
	t.event(&schemas.VolumeChanged{VmID: s.VmID, Account: s.Account, ZoneID: s.ZoneID, Volume: v, Deleted: deleted, JobID: s.Job.JobID, At: t.ms})
}

// volumesDestroyed takes the volumes a terminate destroyed: their pool
// claims go (ReleaseVm{all_volumes}), each with VolumeChanged{deleted}.
// The record keeps them, as the Deleted VM's last disks, for a Recover to
// make again.
func (t *tx) volumesDestroyed() {
	s := t.s
	if len(storageOf(s).Volumes) == 0 || s.ZoneID == "" {
		return
	}
	t.emit(schemas.TopicPlacementRequests, s.ZoneID, &schemas.ReleaseVm{RequestID: schemas.BoundID(s.Job.JobID + "-volumes"),
		VmID: s.VmID, ZoneID: s.ZoneID, AllVolumes: true, At: t.ms})
	for _, v := range s.Storage.Volumes {
		t.volumeChanged(v, true)
	}
}

// nicsReleased gives the addresses of an expunged VM back: ReleaseVm{nics}
// and NicChanged{released} each.
func (t *tx) nicsReleased() {
	s := t.s
	if len(nicsOf(s)) == 0 || s.ZoneID == "" {
		return
	}
	// The id names the expunge time: a later VM of the same id expunges
	// under another.
	t.emit(schemas.TopicPlacementRequests, s.ZoneID, &schemas.ReleaseVm{RequestID: schemas.BoundID(fmt.Sprintf("%s-expunge-%d", s.VmID, s.Rare.ExpungeAt)),
		VmID: s.VmID, ZoneID: s.ZoneID, Nics: true, At: t.ms})
	for _, n := range s.Storage.Nics {
		t.event(&schemas.NicChanged{VmID: s.VmID, Account: s.Account, ZoneID: s.ZoneID, Nic: n, Released: true, At: t.ms})
	}
}

// volumesRemade gives a recovered VM new volumes in place of those its
// terminate destroyed: the same kinds, devices, templates and sizes, new
// ids, no pool (its next Start places them). Detached volumes went with the
// others and are not made again.
func (t *tx) volumesRemade() {
	s := t.s
	if s.Storage == nil {
		return
	}
	var fresh []schemas.Volume
	for _, v := range s.Storage.Volumes {
		if v.State == schemas.VolumeDetached {
			continue
		}
		id := dataVolumeID(s.VmID, v.DeviceID, s.Epoch)
		if v.Kind == schemas.VolumeRoot {
			id = rootVolumeID(s.VmID, s.Epoch)
		}
		nv := schemas.Volume{VolumeID: id, Name: v.Name, Kind: v.Kind, DeviceID: v.DeviceID, SizeMB: v.SizeMB,
			TemplateID: v.TemplateID, State: schemas.VolumeAllocated, CreatedAt: t.ms}
		fresh = append(fresh, nv)
		t.volumeChanged(nv, false)
	}
	s.Storage.Volumes = fresh
}
