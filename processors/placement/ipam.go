package placement

import (
	"fmt"
	"hash/fnv"
	"net/netip"

	"github.com/vmplane/vmplane/schemas"
)

// Guest networks are IPv4, between /16 (65,533 addresses: a search for a
// free one stays cheap) and /29 (a /30 has one address beside its gateway,
// and none left for the DNS and DHCP addresses QEMU's user-mode network
// must have, so its guests could not launch).
const (
	widestPrefix    = 16
	narrowestPrefix = 29
)

// cidr is a parsed guest network: addresses are handled as offsets from
// its network address.
type cidr struct {
	base netip.Addr
	bits int
}

func parseCidr(s string) (cidr, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return cidr{}, fmt.Errorf("cidr %q: %w", s, err)
	}
	if !p.Addr().Is4() {
		return cidr{}, fmt.Errorf("cidr %q is not IPv4", s)
	}
	if p.Bits() < widestPrefix || p.Bits() > narrowestPrefix {
		return cidr{}, fmt.Errorf("cidr %q: the prefix must be /%d to /%d", s, widestPrefix, narrowestPrefix)
	}
	if p.Masked() != p {
		return cidr{}, fmt.Errorf("cidr %q has host bits set; the network is %s", s, p.Masked())
	}
	return cidr{base: p.Addr(), bits: p.Bits()}, nil
}

// size is the number of addresses in the CIDR, network and broadcast too.
func (c cidr) size() uint32 { return 1 << (32 - c.bits) }

// offset is ip's offset in the CIDR; false when it is not an IPv4 address
// inside it.
func (c cidr) offset(ip string) (uint32, bool) {
	a, err := netip.ParseAddr(ip)
	if err != nil || !a.Is4() {
		return 0, false
	}
	off := u32(a) - u32(c.base)
	if u32(a) < u32(c.base) || off >= c.size() {
		return 0, false
	}
	return off, true
}

func (c cidr) addr(off uint32) string {
	v := u32(c.base) + off
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}).String()
}

func u32(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// usable is the number of addresses a NIC can get: all but the network,
// broadcast and gateway addresses.
func (c cidr) usable() int32 { return int32(c.size()) - 3 }

// nextFree finds the network's next free address: the search starts at
// NextIP and wraps, so an address just released is not given again at
// once (a guest's neighbours may still cache it). taken holds addresses
// this decision has already given. It returns false when the network is
// full.
func (ix *zoneIndex) nextFree(n *schemas.NetworkState, taken map[uint32]bool) (uint32, bool) {
	c, err := parseCidr(n.Cidr)
	if err != nil {
		return 0, false
	}
	gw, _ := c.offset(n.Gateway)
	claimed := ix.addrs[n.NetworkID]
	span := c.size() - 2 // offsets 1 … size-2: not the network or broadcast address
	start := uint32(max(n.NextIP, 1)) - 1
	for k := range span {
		off := 1 + (start+k)%span
		if off == gw || taken[off] {
			continue
		}
		if _, held := claimed[off]; held {
			continue
		}
		return off, true
	}
	return 0, false
}

// macFor derives a NIC's MAC: 02 (locally administered, unicast) and five
// bytes hashed from the zone, VM and NIC, moved on to the next value while
// a claimed NIC (or one this decision gave, in taken) holds it, so no two
// NICs of the zone share one.
func (ix *zoneIndex) macFor(vmID, nicID string, taken map[string]bool) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(ix.z.ZoneID + "/" + vmID + "/" + nicID))
	v := h.Sum64() & (1<<40 - 1)
	for {
		m := fmt.Sprintf("02:%02x:%02x:%02x:%02x:%02x", byte(v>>32), byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
		if !ix.macs[m] && !taken[m] {
			return m
		}
		v = (v + 1) & (1<<40 - 1)
	}
}
