package egress

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// Found in a review: the deny-by-address cache held at most 4096 names
// across every sandbox and was wiped whole when full. A policy with more
// deny names than that (a remote key may add deny rules to its sandbox's
// layer: tightening is always allowed, and a 1 MiB body holds tens of
// thousands of names) made every public_web decision resolve every name
// again, host-side and outside the sandbox's DNS rate, and evicted every
// other sandbox's cached deny names. Now a policy names at most
// maxDenyNames deny hosts, and each policy caches its own.
func TestDenyNamesBoundedAndCachedPerPolicy(t *testing.T) {
	res := newResolver("pub.example.test", "127.0.0.1", "other-deny.example.test", "100.128.0.9")
	now := time.Unix(1_800_000_000, 0)
	e := newEnv(t, res, Config{Now: func() time.Time { return now }})
	names := make([]string, maxDenyNames+1)
	for i := range names {
		names[i] = fmt.Sprintf("d%d.deny.example.test", i)
	}
	if err := e.svc.SetPolicy("sb1", Policy{Grant: []Category{PublicWeb}, Rules: []Rule{{ID: "many", Action: Deny, Hosts: names}}}); err == nil {
		t.Fatalf("a policy denying %d host names was taken", len(names))
	}
	names = names[:maxDenyNames]
	e.setPolicy(t, Policy{Grant: []Category{PublicWeb}, Rules: []Rule{
		{ID: "many", Action: Deny, Hosts: names},
		loopbackRule(443),
	}})
	// Another sandbox, with one deny name of its own.
	if err := e.svc.SetPolicy("sb2", Policy{Grant: []Category{PublicWeb}, Rules: []Rule{
		{ID: "one", Action: Deny, Hosts: []string{"other-deny.example.test"}}, loopbackRule(443),
	}}); err != nil {
		t.Fatal(err)
	}
	tg, err := ParseTarget("pub.example.test:443", 0)
	if err != nil {
		t.Fatal(err)
	}
	decide := func(sb string) int {
		before := len(res.lookups())
		d := e.svc.decide(context.Background(), e.svc.policy(sb), tg, modeConnect, "ip")
		if !d.allow {
			t.Fatalf("%s: refused: %s %s", sb, d.rule, d.reason)
		}
		return len(res.lookups()) - before - 1 // less the destination's own lookup
	}
	decide("sb2")
	first := decide("sb1")
	second := decide("sb1")
	other := decide("sb2")
	t.Logf("deny-name lookups: sb1 first decision %d, sb1 second decision %d, sb2 after sb1 %d", first, second, other)
	if second > 0 {
		t.Errorf("a second decision within the cache's TTL resolved %d deny names again (the cache was wiped by one policy's names)", second)
	}
	if other > 0 {
		t.Errorf("another sandbox's cached deny name was evicted by sb1's policy: %d lookups", other)
	}
}
