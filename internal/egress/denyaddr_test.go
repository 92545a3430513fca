package egress

import (
	"context"
	"net/netip"
	"slices"
	"testing"
	"time"
)

// Threat model, Egress: with public_web granted, a host a deny rule names
// is not reached by its IP address or by another name on the same
// server: the deny rule's names are resolved host-side and their
// addresses refused for destinations public_web alone allows.
func TestDenyByNameCoversItsAddresses(t *testing.T) {
	res := newResolver("denied.example.test", "127.0.0.1", "alias.example.test", "127.0.0.1",
		"evil.example.test", "100.128.0.9", "*.evil.example.test", "100.128.0.9", "elsewhere.example.test", "100.128.0.10",
		"named.example.test", "127.0.0.1")
	e := newEnv(t, res, Config{})
	e.dial.never = true // nothing here may be dialed
	e.setPolicy(t, Policy{Grant: []Category{PublicWeb}, Rules: []Rule{
		{ID: "no-denied", Action: Deny, Hosts: []string{"denied.example.test", "*.evil.example.test"}},
		{ID: "named", Action: Allow, Hosts: []string{"named.example.test"}, Ports: []int{443}},
		loopbackRule(443), // public_web's port, so loopback stands in for a public server
	}})
	decide := func(host string, port int) decision {
		t.Helper()
		tg, err := ParseTarget(host+":"+itoa(port), 0)
		if err != nil {
			t.Fatal(err)
		}
		return e.svc.decide(context.Background(), e.svc.policy("sb1"), tg, modeConnect, "ip")
	}
	for _, c := range []struct {
		host string
		port int
	}{
		{"alias.example.test", 443},     // another name for the same server
		{"100.128.0.9", 443},            // the IP address of the wildcard rule's base name
		{"[::ffff:0:100.128.0.9]", 443}, // the same, embedded
	} {
		if d := decide(c.host, c.port); d.allow || d.rule != "no-denied" {
			t.Errorf("%s: allow=%v rule=%s (%s), want denied by no-denied", c.host, d.allow, d.rule, d.reason)
		}
	}
	if d := decide("elsewhere.example.test", 443); !d.allow {
		t.Errorf("an unrelated public name was refused: %s %s", d.rule, d.reason)
	}
	// An allow rule that names the host is the operator's choice.
	if d := decide("named.example.test", 443); !d.allow || d.rule != "named" {
		t.Errorf("named.example.test: %v %s %s", d.allow, d.rule, d.reason)
	}
	// Through the proxy: refused before any dial, and recorded.
	e.dial.never = false
	resp, _ := e.connect(t, "alias.example.test:443")
	if resp.StatusCode != 403 || ruleOf(resp) != "no-denied" {
		t.Errorf("CONNECT alias: %d %s", resp.StatusCode, ruleOf(resp))
	}
	if n := e.dial.count(); n != 0 {
		t.Errorf("%d dials", n)
	}
	// The deny names' addresses are cached, not asked per decision.
	n := 0
	for _, h := range res.lookups() {
		if h == "denied.example.test" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("denied.example.test was resolved %d times, want once (cached)", n)
	}
	if !slices.Contains(res.lookups(), "evil.example.test") {
		t.Errorf("the wildcard rule's base name was not resolved: %v", res.lookups())
	}
}

// The cache expires: a deny name that moves is followed.
func TestDeniedAddrsExpire(t *testing.T) {
	res := newResolver("denied.example.test", "100.128.0.9")
	now := time.Unix(1_800_000_000, 0)
	e := newEnv(t, res, Config{Now: func() time.Time { return now }})
	dc := &deniedCache{}
	if got := e.svc.deniedAddrs(context.Background(), dc, "denied.example.test", false); len(got) != 1 {
		t.Fatalf("addrs %v", got)
	}
	res.mu.Lock()
	res.answers["denied.example.test"] = res.answers["denied.example.test"][:0]
	res.answers["denied.example.test"] = append(res.answers["denied.example.test"], netip.MustParseAddr("100.128.0.11"))
	res.mu.Unlock()
	if got := e.svc.deniedAddrs(context.Background(), dc, "denied.example.test", false); got[0].String() != "100.128.0.9" {
		t.Errorf("before the TTL: %v", got)
	}
	now = now.Add(deniedTTL + time.Second)
	if got := e.svc.deniedAddrs(context.Background(), dc, "denied.example.test", false); got[0].String() != "100.128.0.11" {
		t.Errorf("after the TTL: %v", got)
	}
}
