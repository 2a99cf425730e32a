package gateway

import (
	"encoding/json"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/readmodel"
)

// The JSON of templates, pools, networks, volumes and NICs (docs/design.md
// §10). Sizes are kept in MiB in the records; the API speaks GiB where a
// request does, and shows both where a size may not be a whole GiB.

const mbPerGB = 1024

func templateJSON(t readmodel.Template) api.Template {
	return api.Template{ID: t.ID, Name: t.Name, Format: t.Format, SizeGB: t.SizeMB / mbPerGB, OsType: t.OsType,
		Deleted: t.Deleted, CreatedAt: t.CreatedAt.UTC()}
}

// poolRefused is the state a pool whose creation was refused shows.
const poolRefused = "Refused"

func poolJSON(p readmodel.Pool) api.Pool {
	out := api.Pool{ID: p.ID, ZoneID: p.ZoneID, Name: p.Name, Scope: p.Scope, ClusterID: p.ClusterID, HostID: p.HostID,
		Path: p.Path, CapacityGB: p.CapacityMB / mbPerGB, UsedGB: p.UsedMB / mbPerGB, CapacityMB: p.CapacityMB,
		UsedMB: p.UsedMB, Volumes: p.Volumes, Tags: nonNil(p.Tags), State: p.State, LastError: p.LastError,
		UpdatedAt: p.UpdatedAt.UTC()}
	if !p.Applied {
		out.State = poolRefused
	}
	return out
}

func networkJSON(n readmodel.Network) api.Network {
	out := api.Network{ID: n.ID, ZoneID: n.ZoneID, Name: n.Name, Cidr: n.Cidr, Gateway: n.Gateway, Default: n.Default,
		Size: n.Size, Allocated: n.Allocated, State: "Ready", LastError: n.LastError, UpdatedAt: n.UpdatedAt.UTC()}
	if !n.Applied {
		out.State = poolRefused
	}
	return out
}

func volumeJSON(v readmodel.Volume) api.Volume {
	out := api.Volume{ID: v.ID, VmID: v.VmID, Account: v.Account, ZoneID: v.ZoneID, Name: v.Name, Kind: v.Kind,
		DeviceID: v.DeviceID, PoolID: v.PoolID, SizeGB: v.SizeMB / mbPerGB, SizeMB: v.SizeMB, TemplateID: v.TemplateID,
		State: v.State, Deleted: v.Deleted, CreatedAt: v.CreatedAt.UTC()}
	for _, s := range v.Snapshots {
		out.Snapshots = append(out.Snapshots, api.VolumeSnapshot{Name: s.Name, JobID: s.JobID, TakenAt: s.TakenAt.UTC()})
	}
	return out
}

func nicJSON(n readmodel.Nic) api.Nic {
	return api.Nic{ID: n.ID, NetworkID: n.NetworkID, DeviceID: n.DeviceID, MAC: n.MAC, IP: n.IP, Gateway: n.Gateway, Cidr: n.Cidr}
}

// withStorage adds a VM's volumes and NICs to its JSON.
func withStorage(v api.VM, s readmodel.VMStorage) api.VM {
	for _, vol := range s.Volumes {
		v.Volumes = append(v.Volumes, volumeJSON(vol))
	}
	for _, n := range s.Nics {
		v.Nics = append(v.Nics, nicJSON(n))
	}
	return v
}

// storageTag is a short digest of a VM's volumes and NICs, for its ETag.
func storageTag(v api.VM) string {
	h := fnv.New64a()
	_ = json.NewEncoder(h).Encode([]any{v.Volumes, v.Nics}) // a hash never fails to write
	return strconv.FormatUint(h.Sum64(), 36)
}

// msTime is a record's Unix milliseconds as the API's UTC time.
func msTime(v int64) time.Time { return time.UnixMilli(v).UTC() }
