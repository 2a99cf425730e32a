package qemu

import (
	"strings"
	"testing"

	"github.com/vmplane/vmplane/schemas"
)

// TestBadVolumesAndNicsAreRefused: what could not be named safely in a
// QEMU option or given to the guest is refused with the reason.
func TestBadVolumesAndNicsAreRefused(t *testing.T) {
	good := schemas.Volume{VolumeID: "v1", Kind: schemas.VolumeData, DeviceID: 1, PoolPath: "/srv/pool", SizeMB: 10}
	vols := []struct {
		name string
		edit func(*schemas.Volume)
		want string
	}{
		{"good", func(*schemas.Volume) {}, ""},
		{"id with a slash", func(v *schemas.Volume) { v.VolumeID = "../x" }, "not a file name"},
		{"relative pool", func(v *schemas.Volume) { v.PoolPath = "pool" }, "clean absolute"},
		{"unclean pool", func(v *schemas.Volume) { v.PoolPath = "/srv/../etc" }, "clean absolute"},
		{"comma in pool", func(v *schemas.Volume) { v.PoolPath = "/srv/a,b" }, "comma"},
		{"device out of range", func(v *schemas.Volume) { v.DeviceID = 24 }, "device id"},
		{"template id with a slash", func(v *schemas.Volume) { v.TemplateID = "a/b" }, "template id"},
	}
	for _, c := range vols {
		v := good
		c.edit(&v)
		err := checkVolume(v)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if err := checkVolumes([]schemas.Volume{good, good}); err == nil {
		t.Error("a volume given twice was taken")
	}

	nic := schemas.Nic{NicID: "n", DeviceID: 0, MAC: "02:00:00:00:00:01", IP: "10.0.0.5", Gateway: "10.0.0.1", Cidr: "10.0.0.0/24"}
	nics := []struct {
		name string
		edit func(*schemas.Nic)
		want string
	}{
		{"good", func(*schemas.Nic) {}, ""},
		{"no gateway", func(n *schemas.Nic) { n.Gateway = "" }, ""},
		{"no address yet", func(n *schemas.Nic) { n.IP = "" }, ""},
		{"on no network yet", func(n *schemas.Nic) { n.IP, n.Gateway, n.Cidr = "", "", "" }, ""},
		{"an address on no network", func(n *schemas.Nic) { n.Gateway, n.Cidr = "", "" }, "IPv4 CIDR"},
		{"bad mac", func(n *schemas.Nic) { n.MAC = "02:00:00:00:00" }, "mac"},
		{"ip outside", func(n *schemas.Nic) { n.IP = "10.0.1.5" }, "not an address of"},
		{"ipv6 cidr", func(n *schemas.Nic) { n.Cidr = "fd00::/64" }, "IPv4 CIDR"},
		{"gateway is the ip", func(n *schemas.Nic) { n.Gateway = "10.0.0.5" }, "gateway"},
		{"device out of range", func(n *schemas.Nic) { n.DeviceID = 5 }, "device id"},
	}
	for _, c := range nics {
		n := nic
		c.edit(&n)
		_, err := checkNics([]schemas.Nic{n})
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	cfgs, err := checkNics([]schemas.Nic{nic})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := nicCmdline(cfgs), "vmplane.nic=02:00:00:00:00:01,10.0.0.5/24,10.0.0.1"; got != want {
		t.Errorf("kernel command line %q, want %q", got, want)
	}
}
