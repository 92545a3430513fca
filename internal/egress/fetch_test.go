package egress

import (
	"context"
	"slices"
	"testing"
)

// A daemon-side fetch is decided as a sandbox's request would be: deny
// rules first, allow rules and categories, ports by scheme, the guards on
// every address, one resolution; no policy allows nothing, and a denied
// name is never resolved.
func TestCheckFetchDecidesLikeEgress(t *testing.T) {
	ctx := context.Background()
	res := newResolver("git.example.test", "8.8.8.8", "mixed.example.test", "8.8.4.4,10.0.0.1",
		"inside.example.test", "10.0.0.2", "blocked.example.test", "9.9.9.9")
	pol := &Policy{Grant: []Category{PublicWeb}, Rules: []Rule{
		{ID: "lan-git", Action: Allow, CIDRs: []string{"10.0.0.2/32"}, Ports: []int{8443}},
		{ID: "no-blocked", Action: Deny, Hosts: []string{"blocked.example.test"}},
		{ID: "no-net", Action: Deny, CIDRs: []string{"8.8.4.4/32"}},
	}}
	target := func(s string, port int) Target {
		tg, err := ParseTarget(s, port)
		if err != nil {
			t.Fatal(err)
		}
		return tg
	}
	cases := []struct {
		host      string
		port      int
		tls       bool
		allow     bool
		rule      string
		addrs     []string
		resolving bool
	}{
		{"git.example.test", 443, true, true, RulePublicWeb, []string{"8.8.8.8"}, true},
		{"git.example.test", 80, false, true, RulePublicWeb, []string{"8.8.8.8"}, true},
		{"git.example.test", 80, true, false, RulePort, nil, false},
		{"blocked.example.test", 443, true, false, "no-blocked", nil, false},
		{"mixed.example.test", 443, true, false, "no-net", nil, true},
		{"inside.example.test", 443, true, false, "guard-private", nil, true},
		{"10.0.0.2", 8443, true, true, "lan-git", []string{"10.0.0.2"}, false},
		{"10.0.0.2", 443, true, false, "guard-private", nil, false},
		{"127.0.0.1", 443, true, false, "guard-loopback", nil, false},
		{"169.254.169.254", 80, false, false, "guard-metadata", nil, false},
	}
	for _, c := range cases {
		before := len(res.lookups())
		d, err := CheckFetch(ctx, pol, nil, res, target(c.host, c.port), c.tls)
		if err != nil {
			t.Fatal(err)
		}
		var addrs []string
		for _, a := range d.Addrs {
			addrs = append(addrs, a.String())
		}
		if d.Allow != c.allow || d.Rule != c.rule || !slices.Equal(addrs, c.addrs) {
			t.Errorf("%s:%d: %+v, want allow %v by %s at %v", c.host, c.port, d, c.allow, c.rule, c.addrs)
		}
		if resolved := len(res.lookups()) > before; resolved != c.resolving {
			t.Errorf("%s:%d: resolved %v, want %v", c.host, c.port, resolved, c.resolving)
		}
	}
	if d, err := CheckFetch(ctx, nil, nil, res, target("git.example.test", 443), true); err != nil || d.Allow || d.Rule != RuleDefaultDeny {
		t.Errorf("no fetch policy: %+v %v", d, err)
	}
}
