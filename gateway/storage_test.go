package gateway_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/vmplane/vmplane/api"
	"github.com/vmplane/vmplane/gateway"
	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

// storageCase is one request to a storage route: who asks, what is
// answered, the field a 422 names, and what was published (nil: nothing).
type storageCase struct {
	name         string
	method, path string
	admin        bool
	body         any
	status       int
	field        string
	want         func(t *testing.T, r schemas.Record)
}

func (tt storageCase) run(t *testing.T) {
	t.Run(tt.name, func(t *testing.T) {
		e := newEnv(t, gateway.Config{})
		// A VM the read model has no allowed actions of yet.
		e.rm.PutVM(readmodel.VM{ID: "vm-new", Account: "acct-a"})
		key := e.alice
		if tt.admin {
			key = e.admin
		}
		rec := e.do(tt.method, tt.path, key, tt.body)
		wantStatus(t, rec, tt.status)
		if tt.field != "" {
			if b := decode[api.ErrorResponse](t, rec); b.Error.Details["field"] != tt.field {
				t.Fatalf("error names %v, want %s: %s", b.Error.Details, tt.field, b.Error.Message)
			}
		}
		recs := e.pub.Records()
		if tt.want == nil {
			if len(recs) != 0 {
				t.Fatalf("published %+v", recs)
			}
			return
		}
		if len(recs) != 1 {
			t.Fatalf("published %d records, want 1", len(recs))
		}
		if _, err := schemas.Marshal(recs[0].Value); err != nil {
			t.Fatalf("the published value does not encode: %v", err)
		}
		tt.want(t, recs[0])
	})
}

func TestTemplates(t *testing.T) {
	tmpl := func(check func(*schemas.Template) bool) func(*testing.T, schemas.Record) {
		return func(t *testing.T, r schemas.Record) {
			v, ok := r.Value.(*schemas.Template)
			if !ok || r.Topic != schemas.TopicCatalog || r.Key != schemas.TemplateKey(v.ID) || !check(v) {
				t.Fatalf("published %s %s %+v", r.Topic, r.Key, r.Value)
			}
		}
	}
	for _, tt := range []storageCase{
		{"create, id is the name", "POST", "/v1/templates", true, map[string]any{"name": "alpine", "format": "qcow2", "size_gb": 2, "os_type": "Alpine"}, 201, "",
			tmpl(func(v *schemas.Template) bool {
				return v.ID == "alpine" && v.SizeMB == 2048 && v.Format == "qcow2" && !v.Deleted
			})},
		{"create with an id", "POST", "/v1/templates", true, map[string]any{"id": "img-7", "name": "alpine", "format": "raw", "size_gb": 1, "os_type": "Alpine"}, 201, "",
			tmpl(func(v *schemas.Template) bool { return v.ID == "img-7" && v.Name == "alpine" })},
		{"a deleted template's id again", "POST", "/v1/templates", true, map[string]any{"name": "old-linux", "format": "raw", "size_gb": 1, "os_type": "Linux"}, 201, "",
			tmpl(func(v *schemas.Template) bool { return v.ID == "old-linux" && !v.Deleted })},
		{"name taken", "POST", "/v1/templates", true, map[string]any{"name": "tiny-linux", "format": "qcow2", "size_gb": 1, "os_type": "x"}, 409, "", nil},
		{"id taken", "POST", "/v1/templates", true, map[string]any{"id": "tiny-linux", "name": "other", "format": "qcow2", "size_gb": 1, "os_type": "x"}, 409, "", nil},
		{"format", "POST", "/v1/templates", true, map[string]any{"name": "a", "format": "vmdk", "size_gb": 1, "os_type": "x"}, 422, "format", nil},
		{"size", "POST", "/v1/templates", true, map[string]any{"name": "a", "format": "raw", "size_gb": 0, "os_type": "x"}, 422, "size_gb", nil},
		{"os type", "POST", "/v1/templates", true, map[string]any{"name": "a", "format": "raw", "size_gb": 1}, 422, "os_type", nil},
		{"name", "POST", "/v1/templates", true, map[string]any{"name": "Alpine 3", "format": "raw", "size_gb": 1, "os_type": "x"}, 422, "name", nil},
		{"a user may not create", "POST", "/v1/templates", false, map[string]any{"name": "a", "format": "raw", "size_gb": 1, "os_type": "x"}, 403, "", nil},
		{"delete marks it deleted", "DELETE", "/v1/templates/tiny-linux", true, nil, 200, "",
			tmpl(func(v *schemas.Template) bool { return v.ID == "tiny-linux" && v.Deleted && v.SizeMB == 1024 })},
		{"delete of a deleted one", "DELETE", "/v1/templates/old-linux", true, nil, 409, "", nil},
		{"delete of none", "DELETE", "/v1/templates/nope", true, nil, 404, "", nil},
		{"a user may not delete", "DELETE", "/v1/templates/tiny-linux", false, nil, 403, "", nil},
	} {
		tt.run(t)
	}

	e := newEnv(t, gateway.Config{})
	list := decode[api.List[api.Template]](t, e.do("GET", "/v1/templates", e.bob, nil))
	if len(list.Items) != 1 || list.Items[0].ID != "tiny-linux" || list.Items[0].SizeGB != 1 || list.Items[0].OsType != "Linux (busybox)" {
		t.Fatalf("templates %+v", list.Items)
	}
	if got := decode[api.Template](t, e.do("GET", "/v1/templates/old-linux", e.bob, nil)); !got.Deleted {
		t.Fatalf("old-linux %+v", got)
	}
}

func TestPools(t *testing.T) {
	pool := func(check func(*schemas.UpdateStoragePool) bool) func(*testing.T, schemas.Record) {
		return func(t *testing.T, r schemas.Record) {
			v, ok := r.Value.(*schemas.UpdateStoragePool)
			if !ok || r.Topic != schemas.TopicPlacementRequests || r.Key != v.ZoneID || v.RequestID == "" ||
				r.Headers["command_id"] != v.RequestID || !check(v) {
				t.Fatalf("published %s %s %+v", r.Topic, r.Key, r.Value)
			}
		}
	}
	body := func(kv ...any) map[string]any {
		b := map[string]any{"name": "fast", "scope": "Zone", "path": "/srv/pools/fast", "capacity_gb": 100}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(b, kv[i].(string))
				continue
			}
			b[kv[i].(string)] = kv[i+1]
		}
		return b
	}
	for _, tt := range []storageCase{
		{"create", "POST", "/v1/pools", true, body("tags", []string{"ssd"}), 202, "",
			pool(func(v *schemas.UpdateStoragePool) bool {
				return v.PoolID == "pool-zone-1-fast" && v.ZoneID == "zone-1" && v.CapacityMB == 100<<10 &&
					v.State == schemas.PoolUp && slices.Equal(v.Tags, []string{"ssd"}) && !v.Deleted
			})},
		{"a host's", "POST", "/v1/pools", true, body("scope", "Host", "host_id", "host-1", "zone_id", "zone-2"), 202, "",
			pool(func(v *schemas.UpdateStoragePool) bool { return v.PoolID == "pool-zone-2-fast" && v.HostID == "host-1" })},
		{"relative path", "POST", "/v1/pools", true, body("path", "srv/pools"), 422, "path", nil},
		{"unclean path", "POST", "/v1/pools", true, body("path", "/srv/../etc"), 422, "path", nil},
		{"root path", "POST", "/v1/pools", true, body("path", "/"), 422, "path", nil},
		{"scope", "POST", "/v1/pools", true, body("scope", "Region"), 422, "scope", nil},
		{"a cluster pool needs its cluster", "POST", "/v1/pools", true, body("scope", "Cluster"), 422, "cluster_id", nil},
		{"a zone pool has no host", "POST", "/v1/pools", true, body("host_id", "host-1"), 422, "host_id", nil},
		{"capacity", "POST", "/v1/pools", true, body("capacity_gb", 0), 422, "capacity_gb", nil},
		{"tags", "POST", "/v1/pools", true, body("tags", []string{"Fast SSD"}), 422, "tags", nil},
		{"name taken", "POST", "/v1/pools", true, body("name", "primary"), 409, "", nil},
		{"a user may not", "POST", "/v1/pools", false, body(), 403, "", nil},
		{"update keeps the rest", "PATCH", "/v1/pools/pool-zone-1-primary", true, map[string]any{"state": "Maintenance"}, 202, "",
			pool(func(v *schemas.UpdateStoragePool) bool {
				return v.State == schemas.PoolMaintenance && v.CapacityMB == 100<<10 && v.Path == "/srv/pools/primary" &&
					slices.Equal(v.Tags, []string{"ssd"}) && v.Name == "primary"
			})},
		{"capacity and tags", "PATCH", "/v1/pools/pool-zone-1-primary", true, map[string]any{"capacity_gb": 200, "tags": []string{}}, 202, "",
			pool(func(v *schemas.UpdateStoragePool) bool {
				return v.CapacityMB == 200<<10 && len(v.Tags) == 0 && v.State == "Up"
			})},
		{"below what is used", "PATCH", "/v1/pools/pool-zone-1-primary", true, map[string]any{"capacity_gb": 0}, 422, "capacity_gb", nil},
		{"state", "PATCH", "/v1/pools/pool-zone-1-primary", true, map[string]any{"state": "Gone"}, 422, "state", nil},
		{"unknown field", "PATCH", "/v1/pools/pool-zone-1-primary", true, map[string]any{"path": "/x"}, 422, "path", nil},
		{"a refused creation is no pool to change", "PATCH", "/v1/pools/pool-zone-1-refused", true, map[string]any{"state": "Up"}, 404, "", nil},
		{"delete", "DELETE", "/v1/pools/pool-zone-1-spare", true, nil, 202, "",
			pool(func(v *schemas.UpdateStoragePool) bool {
				return v.Deleted && v.PoolID == "pool-zone-1-spare" && v.ClusterID == "c1"
			})},
		{"delete with volumes", "DELETE", "/v1/pools/pool-zone-1-primary", true, nil, 409, "", nil},
		{"a user may not read", "GET", "/v1/pools/pool-zone-1-primary", false, nil, 403, "", nil},
	} {
		tt.run(t)
	}

	e := newEnv(t, gateway.Config{Capacity: fixedCapacity{}})
	list := decode[api.List[api.Pool]](t, e.do("GET", "/v1/pools", e.admin, nil))
	if len(list.Items) != 2 || list.Items[0].ID != "pool-zone-1-primary" || list.Items[0].UsedGB != 1 || list.Items[0].CapacityGB != 100 {
		t.Fatalf("pools %+v", list.Items)
	}
	if p := decode[api.Pool](t, e.do("GET", "/v1/pools/pool-zone-1-spare", e.admin, nil)); p.LastError != "no such cluster" || p.State != "Up" {
		t.Fatalf("spare %+v", p)
	}
	if p := decode[api.Pool](t, e.do("GET", "/v1/pools/pool-zone-1-refused", e.admin, nil)); p.State != "Refused" || p.LastError == "" {
		t.Fatalf("refused %+v", p)
	}
	c := decode[api.ZoneCapacity](t, e.do("GET", "/v1/zones/zone-1/capacity", e.admin, nil))
	if len(c.Pools) != 2 || c.Pools[0].Name != "primary" || c.Pools[0].UsedMB != 1024 {
		t.Fatalf("capacity pools %+v", c.Pools)
	}
}

func TestNetworks(t *testing.T) {
	network := func(check func(*schemas.UpdateNetwork) bool) func(*testing.T, schemas.Record) {
		return func(t *testing.T, r schemas.Record) {
			v, ok := r.Value.(*schemas.UpdateNetwork)
			if !ok || r.Topic != schemas.TopicPlacementRequests || r.Key != v.ZoneID || v.RequestID == "" || !check(v) {
				t.Fatalf("published %s %s %+v", r.Topic, r.Key, r.Value)
			}
		}
	}
	body := func(cidr, gw string) map[string]any {
		return map[string]any{"name": "extra", "cidr": cidr, "gateway": gw}
	}
	for _, tt := range []storageCase{
		{"create", "POST", "/v1/networks", true, body("10.9.0.0/24", "10.9.0.1"), 202, "",
			network(func(v *schemas.UpdateNetwork) bool {
				return v.NetworkID == "net-zone-1-extra" && v.Cidr == "10.9.0.0/24" && v.Gateway == "10.9.0.1" && !v.Default
			})},
		{"not a network's address", "POST", "/v1/networks", true, body("10.9.0.5/24", "10.9.0.1"), 422, "cidr", nil},
		{"ipv6", "POST", "/v1/networks", true, body("fd00::/64", "fd00::1"), 422, "cidr", nil},
		{"too small", "POST", "/v1/networks", true, body("10.9.0.0/31", "10.9.0.1"), 422, "cidr", nil},
		{"gateway outside", "POST", "/v1/networks", true, body("10.9.0.0/24", "10.8.0.1"), 422, "gateway", nil},
		{"gateway is the broadcast", "POST", "/v1/networks", true, body("10.9.0.0/24", "10.9.0.255"), 422, "gateway", nil},
		{"overlaps", "POST", "/v1/networks", true, body("10.1.5.0/24", "10.1.5.1"), 422, "cidr", nil},
		{"a second default", "POST", "/v1/networks", true, map[string]any{"name": "x", "cidr": "10.9.0.0/24", "gateway": "10.9.0.1", "default": true}, 409, "", nil},
		{"name taken", "POST", "/v1/networks", true, map[string]any{"name": "spare", "cidr": "10.9.0.0/24", "gateway": "10.9.0.1"}, 409, "", nil},
		{"a user may not", "POST", "/v1/networks", false, body("10.9.0.0/24", "10.9.0.1"), 403, "", nil},
		{"delete", "DELETE", "/v1/networks/spare", true, nil, 202, "",
			network(func(v *schemas.UpdateNetwork) bool { return v.Deleted && v.NetworkID == "net-zone-1-spare" })},
		{"delete with addresses in use", "DELETE", "/v1/networks/guest", true, nil, 409, "", nil},
	} {
		tt.run(t)
	}
	e := newEnv(t, gateway.Config{})
	list := decode[api.List[api.Network]](t, e.do("GET", "/v1/networks", e.alice, nil))
	if len(list.Items) != 2 || list.Items[0].Name != "guest" || !list.Items[0].Default || list.Items[0].Allocated != 1 {
		t.Fatalf("networks %+v", list.Items)
	}
}

func TestVolumesOfTheirAccount(t *testing.T) {
	e := newEnv(t, gateway.Config{})
	mine := decode[api.List[api.Volume]](t, e.do("GET", "/v1/volumes", e.alice, nil))
	if len(mine.Items) != 1 || mine.Items[0].ID != "vol-a1" {
		t.Fatalf("alice's volumes %+v", mine.Items)
	}
	if other := decode[api.List[api.Volume]](t, e.do("GET", "/v1/volumes?vm=vm-b1", e.alice, nil)); len(other.Items) != 0 {
		t.Fatalf("alice sees vm-b1's volumes %+v", other.Items)
	}
	if all := decode[api.List[api.Volume]](t, e.do("GET", "/v1/volumes", e.admin, nil)); len(all.Items) != 2 {
		t.Fatalf("admin's volumes %+v", all.Items)
	}
	wantStatus(t, e.do("GET", "/v1/volumes?deleted=maybe", e.alice, nil), http.StatusBadRequest)
	wantStatus(t, e.do("GET", "/v1/volumes/vol-b1", e.alice, nil), http.StatusNotFound)
	v := decode[api.Volume](t, e.do("GET", "/v1/volumes/vol-a1", e.alice, nil))
	if v.Kind != "Root" || v.SizeGB != 1 || v.PoolID != "pool-zone-1-primary" || len(v.Snapshots) != 1 || v.Snapshots[0].Name != "s1" {
		t.Fatalf("vol-a1 %+v", v)
	}
	vm := decode[api.VM](t, e.do("GET", "/v1/vms/vm-a1", e.alice, nil))
	if len(vm.Volumes) != 1 || vm.Volumes[0].ID != "vol-a1" || len(vm.Nics) != 1 || vm.Nics[0].IP != "10.1.0.2" {
		t.Fatalf("vm-a1's volumes %+v and NICs %+v", vm.Volumes, vm.Nics)
	}
	list := decode[api.List[api.VM]](t, e.do("GET", "/v1/vms", e.alice, nil))
	if len(list.Items) != 1 || len(list.Items[0].Volumes) != 1 || len(list.Items[0].Nics) != 1 {
		t.Fatalf("vm list %+v", list.Items)
	}
}

func TestDeployWithStorage(t *testing.T) {
	deploy := func(check func(*schemas.Deploy) bool) func(*testing.T, schemas.Record) {
		return func(t *testing.T, r schemas.Record) {
			if d, ok := r.Value.(*schemas.Deploy); !ok || !check(d) {
				t.Fatalf("published %+v", r.Value)
			}
		}
	}
	body := func(kv ...any) map[string]any {
		b := map[string]any{"name": "web-9", "offering": "small"}
		for i := 0; i < len(kv); i += 2 {
			b[kv[i].(string)] = kv[i+1]
		}
		return b
	}
	for _, tt := range []storageCase{
		{"no template, the default network", "POST", "/v1/vms", false, body(), 202, "",
			deploy(func(d *schemas.Deploy) bool {
				return d.Template.ID == "" && d.RootSizeMB == 0 && slices.Equal(d.NetworkIDs, []string{"net-zone-1-guest"})
			})},
		{"template by name, disks", "POST", "/v1/vms", false, body("template", "tiny-linux", "root_disk_gb", 4, "data_disk_gb", 5), 202, "",
			deploy(func(d *schemas.Deploy) bool {
				return d.Template.ID == "tiny-linux" && d.Template.SizeMB == 1024 && d.RootSizeMB == 4096 && d.DataDiskMB == 5120
			})},
		{"networks by name and id", "POST", "/v1/vms", false, body("networks", []string{"spare", "net-zone-1-guest"}), 202, "",
			deploy(func(d *schemas.Deploy) bool {
				return slices.Equal(d.NetworkIDs, []string{"net-zone-1-spare", "net-zone-1-guest"})
			})},
		{"unknown template", "POST", "/v1/vms", false, body("template", "nope"), 422, "template", nil},
		{"deleted template", "POST", "/v1/vms", false, body("template", "old-linux"), 422, "template", nil},
		{"a root disk needs a template", "POST", "/v1/vms", false, body("root_disk_gb", 4), 422, "root_disk_gb", nil},
		{"negative data disk", "POST", "/v1/vms", false, body("data_disk_gb", -1), 422, "data_disk_gb", nil},
		{"unknown network", "POST", "/v1/vms", false, body("networks", []string{"nope"}), 422, "networks", nil},
		{"one network twice", "POST", "/v1/vms", false, body("networks", []string{"spare", "net-zone-1-spare"}), 422, "networks", nil},
		{"attach a new volume", "POST", "/v1/vms/vm-new/actions", false, map[string]any{"action": "attach_volume", "size_gb": 10, "volume_name": "logs"}, 202, "",
			func(t *testing.T, r schemas.Record) {
				if a, ok := r.Value.(*schemas.AttachVolume); !ok || a.SizeGB != 10 || a.VolumeName != "logs" {
					t.Fatalf("published %+v", r.Value)
				}
			}},
		{"a size of none", "POST", "/v1/vms/vm-a1/actions", false, map[string]any{"action": "resize_volume", "volume_id": "vol-a1", "size_gb": 0}, 422, "size_gb", nil},
		{"a size that is no integer", "POST", "/v1/vms/vm-a1/actions", false, map[string]any{"action": "resize_volume", "volume_id": "vol-a1", "size_gb": 1.5}, 422, "", nil},
		{"rebuild from an unknown template", "POST", "/v1/vms/vm-a1/actions", false, map[string]any{"action": "rebuild", "image": "nope"}, 422, "image", nil},
	} {
		tt.run(t)
	}
}

// An offering's storage tags are created, kept by an update that leaves
// them out, changed by one that sets them, and embedded in a deploy.
func TestOfferingStorageTags(t *testing.T) {
	offering := func(check func(*schemas.ServiceOffering) bool) func(*testing.T, schemas.Record) {
		return func(t *testing.T, r schemas.Record) {
			if o, ok := r.Value.(*schemas.ServiceOffering); !ok || !check(o) {
				t.Fatalf("published %+v", r.Value)
			}
		}
	}
	for _, tt := range []storageCase{
		{"create", "POST", "/v1/offerings", true, map[string]any{"name": "fast", "cpu": 1, "memory_mb": 512, "storage_tags": []string{"ssd"}}, 201, "",
			offering(func(o *schemas.ServiceOffering) bool { return slices.Equal(o.StorageTags, []string{"ssd"}) })},
		{"bad tag", "POST", "/v1/offerings", true, map[string]any{"name": "fast", "cpu": 1, "memory_mb": 512, "storage_tags": []string{"SSD!"}}, 422, "storage_tags", nil},
		{"an update keeps them", "PATCH", "/v1/offerings/ha-medium", true, map[string]any{"ha": false}, 200, "",
			offering(func(o *schemas.ServiceOffering) bool { return !o.HA && slices.Equal(o.StorageTags, []string{"nvme"}) })},
		{"an update sets them", "PATCH", "/v1/offerings/ha-medium", true, map[string]any{"storage_tags": []string{}}, 200, "",
			offering(func(o *schemas.ServiceOffering) bool { return len(o.StorageTags) == 0 })},
		{"a deploy embeds them", "POST", "/v1/vms", false, map[string]any{"name": "db-9", "offering": "ha-medium"}, 202, "",
			func(t *testing.T, r schemas.Record) {
				if d, ok := r.Value.(*schemas.Deploy); !ok || !slices.Equal(d.StorageTags, []string{"nvme"}) {
					t.Fatalf("published %+v", r.Value)
				}
			}},
	} {
		tt.run(t)
	}
}

// POST /v1/volumes/{id}/actions is the volume's VM's action naming it.
func TestVolumeActions(t *testing.T) {
	for _, tt := range []storageCase{
		{"resize", "POST", "/v1/volumes/vol-a1/actions", false, map[string]any{"action": "resize_volume", "size_gb": 4}, 202, "",
			func(t *testing.T, r schemas.Record) {
				v, ok := r.Value.(*schemas.ResizeVolume)
				if !ok || r.Key != "vm-a1" || v.VmID != "vm-a1" || v.VolumeID != "vol-a1" || v.SizeGB != 4 || v.Account != "acct-a" {
					t.Fatalf("published %s %+v", r.Key, r.Value)
				}
			}},
		{"snapshot", "POST", "/v1/volumes/vol-a1/actions", false, map[string]any{"action": "snapshot_volume", "snapshot_name": "s2"}, 202, "",
			func(t *testing.T, r schemas.Record) {
				if v, ok := r.Value.(*schemas.SnapshotVolume); !ok || v.VolumeID != "vol-a1" || v.SnapshotName != "s2" {
					t.Fatalf("published %+v", r.Value)
				}
			}},
		{"an admin on a user's volume", "POST", "/v1/volumes/vol-a1/actions", true, map[string]any{"action": "detach_volume"}, 202, "",
			func(t *testing.T, r schemas.Record) {
				if v, ok := r.Value.(*schemas.DetachVolume); !ok || v.VmID != "vm-a1" || v.Account != "acct-a" || v.VolumeID != "vol-a1" {
					t.Fatalf("published %+v", r.Value)
				}
			}},
		{"another account's volume", "POST", "/v1/volumes/vol-b1/actions", false, map[string]any{"action": "delete_volume"}, 404, "", nil},
		{"no such volume", "POST", "/v1/volumes/vol-zz/actions", false, map[string]any{"action": "delete_volume"}, 404, "", nil},
		{"an action of no volume", "POST", "/v1/volumes/vol-a1/actions", false, map[string]any{"action": "stop"}, 422, "action", nil},
		{"a resize needs its size", "POST", "/v1/volumes/vol-a1/actions", false, map[string]any{"action": "resize_volume"}, 422, "size_gb", nil},
		{"not allowed in the VM's state", "POST", "/v1/volumes/vol-b1/actions", true, map[string]any{"action": "detach_volume"}, 409, "", nil},
	} {
		tt.run(t)
	}
}
