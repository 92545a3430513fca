package egress

import (
	"net/netip"
	"testing"
)

// A deny CIDR also denies the NAT64 and 6to4 spellings of its addresses,
// as literals and as resolved addresses.
func TestDenyCIDRCoversEmbeddedIPv4(t *testing.T) {
	c, err := compile(&Policy{Grant: []Category{PublicWeb}, Rules: []Rule{{ID: "no-net", Action: Deny, CIDRs: []string{"100.0.0.0/16"}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{"100.0.0.1", "::ffff:100.0.0.1", "64:ff9b::6400:1", "64:ff9b:1::6400:1", "2002:6400:1::"} {
		a := netip.MustParseAddr(in)
		tg := Target{Host: a.Unmap().String(), Addr: a.Unmap(), Port: 443}
		if d, ok := c.decideName(tg, modeConnect); ok || d.rule != "no-net" {
			t.Errorf("literal %s: allowed=%v by %s, want denied by no-net", in, ok, d.rule)
		}
		name := Target{Host: "x.example.test", Port: 443}
		if rule, _, ok := c.checkAddr(name, modeConnect, a); ok || rule != "no-net" {
			t.Errorf("x.example.test resolving to %s: allowed=%v (%s), want denied by no-net", in, ok, rule)
		}
	}
	if _, ok := c.decideName(Target{Host: "64:ff9b::6500:1", Addr: netip.MustParseAddr("64:ff9b::6500:1"), Port: 443}, modeConnect); !ok {
		t.Error("64:ff9b::6500:1 (101.0.0.1, outside the rule) denied")
	}
}

func TestGuards(t *testing.T) {
	for in, kind := range map[string]string{
		"169.254.169.254": "metadata", "fd00:ec2::254": "metadata", "100.100.100.200": "metadata", "168.63.129.16": "metadata",
		"127.0.0.53": "loopback", "::1": "loopback", "10.0.0.1": "private", "172.31.255.255": "private", "192.168.0.1": "private",
		"fd00::1": "private", "169.254.0.1": "link-local", "fe80::1": "link-local", "100.127.0.1": "cgnat",
		"224.0.0.251": "multicast", "ff02::1": "multicast", "0.1.2.3": "unspecified", "::": "unspecified",
		"255.255.255.255": "broadcast", "::ffff:127.0.0.1": "loopback", "64:ff9b::10.0.0.1": "private",
		"2002:c0a8:0101::": "private", "::10.0.0.1": "private", "2001::1": "reserved",
	} {
		g, ok := classify(netip.MustParseAddr(in))
		if !ok || g.kind != kind {
			t.Errorf("classify(%s) = %v %v, want %s", in, g.kind, ok, kind)
		}
	}
	// A zone (only a host resolver could give one) changes nothing.
	for in, kind := range map[string]string{"fe80::1%eth0": "link-local", "::1%lo": "loopback"} {
		if g, ok := classify(netip.MustParseAddr(in)); !ok || g.kind != kind {
			t.Errorf("classify(%s) = %v %v, want %s", in, g.kind, ok, kind)
		}
	}
	for _, in := range []string{"8.8.4.4", "2606:4700::1", "172.32.0.1", "100.128.0.1", "64:ff9b::808:808"} {
		if g, ok := classify(netip.MustParseAddr(in)); ok {
			t.Errorf("classify(%s) = %s, want not guarded", in, g.kind)
		}
	}
	meta := netip.MustParseAddr("169.254.169.254")
	g, _ := classify(meta)
	for cidr, want := range map[string]bool{
		"169.254.169.254/32": true, "169.254.0.0/16": false, "0.0.0.0/0": false, "169.254.169.0/24": false,
	} {
		if got := unlocks(netip.MustParsePrefix(cidr), g, meta); got != want {
			t.Errorf("unlocks(%s, metadata) = %v", cidr, got)
		}
	}
}
