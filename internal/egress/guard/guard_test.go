package guard

import (
	"net/netip"
	"testing"
)

func TestGuards(t *testing.T) {
	for in, kind := range map[string]string{
		"169.254.169.254": "metadata", "fd00:ec2::254": "metadata", "100.100.100.200": "metadata", "168.63.129.16": "metadata",
		"127.0.0.53": "loopback", "::1": "loopback", "10.0.0.1": "private", "172.31.255.255": "private", "192.168.0.1": "private",
		"fd00::1": "private", "169.254.0.1": "link-local", "fe80::1": "link-local", "100.127.0.1": "cgnat",
		"224.0.0.251": "multicast", "ff02::1": "multicast", "0.1.2.3": "unspecified", "::": "unspecified",
		"255.255.255.255": "broadcast", "::ffff:127.0.0.1": "loopback", "64:ff9b::10.0.0.1": "private",
		"2002:c0a8:0101::": "private", "::10.0.0.1": "private", "2001::1": "reserved",
	} {
		g, ok := Classify(netip.MustParseAddr(in))
		if !ok || g.Kind != kind {
			t.Errorf("Classify(%s) = %v %v, want %s", in, g.Kind, ok, kind)
		}
	}
	// A zone (only a host resolver could give one) changes nothing.
	for in, kind := range map[string]string{"fe80::1%eth0": "link-local", "::1%lo": "loopback"} {
		if g, ok := Classify(netip.MustParseAddr(in)); !ok || g.Kind != kind {
			t.Errorf("Classify(%s) = %v %v, want %s", in, g.Kind, ok, kind)
		}
	}
	for _, in := range []string{"8.8.4.4", "2606:4700::1", "172.32.0.1", "100.128.0.1", "64:ff9b::808:808"} {
		if g, ok := Classify(netip.MustParseAddr(in)); ok {
			t.Errorf("Classify(%s) = %s, want not guarded", in, g.Kind)
		}
	}
	meta := netip.MustParseAddr("169.254.169.254")
	g, _ := Classify(meta)
	for cidr, want := range map[string]bool{
		"169.254.169.254/32": true, "169.254.0.0/16": false, "0.0.0.0/0": false, "169.254.169.0/24": false,
	} {
		if got := Unlocks(netip.MustParsePrefix(cidr), g, meta); got != want {
			t.Errorf("Unlocks(%s, metadata) = %v", cidr, got)
		}
	}
}

// Threat model, Egress: an IPv6 address that carries a guarded IPv4
// address, in any standard embedding, is refused as that address would
// be (it reaches it wherever the network translates or tunnels).
func TestGuardsEmbeddedIPv4(t *testing.T) {
	nsp := []netip.Prefix{
		netip.MustParsePrefix("2001:db8:64::/96"), // documentation space as a stand-in for a network's own prefix
		netip.MustParsePrefix("2001:db8:100::/40"),
		netip.MustParsePrefix("2001:db8:122:300::/56"),
		netip.MustParsePrefix("2001:db8:122::/48"),
		netip.MustParsePrefix("2001:db8:122:344::/64"),
		netip.MustParsePrefix("2001:db9::/32"),
	}
	for _, tc := range []struct{ in, kind string }{
		{"::ffff:127.0.0.1", "loopback"},             // mapped, ::ffff:0:0/96
		{"::ffff:0:169.254.169.254", "metadata"},     // SIIT translated, ::ffff:0:0:0/96
		{"::ffff:0:10.1.2.3", "private"},             // SIIT
		{"::ffff:0:8.8.8.8", ""},                     // SIIT of a public address: judged by it
		{"::127.0.0.1", "loopback"},                  // IPv4-compatible ::/96
		{"::8.8.8.8", "reserved"},                    // IPv4-compatible, public: reserved anyway
		{"64:ff9b::169.254.169.254", "metadata"},     // well-known /96
		{"64:ff9b::7f00:1", "loopback"},              // same, hex
		{"64:ff9b:1::a9fe:a9fe", "metadata"},         // local-use, /96 layout
		{"64:ff9b:1:a9fe:a9:fe00::", "metadata"},     // local-use, /48 layout
		{"64:ff9b:1:7f:0:1:100::", "loopback"},       // local-use, /56 layout
		{"64:ff9b:1:0:a:102:300::", "private"},       // local-use, /64 layout
		{"64:ff9b:1::808:808", ""},                   // local-use, public
		{"64:ff9b:1:808:8:800::", ""},                // local-use, public in the /48 layout
		{"64:ff9b:2::808:808", "reserved"},           // unassigned in 64:ff9b::/32
		{"64:ff9b:a9fe:a9fe::", "reserved"},          // a /32 layout under the WKP's /32
		{"2002:a9fe:a9fe::1", "metadata"},            // 6to4
		{"2002:0808:0808::1", ""},                    // 6to4, public
		{"2001:0:a9fe:a9fe::1", "metadata"},          // Teredo: its server
		{"2001:0:808:808:0:0:80ff:fefe", "loopback"}, // Teredo: client 127.0.1.1 (inverted)
		{"2001:db8:64::a9fe:a9fe", "metadata"},       // configured /96
		{"2001:db8:1a9:fea9:fe::", "metadata"},       // configured /40: a9.fe.a9.fe at bytes 5,6,7,9
		{"2001:db8:122:37f:0:1:100::", "loopback"},   // configured /56
		{"2001:db8:122:a9fe:a9:fe00::", "metadata"},  // configured /48
		{"2001:db8:122:344:a:102:300::", "private"},  // configured /64
		{"2001:db9:7f00:1::", "loopback"},            // configured /32
		{"2001:db9:808:808::", ""},                   // configured /32, public
	} {
		g, ok := Classify(netip.MustParseAddr(tc.in), nsp...)
		if tc.kind == "" {
			if ok {
				t.Errorf("Classify(%s) = %s, want not guarded", tc.in, g.Kind)
			}
			continue
		}
		if !ok || g.Kind != tc.kind {
			t.Errorf("Classify(%s) = %q %v, want %s", tc.in, g.Kind, ok, tc.kind)
		}
	}
}
