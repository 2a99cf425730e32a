package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/vmplane/vmplane/api"
)

// storageCommands are the templates, storage pools, guest networks and
// volumes of issue 27. Volumes change through the VM's actions (vm
// attach-volume, ...), which come from the catalog.
var storageCommands = []spec{
	{path: "template list", short: "List templates", cmd: templateList, shows: api.Template{}},
	{path: "template get", args: []string{"ID"}, short: "Show a template", cmd: templateGet, shows: api.Template{}},
	{path: "template create", short: "Add a template to the catalog (admin)", cmd: templateCreate, shows: api.Template{}},
	{path: "template delete", args: []string{"ID"}, short: "Mark a template deleted (admin)", cmd: templateDelete, shows: api.Template{}},
	{path: "pool list", short: "List storage pools", cmd: poolList, shows: api.Pool{}},
	{path: "pool get", args: []string{"ID"}, short: "Show a storage pool", cmd: poolGet, shows: api.Pool{}},
	{path: "pool create", short: "Create a storage pool", cmd: poolCreate, shows: api.PoolAccepted{}},
	{path: "pool update", args: []string{"ID"}, short: "Change a pool's capacity, tags or state", cmd: poolUpdate, shows: api.PoolAccepted{}},
	{path: "pool delete", args: []string{"ID"}, short: "Delete a storage pool no volume is on", cmd: poolDelete, shows: api.PoolAccepted{}},
	{path: "network list", short: "List guest networks", cmd: networkList, shows: api.Network{}},
	{path: "network get", args: []string{"ID"}, short: "Show a guest network", cmd: networkGet, shows: api.Network{}},
	{path: "network create", short: "Create a guest network (admin)", cmd: networkCreate, shows: api.NetworkAccepted{}},
	{path: "network delete", args: []string{"ID"}, short: "Delete a guest network no NIC uses (admin)", cmd: networkDelete, shows: api.NetworkAccepted{}},
	{path: "volume list", short: "List volumes", cmd: volumeList, shows: api.Volume{}},
	{path: "volume get", args: []string{"ID"}, short: "Show a volume and its snapshots", cmd: volumeGet, shows: api.Volume{}},
}

// storageUsage is the usage text of storageCommands.
const storageUsage = `  template list; template get ID; template delete ID   (create and delete: admin)
  template create --name N --format qcow2|raw --size GiB --os-type T [--id ID]
  pool list [--zone Z]; pool get ID; pool delete ID   (admin)
  pool create --name N --path DIR --capacity GiB [--scope Zone|Cluster|Host] [--cluster C] [--host H] [--zone Z] [--tags a,b]
  pool update ID [--capacity GiB] [--tags a,b] [--state Up|Maintenance|Failed|Disabled]
  network list [--zone Z]; network get ID; network delete ID
  network create --name N --cidr CIDR --gateway IP [--default] [--zone Z]   (admin)
  volume list [--vm ID] [--deleted]; volume get ID
`

// call sends one request and prints its answer: as JSON, or by table.
func call[T any](ctx context.Context, a *cli, method, path string, query url.Values, body any, table func(w io.Writer, v T)) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	var raw json.RawMessage
	if err := a.c.call(ctx, method, path, query, body, &raw); err != nil {
		return err
	}
	return a.emit(raw, func(w io.Writer) error {
		v, err := decodeRaw[T](raw)
		if err == nil {
			table(w, v)
		}
		return err
	})
}

// one is a command of one positional ID that calls method on prefix/ID.
func one[T any](method, prefix string, table func(w io.Writer, v T)) command {
	return func(a *cli, fs *pflag.FlagSet) runner {
		return func(ctx context.Context, pos []string) error {
			return call(ctx, a, method, prefix+url.PathEscape(pos[0]), nil, nil, table)
		}
	}
}

func splitList(s string) []string {
	if s == "" {
		return []string{}
	}
	return strings.Split(s, ",")
}

// gib shows MiB as GiB, with one decimal below 10 GiB.
func gib(mb int64) string {
	if mb < 10<<10 && mb%1024 != 0 {
		return fmt.Sprintf("%.1f", float64(mb)/1024)
	}
	return fmt.Sprint(mb / 1024)
}

// percent is part of whole, rounded down, "-" of nothing.
func percent(part, whole int64) string {
	if whole <= 0 {
		return "-"
	}
	return fmt.Sprintf("%d%%", part*100/whole)
}

func templateList(a *cli, fs *pflag.FlagSet) runner {
	return func(ctx context.Context, _ []string) error {
		return listAll(ctx, a, "/v1/templates", func(w io.Writer, rows []api.Template) error {
			fmt.Fprintln(w, "ID\tNAME\tFORMAT\tSIZE GiB\tOS")
			for _, t := range rows {
				fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\n", t.ID, t.Name, t.Format, t.SizeGB, t.OsType)
			}
			return nil
		})
	}
}

var templateGet = one(http.MethodGet, "/v1/templates/", printTemplate)

var templateDelete = one(http.MethodDelete, "/v1/templates/", func(w io.Writer, t api.Template) {
	fmt.Fprintf(w, "deleted template %s (%s)\n", t.Name, t.ID)
})

func printTemplate(w io.Writer, t api.Template) {
	fmt.Fprintf(w, "id:\t%s\nname:\t%s\nformat:\t%s\nsize:\t%d GiB\nos type:\t%s\ndeleted:\t%v\ncreated:\t%s\n",
		t.ID, t.Name, t.Format, t.SizeGB, t.OsType, t.Deleted, t.CreatedAt.Format(time.RFC3339))
}

func templateCreate(a *cli, fs *pflag.FlagSet) runner {
	id := fs.String("id", "", "template id (default: the name); the image's directory on the hosts")
	name := fs.String("name", "", "template name (a-z, 0-9, -)")
	format := fs.String("format", "qcow2", "disk image format: qcow2 or raw")
	size := fs.Int64("size", 0, "virtual size of the image, GiB")
	osType := fs.String("os-type", "", "guest operating system")
	return func(ctx context.Context, _ []string) error {
		body := map[string]any{"name": *name, "format": *format, "size_gb": *size, "os_type": *osType}
		if *id != "" {
			body["id"] = *id
		}
		return call(ctx, a, http.MethodPost, "/v1/templates", nil, body, func(w io.Writer, t api.Template) {
			fmt.Fprintf(w, "created template %s (%s)\n", t.Name, t.ID)
		})
	}
}

func poolList(a *cli, fs *pflag.FlagSet) runner {
	q := filterFlags(fs, filter{name: "zone", usage: "only this zone's pools"})
	return func(ctx context.Context, _ []string) error {
		return listAll(ctx, a, "/v1/pools?"+q.Encode(), func(w io.Writer, rows []api.Pool) error {
			printPools(w, rows)
			return nil
		})
	}
}

// printPools is the table of pools, GET /v1/pools's and a zone's capacity's.
func printPools(w io.Writer, pools []api.Pool) {
	fmt.Fprintln(w, "ID\tZONE\tNAME\tSCOPE\tSTATE\tUSED/CAP GiB\tUSED\tVOLUMES\tPATH\tTAGS\tLAST ERROR")
	for _, p := range pools {
		scope := p.Scope
		if p.ClusterID != "" || p.HostID != "" {
			scope += " " + p.ClusterID + p.HostID
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s/%s\t%s\t%d\t%s\t%s\t%s\n", p.ID, p.ZoneID, p.Name, scope, p.State,
			gib(p.UsedMB), gib(p.CapacityMB), percent(p.UsedMB, p.CapacityMB), p.Volumes, p.Path,
			orDash(strings.Join(p.Tags, ",")), orDash(p.LastError))
	}
}

var poolGet = one(http.MethodGet, "/v1/pools/", printPool)

func printPool(w io.Writer, p api.Pool) {
	fmt.Fprintf(w, "id:\t%s\nzone:\t%s\nname:\t%s\nscope:\t%s\n", p.ID, p.ZoneID, p.Name, p.Scope)
	if p.ClusterID != "" {
		fmt.Fprintf(w, "cluster:\t%s\n", p.ClusterID)
	}
	if p.HostID != "" {
		fmt.Fprintf(w, "host:\t%s\n", p.HostID)
	}
	fmt.Fprintf(w, "path:\t%s\nstate:\t%s\nused:\t%s of %s GiB (%s), %d volumes\ntags:\t%s\n", p.Path, p.State,
		gib(p.UsedMB), gib(p.CapacityMB), percent(p.UsedMB, p.CapacityMB), p.Volumes, orDash(strings.Join(p.Tags, ",")))
	if p.LastError != "" {
		fmt.Fprintf(w, "last error:\t%s\n", p.LastError)
	}
}

// printPoolAccepted says what was asked of placement, which applies or
// refuses it: pool get shows which.
func printPoolAccepted(done string) func(io.Writer, api.PoolAccepted) {
	return func(w io.Writer, p api.PoolAccepted) {
		fmt.Fprintf(w, "%s pool %s (%s): %s, %s GiB; placement applies it (pool get %s shows it, or its last error)\n",
			done, p.Pool.Name, p.Pool.ID, p.Pool.State, gib(p.Pool.CapacityMB), p.Pool.ID)
	}
}

func poolCreate(a *cli, fs *pflag.FlagSet) runner {
	id := fs.String("id", "", "pool id (default pool-<zone>-<name>)")
	zone := fs.String("zone", "", "zone (default: the gateway's)")
	name := fs.String("name", "", "pool name (a-z, 0-9, -)")
	scope := fs.String("scope", "Zone", "Zone, Cluster or Host")
	cluster := fs.String("cluster", "", "cluster of a Cluster pool")
	host := fs.String("host", "", "host of a Host (local) pool")
	path := fs.String("path", "", "absolute directory of the pool on its hosts")
	capacity := fs.Int64("capacity", 0, "capacity, GiB")
	tags := fs.String("tags", "", "comma-separated storage tags")
	return func(ctx context.Context, _ []string) error {
		body := map[string]any{"name": *name, "scope": *scope, "path": *path, "capacity_gb": *capacity}
		for k, v := range map[string]string{"id": *id, "zone_id": *zone, "cluster_id": *cluster, "host_id": *host} {
			if v != "" {
				body[k] = v
			}
		}
		if *tags != "" {
			body["tags"] = splitList(*tags)
		}
		return call(ctx, a, http.MethodPost, "/v1/pools", nil, body, printPoolAccepted("asked for"))
	}
}

func poolUpdate(a *cli, fs *pflag.FlagSet) runner {
	capacity := fs.Int64("capacity", 0, "capacity, GiB")
	tags := fs.String("tags", "", "comma-separated storage tags; empty for none")
	state := fs.String("state", "", "Up, Maintenance, Failed or Disabled")
	return func(ctx context.Context, pos []string) error {
		body := map[string]any{}
		if fs.Changed("capacity") {
			body["capacity_gb"] = *capacity
		}
		if fs.Changed("tags") {
			body["tags"] = splitList(*tags)
		}
		if fs.Changed("state") {
			body["state"] = *state
		}
		if len(body) == 0 {
			return fmt.Errorf("%w: pool update needs --capacity, --tags or --state", errUsage)
		}
		return call(ctx, a, http.MethodPatch, "/v1/pools/"+url.PathEscape(pos[0]), nil, body, printPoolAccepted("asked to update"))
	}
}

var poolDelete = one(http.MethodDelete, "/v1/pools/", printPoolAccepted("asked to delete"))

func networkList(a *cli, fs *pflag.FlagSet) runner {
	q := filterFlags(fs, filter{name: "zone", usage: "only this zone's networks"})
	return func(ctx context.Context, _ []string) error {
		return listAll(ctx, a, "/v1/networks?"+q.Encode(), func(w io.Writer, rows []api.Network) error {
			fmt.Fprintln(w, "ID\tZONE\tNAME\tCIDR\tGATEWAY\tDEFAULT\tIPS USED/SIZE\tFREE\tLAST ERROR")
			for _, n := range rows {
				def := "-"
				if n.Default {
					def = "yes"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%d/%d\t%d\t%s\n", n.ID, n.ZoneID, n.Name, n.Cidr, n.Gateway, def,
					n.Allocated, n.Size, n.Size-n.Allocated, orDash(n.LastError))
			}
			return nil
		})
	}
}

var networkGet = one(http.MethodGet, "/v1/networks/", func(w io.Writer, n api.Network) {
	fmt.Fprintf(w, "id:\t%s\nzone:\t%s\nname:\t%s\ncidr:\t%s\ngateway:\t%s\ndefault:\t%v\nstate:\t%s\naddresses:\t%d of %d in use\n",
		n.ID, n.ZoneID, n.Name, n.Cidr, n.Gateway, n.Default, n.State, n.Allocated, n.Size)
	if n.LastError != "" {
		fmt.Fprintf(w, "last error:\t%s\n", n.LastError)
	}
})

func printNetworkAccepted(done string) func(io.Writer, api.NetworkAccepted) {
	return func(w io.Writer, n api.NetworkAccepted) {
		fmt.Fprintf(w, "%s network %s (%s): %s gateway %s; placement applies it (network get %s shows it, or its last error)\n",
			done, n.Network.Name, n.Network.ID, n.Network.Cidr, n.Network.Gateway, n.Network.ID)
	}
}

func networkCreate(a *cli, fs *pflag.FlagSet) runner {
	id := fs.String("id", "", "network id (default net-<zone>-<name>)")
	zone := fs.String("zone", "", "zone (default: the gateway's)")
	name := fs.String("name", "", "network name (a-z, 0-9, -)")
	cidr := fs.String("cidr", "", "IPv4 CIDR, e.g. 10.1.0.0/24")
	gateway := fs.String("gateway", "", "gateway address inside the CIDR")
	def := fs.Bool("default", false, "the zone's default network: deploys that name none get a NIC on it")
	return func(ctx context.Context, _ []string) error {
		body := map[string]any{"name": *name, "cidr": *cidr, "gateway": *gateway, "default": *def}
		if *id != "" {
			body["id"] = *id
		}
		if *zone != "" {
			body["zone_id"] = *zone
		}
		return call(ctx, a, http.MethodPost, "/v1/networks", nil, body, printNetworkAccepted("asked for"))
	}
}

var networkDelete = one(http.MethodDelete, "/v1/networks/", printNetworkAccepted("asked to delete"))

func volumeList(a *cli, fs *pflag.FlagSet) runner {
	vm := fs.String("vm", "", "only this VM's volumes")
	deleted := fs.Bool("deleted", false, "deleted volumes too")
	return func(ctx context.Context, _ []string) error {
		path := "/v1/volumes"
		q := url.Values{}
		if *vm != "" {
			q.Set("vm", *vm)
		}
		if *deleted {
			q.Set("deleted", "true")
		}
		if len(q) > 0 {
			path += "?" + q.Encode()
		}
		return listAll(ctx, a, path, func(w io.Writer, rows []api.Volume) error {
			printVolumes(w, rows, true)
			return nil
		})
	}
}

// printVolumes is a table of volumes; withVM adds their VM and account.
func printVolumes(w io.Writer, vols []api.Volume, withVM bool) {
	head := "ID\tNAME\tKIND\tDEVICE\tSIZE GiB\tPOOL\tTEMPLATE\tSTATE"
	if withVM {
		head += "\tVM\tACCOUNT"
	}
	fmt.Fprintln(w, head)
	for _, v := range vols {
		state := v.State
		if v.Deleted {
			state += " (deleted)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s", v.ID, v.Name, v.Kind, v.DeviceID, gib(v.SizeMB), orDash(v.PoolID),
			orDash(v.TemplateID), state)
		if withVM {
			fmt.Fprintf(w, "\t%s\t%s", v.VmID, v.Account)
		}
		fmt.Fprintln(w)
	}
}

var volumeGet = one(http.MethodGet, "/v1/volumes/", func(w io.Writer, v api.Volume) {
	fmt.Fprintf(w, "id:\t%s\nname:\t%s\nvm:\t%s\naccount:\t%s\nkind:\t%s (device %d)\nsize:\t%s GiB\npool:\t%s\ntemplate:\t%s\nstate:\t%s\n",
		v.ID, v.Name, v.VmID, v.Account, v.Kind, v.DeviceID, gib(v.SizeMB), orDash(v.PoolID), orDash(v.TemplateID), v.State)
	if v.Deleted {
		fmt.Fprintln(w, "deleted:\ttrue")
	}
	for _, s := range v.Snapshots {
		fmt.Fprintf(w, "snapshot:\t%s (job %s, %s)\n", s.Name, s.JobID, s.TakenAt.Format(time.RFC3339))
	}
})

// printNics is the table of a VM's NICs.
func printNics(w io.Writer, nics []api.Nic) {
	fmt.Fprintln(w, "NIC\tDEVICE\tNETWORK\tIP\tMAC\tGATEWAY")
	for _, n := range nics {
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\n", n.ID, n.DeviceID, n.NetworkID, orDash(n.IP), orDash(n.MAC), orDash(n.Gateway))
	}
}
