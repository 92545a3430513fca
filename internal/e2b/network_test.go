package e2b

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/netpolicy"
)

func createLayer(t *testing.T, body string) *netpolicy.Policy {
	t.Helper()
	cr, err := parseCreate(strings.NewReader(body), "host")
	if err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	if cr.Policy != nil || !cr.TightenOnly {
		t.Fatalf("%s: policy layer %+v, tighten-only %v", body, cr.Policy, cr.TightenOnly)
	}
	return cr.NetworkLayer
}

// The shapes: denyOut is deny rules (per port), allowOut their
// exceptions, ALL_TRAFFIC covers IPv6 too, and the layer grants nothing
// and allows nothing.
func TestNetworkLayer(t *testing.T) {
	eg := createLayer(t, `{"network":{"denyOut":["0.0.0.0/0","203.0.113.0/24","198.51.100.7:25","[2001:db8::1]:25","evil.example.test"],
		"allowOut":["api.example.test","*.ok.example.test","192.0.2.7","2001:db8:1::/48"," 192.0.2.7 "]}}`)
	if eg == nil || eg.Grant != nil || len(eg.Presets) != 0 || len(eg.Secrets) != 0 || len(eg.Rules) != 2 {
		t.Fatalf("layer %+v", eg)
	}
	all, p25 := eg.Rules[0], eg.Rules[1]
	if all.ID != denyOutRule || all.Action != netpolicy.Deny || len(all.Ports) != 0 ||
		!slices.Equal(all.CIDRs, []string{"0.0.0.0/0", "::/0", "203.0.113.0/24"}) || !slices.Equal(all.Hosts, []string{"evil.example.test"}) {
		t.Errorf("every-port rule %+v", all)
	}
	if p25.ID != denyOutRule+"-25" || !slices.Equal(p25.Ports, []int{25}) || !slices.Equal(p25.CIDRs, []string{"198.51.100.7/32", "2001:db8::1/128"}) {
		t.Errorf("port-25 rule %+v", p25)
	}
	for _, r := range eg.Rules {
		if !slices.Equal(r.ExceptHosts, []string{"api.example.test", "*.ok.example.test"}) || !slices.Equal(r.ExceptCIDRs, []string{"192.0.2.7/32", "2001:db8:1::/48"}) {
			t.Errorf("rule %s exceptions %v %v", r.ID, r.ExceptHosts, r.ExceptCIDRs)
		}
	}
	// allow_internet_access false is ALL_TRAFFIC in denyOut, allowOut
	// excepted from it, as E2B documents.
	eg = createLayer(t, `{"allow_internet_access":false,"network":{"allowOut":["api.example.test"]}}`)
	if len(eg.Rules) != 1 || !slices.Equal(eg.Rules[0].CIDRs, []string{"0.0.0.0/0", "::/0"}) || !slices.Equal(eg.Rules[0].ExceptHosts, []string{"api.example.test"}) {
		t.Errorf("no internet with allowOut: %+v", eg)
	}
	// Nothing denied: no layer (an allowOut of addresses alone excepts
	// nothing, as on E2B, where everything is allowed anyway).
	for _, body := range []string{`{"network":{}}`, `{"network":null}`, `{"network":{"allowOut":["192.0.2.7"]}}`, `{"network":{"allowPublicTraffic":false,"maskRequestHost":""}}`} {
		if eg := createLayer(t, body); eg != nil {
			t.Errorf("%s: layer %+v", body, eg)
		}
	}
}

// What airlock cannot honour is a 400 naming it, never dropped.
func TestNetworkRefusals(t *testing.T) {
	for body, want := range map[string]string{
		`{"network":{"egressProxy":{"address":"proxy.example.test:1080"}}}`:                      "unsupported by airlock: network.egressProxy",
		`{"network":{"rules":{"api.example.test":[{"transform":{"headers":{"A":"b"}}}]}}}`:       "unsupported by airlock: network.rules",
		`{"network":{"maskRequestHost":"${PORT}-x.example.test"}}`:                               "unsupported by airlock: network.maskRequestHost",
		`{"network":{"allowPublicTraffic":true}}`:                                                "unsupported by airlock: network.allowPublicTraffic",
		`{"network":{"denyOut":["0.0.0.0/0"],"allowIn":["192.0.2.0/24"]}}`:                       `unknown field "allowIn"`,
		`{"network":{"denyOut":["0.0.0.0/0"],"allowOut":["192.0.2.7:443"]}}`:                     "unsupported by airlock: network.allowOut[0]",
		`{"network":{"denyOut":["0.0.0.0/0:1-1024"]}}`:                                           "a port range",
		`{"network":{"denyOut":["0.0.0.0/0:0"]}}`:                                                "port",
		`{"network":{"denyOut":["0.0.0.0/0:080"]}}`:                                              "port",
		`{"network":{"denyOut":["203.0.113.7/24"]}}`:                                             "host bits",
		`{"network":{"denyOut":["fe80::1%eth0"]}}`:                                               "zone",
		`{"network":{"denyOut":["010.0.0.1"]}}`:                                                  "address",
		`{"network":{"denyOut":[""]}}`:                                                           "denyOut[0]",
		`{"network":{"denyOut":["a b.example.test"]}}`:                                           "network",
		`{"network":{"allowOut":["api.example.test"]}}`:                                          "include ALL_TRAFFIC",
		`{"network":{"denyOut":["203.0.113.0/24"],"allowOut":["api.example.test"]}}`:             "include ALL_TRAFFIC",
		`{"network":{"denyOut":["0.0.0.0/0:443"],"allowOut":["api.example.test"]}}`:              "include ALL_TRAFFIC",
		`{"network":{"denyOut":["0.0.0.0/0"],"allowOut":["api.example.test/x"]}}`:                "network",
		`{"network":{"denyOut":"0.0.0.0/0"}}`:                                                    "network",
		`{"allow_internet_access":false,"network":{"egressProxy":{"address":"p.example.test"}}}`: "egressProxy",
	} {
		_, err := parseCreate(strings.NewReader(body), "host")
		if err == nil || !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an invalid-request error with %q", body, err, want)
		}
	}
}

type resolver map[string][]netip.Addr

func (r resolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, a := range r[host] {
		if network == "ip" || (network == "ip4") == a.Is4() {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return out, nil
}

// Attacks, from the E2B body to the proxy's decision (egress.CheckFetch
// decides as the proxy does; TLS is a CONNECT): the operator's policy is
// the ceiling, the network layer only narrows it. Loopback stands in for
// the internet (the operator opens 127.0.0.0/8); nothing is dialed.
func TestNetworkLayerAttacks(t *testing.T) {
	res := resolver{}
	for name, a := range map[string]string{
		"api.example.test": "127.0.0.2", "evil.example.test": "127.0.0.4", "x.ok.example.test": "127.0.0.3",
		"covered.example.test": "127.0.7.7", "secret.example.test": "127.0.0.8", "mirror.ok.example.test": "127.0.9.1",
		"other.example.test": "127.0.0.10",
	} {
		res[name] = []netip.Addr{netip.MustParseAddr(a)}
	}
	ceiling := netpolicy.Policy{Grant: []netpolicy.Category{netpolicy.PublicWeb}, Rules: []netpolicy.Rule{
		{ID: "lo", Action: netpolicy.Allow, CIDRs: []string{"127.0.0.0/8"}},
		{ID: "op-deny", Action: netpolicy.Deny, CIDRs: []string{"127.0.9.0/24"}, Hosts: []string{"secret.example.test"}},
	}}
	decide := func(p netpolicy.Policy, target string) egress.FetchDecision {
		t.Helper()
		tg, err := egress.ParseTarget(target, 443)
		if err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		d, err := egress.CheckFetch(context.Background(), &p, nil, res, tg, true)
		if err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		return d
	}
	// E2B's whitelist: deny all, except a few; an attacker also lists
	// what the operator denies, and 127.0.9.0/24 inside it.
	layer := createLayer(t, `{"network":{"denyOut":["0.0.0.0/0","127.0.7.0/24"],
		"allowOut":["api.example.test","*.ok.example.test","secret.example.test","127.0.9.9","127.0.0.5"]}}`)
	pol := ceiling.Merge(*layer)
	for target, want := range map[string]string{
		"api.example.test":     "lo",
		"API.EXAMPLE.TEST.":    "lo", // case and a trailing dot: the same spared name
		"x.ok.example.test":    "lo",
		"127.0.0.5":            "lo",
		"evil.example.test":    denyOutRule,
		"Evil.Example.Test.":   denyOutRule,
		"127.0.0.4":            denyOutRule, // the denied host by its IP literal
		"0177.0.0.4":           denyOutRule, // ... in octal
		"[::ffff:7f00:4]":      denyOutRule, // ... IPv4-mapped
		"127.0.0.2":            denyOutRule, // a spared name's address is not spared by its literal
		"covered.example.test": denyOutRule, // resolves into a denied CIDR
		"127.7.0.1":            denyOutRule,
		// The ceiling: what the operator denies stays denied.
		"secret.example.test":    "op-deny",
		"127.0.9.9":              "op-deny",
		"mirror.ok.example.test": "op-deny",
	} {
		d := decide(pol, target)
		allowWant := want == "lo"
		if d.Allow != allowWant || (!allowWant && d.Rule != want) || (allowWant && d.Rule == denyOutRule) {
			t.Errorf("%s: allow=%v rule=%s (%s), want %s", target, d.Allow, d.Rule, d.Reason, want)
		}
	}
	// allowOut opens nothing the operator does not allow: without public
	// web and the loopback rule, a spared name is refused as before.
	narrow := netpolicy.Policy{Rules: []netpolicy.Rule{{ID: "api", Action: netpolicy.Allow, Hosts: []string{"api.example.test"}},
		{ID: "lo", Action: netpolicy.Allow, CIDRs: []string{"127.0.0.2/32"}}}}
	wide := createLayer(t, `{"network":{"denyOut":["0.0.0.0/0"],"allowOut":["0.0.0.0/0","::/0","other.example.test","*.example.test"]}}`)
	for target, want := range map[string]string{"api.example.test": "api", "other.example.test": egress.RuleDefaultDeny, "127.0.0.10": egress.RuleDefaultDeny} {
		if d := decide(narrow.Merge(*wide), target); d.Rule != want || d.Allow != (want == "api") {
			t.Errorf("narrow ceiling: %s: allow=%v rule=%s (%s), want %s", target, d.Allow, d.Rule, d.Reason, want)
		}
	}
	if d := decide(netpolicy.Policy{Grant: []netpolicy.Category{netpolicy.PublicWeb}}.Merge(*wide), "other.example.test"); d.Allow || d.Rule != "guard-loopback" {
		t.Errorf("an exception opened a guarded range: allow=%v rule=%s", d.Allow, d.Rule)
	}
	// A denyOut cannot widen the operator's deny: whatever it lists, the
	// merged policy loses none of the operator's rules, and the layer
	// passes the tighten-only check.
	for _, body := range []string{
		`{"network":{"denyOut":["127.0.9.0/25"],"allowOut":["127.0.9.0/24"]}}`,
		`{"network":{"denyOut":["::/0","0.0.0.0/0"],"allowOut":["secret.example.test","0.0.0.0/0"]}}`,
		`{"allow_internet_access":false,"network":{"allowOut":["127.0.0.0/8","secret.example.test","*.example.test"]}}`,
	} {
		l := createLayer(t, body)
		merged := ceiling.Merge(*l)
		if loose := merged.LooserThan(ceiling); len(loose) != 0 {
			t.Errorf("%s: looser than the operator's: %v", body, loose)
		}
		for _, target := range []string{"secret.example.test", "127.0.9.9", "127.0.9.200", "mirror.ok.example.test"} {
			if d := decide(merged, target); d.Allow || d.Rule != "op-deny" {
				t.Errorf("%s: %s: allow=%v rule=%s, want op-deny", body, target, d.Allow, d.Rule)
			}
		}
	}
	// The same attacks as updateNetwork bodies, whose layer replaces the
	// create's: the operator's deny still decides.
	for _, body := range []string{
		`{"denyOut":["127.0.9.0/25"],"allowOut":["127.0.9.0/24"]}`,
		`{"denyOut":["::/0","0.0.0.0/0"],"allowOut":["secret.example.test","0.0.0.0/0","*.ok.example.test"]}`,
		`{"allow_internet_access":false,"allowOut":["127.0.0.0/8","secret.example.test","*.example.test"]}`,
		`{}`,
	} {
		l, _, err := parseUpdate(strings.NewReader(body))
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		merged := ceiling
		if l != nil {
			var err error
			if merged, err = ceiling.NarrowedBy(*l); err != nil {
				t.Fatalf("%s: %v", body, err)
			}
		}
		for _, target := range []string{"secret.example.test", "127.0.9.9", "mirror.ok.example.test"} {
			if d := decide(merged, target); d.Allow || d.Rule != "op-deny" {
				t.Errorf("update %s: %s: allow=%v rule=%s, want op-deny", body, target, d.Allow, d.Rule)
			}
		}
	}
}

// Through the door: the sandbox's effective policy is the daemon's with
// the network layer on top; a refused network object makes no sandbox.
func TestE2BNetworkThroughTheDoor(t *testing.T) {
	d := newDoor(t, withEgress)
	ctx := context.Background()
	key := map[string]string{"X-API-KEY": d.key, "Content-Type": "application/json"}
	resp, b := d.call("POST", "/v2/sandboxes", []byte(`{"templateID":"base","timeout":300,"allow_internet_access":true,
		"network":{"denyOut":["0.0.0.0/0"],"allowOut":["api.example.test","192.0.2.7"]}}`), key)
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	var c struct{ SandboxID string }
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	p, err := d.net.EgressPolicy(ctx, c.SandboxID)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(p.Rules, func(r netpolicy.Rule) bool { return r.ID == denyOutRule })
	if i < 0 {
		t.Fatalf("no %s rule in %+v", denyOutRule, p)
	}
	if r := p.Rules[i]; r.Action != netpolicy.Deny || !slices.Equal(r.ExceptHosts, []string{"api.example.test"}) || !slices.Equal(r.ExceptCIDRs, []string{"192.0.2.7/32"}) {
		t.Errorf("rule %+v", r)
	}
	n, _ := d.m.List(ctx, "")
	resp, b = d.call("POST", "/v2/sandboxes", []byte(`{"templateID":"base","network":{"denyOut":["0.0.0.0/0"],"allowOut":["api.example.test:443"]}}`), key)
	if resp.StatusCode != 400 || !strings.Contains(string(b), `"code":400`) || !strings.Contains(string(b), "unsupported by airlock: network.allowOut[0]") {
		t.Errorf("allowOut with a port: %d %s", resp.StatusCode, b)
	}
	if m, _ := d.m.List(ctx, ""); len(m) != len(n) {
		t.Errorf("a refused create made a sandbox")
	}
}
