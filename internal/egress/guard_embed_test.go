package egress

import (
	"net/netip"
	"testing"
)

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
		g, ok := classify(netip.MustParseAddr(tc.in), nsp...)
		if tc.kind == "" {
			if ok {
				t.Errorf("classify(%s) = %s, want not guarded", tc.in, g.kind)
			}
			continue
		}
		if !ok || g.kind != tc.kind {
			t.Errorf("classify(%s) = %q %v, want %s", tc.in, g.kind, ok, tc.kind)
		}
	}
}

// A deny rule's CIDR also denies the IPv6 forms of its addresses.
func TestDenyCIDRCoversEmbeddings(t *testing.T) {
	c, err := compile(&Policy{Rules: []Rule{{ID: "no", Action: Deny, CIDRs: []string{"203.0.113.0/24"}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := c.Deny[0]
	for _, in := range []string{"::ffff:203.0.113.9", "::ffff:0:203.0.113.9", "64:ff9b::203.0.113.9", "64:ff9b:1:cb00:71:900::",
		"2002:cb00:7109::", "2001:0:cb00:7109::", "2001:0:808:808::34ff:8ef6"} {
		if !matchDenied(r, netip.MustParseAddr(in), nil) {
			t.Errorf("%s is not denied by 203.0.113.0/24", in)
		}
	}
	if matchDenied(r, netip.MustParseAddr("64:ff9b::808:808"), nil) {
		t.Error("64:ff9b::8.8.8.8 denied by 203.0.113.0/24")
	}
}

func TestNAT64PrefixConfig(t *testing.T) {
	for in, ok := range map[string]bool{"2001:db8:64::/96": true, "2001:db8::/32": true, "2001:db8::/33": false, "10.0.0.0/8": false, "::ffff:0:0/96": false} {
		if ValidNAT64Prefix(netip.MustParsePrefix(in)) != ok {
			t.Errorf("ValidNAT64Prefix(%s) != %v", in, ok)
		}
	}
	if _, err := New(Config{Recorder: &recorder{}, NAT64Prefixes: []netip.Prefix{netip.MustParsePrefix("2001:db8::/33")}}); err == nil {
		t.Error("a /33 NAT64 prefix was accepted")
	}
}
