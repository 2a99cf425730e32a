package placement

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vmplane/vmplane/internal/scenario"
	"github.com/vmplane/vmplane/schemas"
)

// summary renders an output as one short line, so a scenario reads as the
// records it expects.
func summary(r schemas.Record) string {
	switch v := r.Value.(type) {
	case *schemas.PlacementDecided:
		line := fmt.Sprintf("%s PlacementDecided %s %s@%s/%s", r.Topic, v.RequestID, v.VmID, v.ClusterID, v.HostID)
		for _, vol := range v.Volumes {
			line += fmt.Sprintf(" %s:%d@%s:%s", vol.VolumeID, vol.SizeMB, vol.PoolID, vol.PoolPath)
		}
		for _, n := range v.Nics {
			line += fmt.Sprintf(" %s=%s/%s,%s,gw=%s", n.NicID, n.NetworkID, n.IP, n.MAC, n.Gateway)
		}
		return line
	case *schemas.PlacementFailed:
		line := fmt.Sprintf("%s PlacementFailed %s %s %s", r.Topic, v.RequestID, v.VmID, v.Reason)
		switch v.Reason {
		case ReasonStorageUnavailable, ReasonHostLocalStorage, ReasonNetworkUnavailable:
			// What an operator reads to fix the pool or network.
			line += ": " + v.Detail
		}
		return line
	case *schemas.StoragePoolChanged:
		p := v.Pool
		line := fmt.Sprintf("%s StoragePoolChanged %s %s %s used=%d/%d volumes=%d", r.Topic, p.PoolID, p.Scope, p.State, p.UsedMB, p.CapacityMB, p.Volumes)
		if v.Deleted {
			line += " deleted"
		}
		if v.Refused != "" {
			line += " refused: " + v.Refused
		}
		return line
	case *schemas.NetworkChanged:
		n := v.Network
		line := fmt.Sprintf("%s NetworkChanged %s %s gw=%s allocated=%d/%d next=%d", r.Topic, n.NetworkID, n.Cidr, n.Gateway, n.Allocated, n.Size, n.NextIP)
		if n.Default {
			line += " default"
		}
		if v.Deleted {
			line += " deleted"
		}
		if v.Refused != "" {
			line += " refused: " + v.Refused
		}
		return line
	case *schemas.StoragePoolDown:
		return fmt.Sprintf("%s StoragePoolDown %s %s", r.Topic, v.VmID, v.PoolID)
	case *schemas.CapacityAllocated:
		return fmt.Sprintf("%s CapacityAllocated %s@%s used=%d/%d", r.Topic, v.VmID, v.HostID, v.HostUsedCPU, v.HostUsedMemory)
	case *schemas.CapacityReleased:
		return fmt.Sprintf("%s CapacityReleased %s@%s used=%d/%d", r.Topic, v.VmID, v.HostID, v.HostUsedCPU, v.HostUsedMemory)
	case *schemas.HostReserved:
		return fmt.Sprintf("%s HostReserved %s %s %s", r.Topic, v.HostID, v.Planner, v.ResourceUsage)
	case *schemas.HostReservationReleased:
		return fmt.Sprintf("%s HostReservationReleased %s", r.Topic, v.HostID)
	}
	return fmt.Sprintf("%s %T", r.Topic, r.Value)
}

// TestScenarios plays testdata/*.txt (see internal/scenario for the
// syntax) against zone z1. The directives:
//
//	host <t> <id> <cluster> <cpu> <memory_mb> [<status>]   HostStatus, Up unless named
//	place <t> <request> <vm> <cpu> <memory_mb> [host=<id>] [<option>…]  PlaceVm
//	release <t> <request> <vm> [vols=<id>,…] [allvolumes] [nics]      ReleaseVm
//	pool <t> <request> <id> <scope> <capacity_mb> [<field>=<value>…]  UpdateStoragePool
//	net <t> <request> <id> <cidr> <gateway> [default] [delete] [name=<n>]  UpdateNetwork
//	tick <t>                                                one Tick at t, due or not
//
// A place option is required (host=<id> is then required, not
// preferred), avoid=<host>, vol=<id>:<size_mb>[:<pool>] (repeatable),
// nic=<id>[:<network>[:<ip>]] (repeatable), stags=<tag>,… (the
// offering's storage tags) or volumesonly. A pool's fields are
// cluster=, host=, path= (/pools/<id> unless named), state=, tags=<t>,…,
// name= and delete.
//
// Times are offsets from t0. A case's outputs are the records, as summary
// prints them, then "wake <t>" when the zone has a timer. Every step checks
// the ledger's invariants and the outputs' keys. go test
// ./processors/placement -run TestScenarios -update rewrites the expected
// outputs; review the diff before keeping it.
func TestScenarios(t *testing.T) {
	scenario.Run(t, "testdata/*.txt", func(t *testing.T) scenario.Step {
		m := New(DefaultConfig())
		var z *schemas.ZoneRecord
		return func(d scenario.Case) []string {
			var out []schemas.Record
			z, out = playZone(t, m, z, d)
			checkInvariants(t, m, z)
			var got []string
			for _, r := range out {
				if want := map[string]string{schemas.TopicPlacementEvents: "z1", schemas.TopicVmSignals: keyOf(r)}[r.Topic]; r.Key != want {
					t.Fatalf("%s: %s keyed %q, want %q", d.Pos, r.Topic, r.Key, want)
				}
				got = append(got, summary(r))
			}
			if w := m.Wake(z); !w.IsZero() {
				got = append(got, "wake "+w.Sub(t0).String())
			}
			return got
		}
	})
}

// playZone runs one directive against z.
func playZone(t *testing.T, m *Machine, z *schemas.ZoneRecord, d scenario.Case) (*schemas.ZoneRecord, []schemas.Record) {
	if len(d.Args) < 1 {
		t.Fatalf("%s: %q: no time", d.Pos, d.Directive)
	}
	at, err := time.ParseDuration(d.Args[0])
	if err != nil {
		t.Fatalf("%s: %v", d.Pos, err)
	}
	now, a := t0.Add(at), d.Args[1:]
	switch {
	case d.Cmd == "tick":
		return m.Tick(z, "z1", now)
	case d.Cmd == "host" && len(a) >= 4:
		h := hostUp(a[0], a[1], int32(number(t, d, a[2])), number(t, d, a[3]))
		if len(a) > 4 {
			h.Status, h.Reservable = a[4], false
		}
		return m.Step(z, rec(h), now)
	case d.Cmd == "place" && len(a) >= 4:
		r := placeReq(a[0], a[1], int32(number(t, d, a[2])), number(t, d, a[3]))
		for _, o := range a[4:] {
			placeOption(t, d, r, o)
		}
		return m.Step(z, rec(r), now)
	case d.Cmd == "release" && len(a) >= 2:
		r := &schemas.ReleaseVm{RequestID: a[0], VmID: a[1]}
		for _, o := range a[2:] {
			switch k, v, _ := strings.Cut(o, "="); k {
			case "vols":
				r.VolumeIDs = strings.Split(v, ",")
			case "allvolumes":
				r.AllVolumes = true
			case "nics":
				r.Nics = true
			default:
				t.Fatalf("%s: unknown release option %q", d.Pos, o)
			}
		}
		return m.Step(z, rec(r), now)
	case d.Cmd == "pool" && len(a) >= 4:
		r := &schemas.UpdateStoragePool{RequestID: a[0], PoolID: a[1], ZoneID: "z1", Name: a[1], Scope: a[2],
			CapacityMB: number(t, d, a[3]), Path: "/pools/" + a[1]}
		for _, o := range a[4:] {
			switch k, v, _ := strings.Cut(o, "="); k {
			case "cluster":
				r.ClusterID = v
			case "host":
				r.HostID = v
			case "path":
				r.Path = v
			case "state":
				r.State = v
			case "tags":
				r.Tags = strings.Split(v, ",")
			case "name":
				r.Name = v
			case "delete":
				r.Deleted = true
			default:
				t.Fatalf("%s: unknown pool field %q", d.Pos, o)
			}
		}
		return m.Step(z, rec(r), now)
	case d.Cmd == "net" && len(a) >= 4:
		r := &schemas.UpdateNetwork{RequestID: a[0], NetworkID: a[1], ZoneID: "z1", Name: a[1], Cidr: a[2], Gateway: a[3]}
		for _, o := range a[4:] {
			switch k, v, _ := strings.Cut(o, "="); k {
			case "default":
				r.Default = true
			case "delete":
				r.Deleted = true
			case "name":
				r.Name = v
			default:
				t.Fatalf("%s: unknown net field %q", d.Pos, o)
			}
		}
		return m.Step(z, rec(r), now)
	}
	t.Fatalf("%s: unknown directive %q", d.Pos, d.Directive)
	return nil, nil
}

// placeOption applies one option of a place directive.
func placeOption(t *testing.T, d scenario.Case, r *schemas.PlaceVm, o string) {
	k, v, _ := strings.Cut(o, "=")
	switch k {
	case "host":
		r.HostID = v
	case "required":
		r.HostRequired = true
	case "avoid":
		r.AvoidHosts = append(r.AvoidHosts, v)
	case "stags":
		r.StorageTags = strings.Split(v, ",")
	case "volumesonly":
		r.VolumesOnly = true
	case "vol":
		f := strings.Split(v, ":")
		vol := schemas.Volume{VolumeID: f[0], Kind: schemas.VolumeData, DeviceID: int32(len(r.Volumes))}
		if len(r.Volumes) == 0 {
			vol.Kind = schemas.VolumeRoot
		}
		if len(f) > 1 {
			vol.SizeMB = number(t, d, f[1])
		}
		if len(f) > 2 {
			vol.PoolID = f[2]
		}
		r.Volumes = append(r.Volumes, vol)
	case "nic":
		f := strings.Split(v, ":")
		n := schemas.Nic{NicID: f[0], DeviceID: int32(len(r.Nics))}
		if len(f) > 1 {
			n.NetworkID = f[1]
		}
		if len(f) > 2 {
			n.IP = f[2]
		}
		r.Nics = append(r.Nics, n)
	default:
		t.Fatalf("%s: unknown place option %q", d.Pos, o)
	}
}

func number(t *testing.T, d scenario.Case, s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("%s: %q is not a number", d.Pos, s)
	}
	return n
}

func keyOf(r schemas.Record) string {
	switch v := r.Value.(type) {
	case *schemas.PlacementDecided:
		return v.VmID
	case *schemas.PlacementFailed:
		return v.VmID
	case *schemas.StoragePoolDown:
		return v.VmID
	}
	return "?"
}
