package qemu

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/vmplane/vmplane/schemas"
)

// NICs: each is a virtio-net device with its MAC on QEMU's user-mode
// network, whose address range and gateway (slirp's net= and host=) are
// the NIC's network's, so that the static address the guest gives itself
// from the kernel command line (vmplane.nic=) is one the network has.

// maxNicDevice bounds a NIC's device id: NICs take PCI slots 3 to 7.
const maxNicDevice = 4

// nicConfig is a checked NIC.
type nicConfig struct {
	device  int32
	mac     string       // lower case, as the guest's sysfs shows it
	addr    netip.Prefix // zero while the NIC has no address
	network netip.Prefix // zero while the NIC is on no network
	gateway netip.Addr   // zero when the network has none
}

// checkNics parses the NICs, refusing what QEMU or the guest could not
// take.
func checkNics(nics []schemas.Nic) ([]nicConfig, error) {
	out := make([]nicConfig, 0, len(nics))
	seen := map[int32]bool{}
	for _, n := range nics {
		c, err := checkNic(n)
		if err != nil {
			return nil, fmt.Errorf("nic %s: %w", n.NicID, err)
		}
		if seen[c.device] {
			return nil, fmt.Errorf("nic %s: device %d given twice", n.NicID, c.device)
		}
		seen[c.device] = true
		out = append(out, c)
	}
	return out, nil
}

func checkNic(n schemas.Nic) (nicConfig, error) {
	var c nicConfig
	if n.DeviceID < 0 || n.DeviceID > maxNicDevice {
		return c, fmt.Errorf("device id %d is not in 0..%d", n.DeviceID, maxNicDevice)
	}
	c.device = n.DeviceID
	hw, err := net.ParseMAC(n.MAC)
	if err != nil || len(hw) != 6 {
		return c, fmt.Errorf("mac %q is not a 6-byte MAC address", n.MAC)
	}
	c.mac = hw.String()
	if n.Cidr == "" && n.IP == "" && n.Gateway == "" {
		// Not on a network yet: a NIC with QEMU's own user-mode network
		// and no address from the control plane.
		return c, nil
	}
	network, err := netip.ParsePrefix(n.Cidr)
	if err != nil || !network.Addr().Is4() {
		return c, fmt.Errorf("cidr %q is not an IPv4 CIDR", n.Cidr)
	}
	c.network = network.Masked()
	if n.IP != "" {
		ip, err := netip.ParseAddr(n.IP)
		if err != nil || !c.network.Contains(ip) {
			return c, fmt.Errorf("ip %q is not an address of %s", n.IP, c.network)
		}
		c.addr = netip.PrefixFrom(ip, c.network.Bits())
	}
	if n.Gateway != "" {
		gw, err := netip.ParseAddr(n.Gateway)
		if err != nil || !c.network.Contains(gw) || gw == c.addr.Addr() {
			return c, fmt.Errorf("gateway %q is not another address of %s", n.Gateway, c.network)
		}
		c.gateway = gw
	}
	return c, nil
}

// nicArgs are QEMU's options for the NICs. Slots are fixed by device id so
// that a migration's destination lays its devices out as the source did.
// No option ROM: guests boot their kernel directly.
func nicArgs(nics []nicConfig) []string {
	var args []string
	for _, n := range nics {
		id := "net" + strconv.Itoa(int(n.device))
		netdev := "user,id=" + id
		if n.network.IsValid() {
			netdev += ",net=" + n.network.String()
		}
		if n.gateway.IsValid() {
			netdev += ",host=" + n.gateway.String()
			// Slirp's own DNS and DHCP addresses default to .3 and .15 of
			// the network and must differ from its host: a gateway there,
			// or a network too small for both, would stop QEMU at launch.
			if dns, dhcp, ok := slirpAddrs(n.network, n.gateway, n.addr.Addr()); ok {
				netdev += ",dns=" + dns.String() + ",dhcpstart=" + dhcp.String()
			}
		}
		args = append(args, "-netdev", netdev, "-device",
			fmt.Sprintf("virtio-net-pci,netdev=%s,id=nic%d,mac=%s,addr=%#x,romfile=", id, n.device, n.mac, 3+n.device))
	}
	return args
}

// nicCmdline is the part of the guest kernel's command line that gives
// each NIC its address: vmplane.nic=<mac>,<ip>/<prefix>,<gateway>.
func nicCmdline(nics []nicConfig) string {
	var parts []string
	for _, n := range nics {
		if !n.addr.IsValid() {
			continue // no address to give it
		}
		p := "vmplane.nic=" + n.mac + "," + n.addr.String() + ","
		if n.gateway.IsValid() {
			p += n.gateway.String()
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " ")
}

// slirpAddrs picks slirp's DNS and DHCP start addresses in network: the
// first two that are neither the network nor the broadcast address, the
// gateway or the guest's own address. Nothing answers on them but slirp
// (the guest has a static address); false when the network has no room.
func slirpAddrs(network netip.Prefix, gateway, own netip.Addr) (dns, dhcp netip.Addr, ok bool) {
	if !network.IsValid() || !network.Addr().Is4() {
		return dns, dhcp, false
	}
	var picked []netip.Addr
	for a := network.Masked().Addr().Next(); network.Contains(a) && len(picked) < 2; a = a.Next() {
		if !network.Contains(a.Next()) {
			break // the broadcast address
		}
		if a != gateway && a != own {
			picked = append(picked, a)
		}
	}
	if len(picked) < 2 {
		return dns, dhcp, false
	}
	return picked[0], picked[1], true
}
