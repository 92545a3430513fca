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
