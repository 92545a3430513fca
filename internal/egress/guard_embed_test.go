package egress

import (
	"net/netip"
	"testing"
)

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
