package netpolicy

import (
	"net/netip"
	"slices"
	"testing"
)

// The matchers the proxy decides with, on their own: names and
// wildcards, CIDRs (an IPv4-mapped form included), ports and their
// defaults per mode, categories, and deny rules' ports and names.
func TestCompiledMatchers(t *testing.T) {
	c, err := Compile(&Policy{Grant: []Category{Git}, Presets: []string{"npm"}, Rules: []Rule{
		{ID: "corp-git", Action: Allow, Category: Git, Hosts: []string{"git.example.test", "*.git.example.test"}, Ports: []int{22, 443}, Opaque: true},
		{ID: "cache", Action: Allow, Category: Internal, CIDRs: []string{"10.20.0.0/16"}},
		{ID: "no-paste", Action: Deny, Hosts: []string{"*.paste.example.test", "paste.example.test"}},
		{ID: "no-smtp", Action: Deny, CIDRs: []string{"192.0.2.0/24"}, Ports: []int{25}},
	}}, Presets{"npm": {"registry.example.test:443"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Allow) != 3 || c.Allow[0].ID != "preset-npm" || c.Allow[0].Category != Registries || len(c.Deny) != 2 {
		t.Fatalf("compiled %+v", c)
	}
	pre, git, cache := c.Allow[0], c.Allow[1], c.Allow[2]
	if !pre.MatchName("registry.example.test") || !slices.Equal(pre.Ports(ModeHTTP), []int{443}) {
		t.Errorf("preset: %+v", pre)
	}
	for name, want := range map[string]bool{"git.example.test": true, "a.git.example.test": true, "a.b.git.example.test": true, "xgit.example.test": false, "example.test": false} {
		if git.MatchName(name) != want {
			t.Errorf("corp-git MatchName(%s) != %v", name, want)
		}
	}
	if !git.Opaque || !git.PortOK(ModeConnect, 22) || git.PortOK(ModeConnect, 80) || !git.PortOK(ModeDNS, 0) {
		t.Errorf("corp-git ports: %v", git.Ports(ModeConnect))
	}
	if !cache.MatchAddr(netip.MustParseAddr("::ffff:10.20.3.4")) || cache.MatchAddr(netip.MustParseAddr("10.21.0.1")) {
		t.Error("cache CIDR")
	}
	if !slices.Equal(cache.Ports(ModeConnect), []int{443}) || !slices.Equal(cache.Ports(ModeHTTP), []int{80, 443}) {
		t.Errorf("default ports: %v %v", cache.Ports(ModeConnect), cache.Ports(ModeHTTP))
	}
	if !c.Granted(Git) || c.Granted(Internal) || !c.Active(git) || c.Active(cache) || !c.Active(pre) {
		t.Error("categories: only granted ones (git) are active, and a preset on its own (registries is not granted)")
	}
	paste, smtp := c.Deny[0], c.Deny[1]
	if !paste.Denies(ModeDNS, 0) || !paste.Denies(ModeConnect, 8443) || !slices.Equal(paste.DenyNames(), []string{"paste.example.test", "paste.example.test"}) {
		t.Errorf("no-paste: %v", paste.DenyNames())
	}
	if smtp.Denies(ModeDNS, 0) || !smtp.Denies(ModeHTTP, 25) || smtp.Denies(ModeHTTP, 80) {
		t.Error("a deny rule with ports stops only those ports, and never a DNS answer")
	}
	d := DefaultPorts(ModeHTTP)
	d[0] = 1
	if !slices.Equal(DefaultPorts(ModeHTTP), []int{80, 443}) {
		t.Error("DefaultPorts handed out the shared slice")
	}
}
