package qemu

import (
	"net/netip"
	"testing"
)

// Slirp's DNS and DHCP addresses keep clear of the gateway and the guest,
// whatever the network: QEMU refuses to launch when one is the gateway
// (the defaults .3 and .15), and a /30 has room for neither.
func TestSlirpAddrs(t *testing.T) {
	for _, tc := range []struct {
		network, gateway, own string
		dns, dhcp             string
		ok                    bool
	}{
		{"10.1.0.0/24", "10.1.0.1", "10.1.0.2", "10.1.0.3", "10.1.0.4", true},
		{"10.1.0.0/24", "10.1.0.3", "10.1.0.15", "10.1.0.1", "10.1.0.2", true},
		{"10.1.0.8/29", "10.1.0.9", "10.1.0.10", "10.1.0.11", "10.1.0.12", true},
		{"10.1.0.0/30", "10.1.0.1", "10.1.0.2", "", "", false},
	} {
		dns, dhcp, ok := slirpAddrs(netip.MustParsePrefix(tc.network), netip.MustParseAddr(tc.gateway), netip.MustParseAddr(tc.own))
		if ok != tc.ok || (ok && (dns.String() != tc.dns || dhcp.String() != tc.dhcp)) {
			t.Errorf("%s gateway %s own %s: %v %v %v, want %s %s %v", tc.network, tc.gateway, tc.own, dns, dhcp, ok, tc.dns, tc.dhcp, tc.ok)
		}
	}
}
