package egress

import (
	"context"
	"crypto/tls"
	"testing"
	"time"
)

// Attacks on a deny rule's exceptions (except_hosts, except_cidrs; E2B's
// allowOut maps onto them, issue 25). The operator's policy is the
// ceiling: an exception narrows its own deny rule and nothing else, so it
// never reaches what another deny rule, a guard or the lack of an allow
// rule refuses. Loopback (127.0.0.0/8, opened by the operator's rule
// "lo") stands in for the public internet; nothing is dialed.

// e2bLayer is what the E2B door makes of network: {denyOut:
// [ALL_TRAFFIC], allowOut: [...]}, here with exceptions an attacker
// would like to stretch.
func e2bLayer() Policy {
	return Policy{Rules: []Rule{{
		ID: "e2b", Action: Deny, CIDRs: []string{"0.0.0.0/0", "::/0"},
		ExceptHosts: []string{"api.example.test", "*.ok.example.test", "secret.example.test", "alias.example.test"},
		ExceptCIDRs: []string{"127.0.0.5", "127.0.9.9/32", "64:ff9b::/96"},
	}}}
}

// operator is the daemon's policy: public web, loopback standing in for
// it, and the operator's own deny rule over a range and a name.
func operator() Policy {
	return Policy{Grant: []Category{PublicWeb}, Rules: []Rule{
		{ID: "lo", Action: Allow, CIDRs: []string{"127.0.0.0/8"}, Ports: []int{443}},
		{ID: "op-deny", Action: Deny, CIDRs: []string{"127.0.9.0/24"}, Hosts: []string{"secret.example.test"}},
	}}
}

func exceptResolver() *fakeResolver {
	return newResolver(
		"api.example.test", "127.0.0.2",
		"x.ok.example.test", "127.0.0.3",
		"evil.example.test", "127.0.0.4",
		"api.example.test.evil.test", "127.0.0.4",
		"evilapi.example.test", "127.0.0.4",
		"five.example.test", "127.0.0.5",
		"ok.example.test", "127.0.0.6",
		"secret.example.test", "127.0.0.8",
		"alias.example.test", "127.0.0.8",
		"mirror.ok.example.test", "127.0.9.1",
	)
}

func decideAt(t *testing.T, e *env, target string) decision {
	t.Helper()
	tg, err := ParseTarget(target, 443)
	if err != nil {
		t.Fatalf("%s: %v", target, err)
	}
	return e.svc.decide(context.Background(), e.svc.policy("sb1"), tg, modeConnect, "ip")
}

func TestExceptionsSpareOnlyWhatTheyName(t *testing.T) {
	e := newEnv(t, exceptResolver(), Config{})
	e.dial.never = true
	e.setPolicy(t, operator().Merge(e2bLayer()))
	for target, want := range map[string]string{
		// Spared by the layer, allowed by the operator.
		"api.example.test":   "",
		"API.Example.TEST.":  "", // the same name, however spelled
		"x.ok.example.test":  "",
		"five.example.test":  "", // its address is excepted
		"127.0.0.5":          "",
		"[::ffff:127.0.0.5]": "",
		// Not spared: the layer denies them.
		"evil.example.test":          "e2b",
		"EVIL.example.TEST.":         "e2b", // case and a trailing dot change nothing
		"127.0.0.4":                  "e2b", // a denied host by its IP literal
		"0x7f.0.0.4":                 "e2b", // ... in hex
		"2130706436":                 "e2b", // ... as one number
		"127.0.0.2":                  "e2b", // a spared name's address is not spared by its literal
		"ok.example.test":            "e2b", // *.ok.example.test is not ok.example.test
		"evilapi.example.test":       "e2b", // a suffix is not a name
		"api.example.test.evil.test": "e2b", // nor a prefix
		"[64:ff9b::7f00:4]":          "e2b", // NAT64 of a denied host: an IPv6 exception does not spare it
		"[::ffff:127.0.0.4]":         "e2b",
		// Spared by the layer, denied by the operator: the ceiling holds.
		"secret.example.test":    "op-deny", // named by the operator's deny rule
		"alias.example.test":     "op-deny", // shares the operator-denied name's address
		"mirror.ok.example.test": "op-deny", // resolves into the operator's denied range
		"127.0.9.9":              "op-deny", // excepted by the layer, in the operator's range
	} {
		d := decideAt(t, e, target)
		if want == "" && !d.allow {
			t.Errorf("%s: refused (%s: %s), want allowed", target, d.rule, d.reason)
		}
		if want != "" && (d.allow || d.rule != want) {
			t.Errorf("%s: allow=%v rule=%s (%s), want denied by %s", target, d.allow, d.rule, d.reason, want)
		}
	}
	// Through the proxy: a CONNECT to a denied host, by name or address,
	// is refused before any dial.
	e.dial.never = false
	for _, target := range []string{"evil.example.test:443", "127.0.0.4:443", "EVIL.EXAMPLE.TEST.:443", "secret.example.test:443"} {
		resp, _ := e.connect(t, target)
		if resp.StatusCode != 403 || (ruleOf(resp) != "e2b" && ruleOf(resp) != "op-deny") {
			t.Errorf("CONNECT %s: %d %s", target, resp.StatusCode, ruleOf(resp))
		}
	}
	if n := e.dial.count(); n != 0 {
		t.Errorf("%d dials", n)
	}
}

// An exception opens nothing the operator did not: not a guarded range,
// not a host no allow rule names.
func TestExceptionsNeverOpen(t *testing.T) {
	e := newEnv(t, exceptResolver(), Config{})
	e.dial.never = true
	// Public web, but loopback not opened: the guard refuses it whatever
	// the layer spares.
	e.setPolicy(t, Policy{Grant: []Category{PublicWeb}}.Merge(e2bLayer()))
	for _, target := range []string{"api.example.test", "127.0.0.5", "five.example.test"} {
		if d := decideAt(t, e, target); d.allow || d.rule != "guard-loopback" {
			t.Errorf("no loopback rule: %s: allow=%v rule=%s, want guard-loopback", target, d.allow, d.rule)
		}
	}
	// No public web: only what an allow rule names.
	e.setPolicy(t, Policy{Rules: []Rule{
		{ID: "api", Action: Allow, Hosts: []string{"api.example.test"}},
		{ID: "lo", Action: Allow, CIDRs: []string{"127.0.0.2/32"}},
	}}.Merge(e2bLayer()))
	if d := decideAt(t, e, "api.example.test"); !d.allow || d.rule != "api" {
		t.Errorf("api.example.test: allow=%v rule=%s (%s)", d.allow, d.rule, d.reason)
	}
	for _, target := range []string{"x.ok.example.test", "127.0.0.5", "five.example.test"} {
		if d := decideAt(t, e, target); d.allow || d.rule != RuleDefaultDeny {
			t.Errorf("no allow rule: %s: allow=%v rule=%s, want %s", target, d.allow, d.rule, RuleDefaultDeny)
		}
	}
}

// A tunnel to a spared name cannot carry a ClientHello for a name the
// layer denies: the server name is judged at the address the tunnel
// reaches, so a spared name does not front for a denied one.
func TestExceptionsAndSNI(t *testing.T) {
	ca := newTestCA(t)
	cert := ca.cert(t, "api.example.test")
	up := startUpstream(t, &cert, nil)
	res := newResolver("api.example.test", "127.0.0.1", "cdn.example.test", "127.0.0.1", "evil.example.test", "127.0.0.1")
	e := newEnv(t, res, Config{HelloTimeout: 300 * time.Millisecond})
	ceiling := Policy{Rules: []Rule{
		{ID: "hosts", Action: Allow, Hosts: []string{"api.example.test", "cdn.example.test", "evil.example.test"}, Ports: []int{up.port}},
		{ID: "lo", Action: Allow, CIDRs: []string{"127.0.0.1/32"}, Ports: []int{up.port}},
	}}
	layer := Policy{Rules: []Rule{{ID: "e2b", Action: Deny, CIDRs: []string{"0.0.0.0/0", "::/0"},
		ExceptHosts: []string{"api.example.test", "cdn.example.test"}}}}
	e.setPolicy(t, ceiling.Merge(layer))
	hello := func(target, sni string) error {
		t.Helper()
		resp, c := e.connect(t, target)
		if resp.StatusCode != 200 {
			return errStatus(resp.StatusCode, ruleOf(resp))
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(3 * time.Second))
		return tls.Client(c, &tls.Config{ServerName: sni, InsecureSkipVerify: true}).Handshake()
	}
	port := itoa(up.port)
	if err := hello("api.example.test:"+port, "cdn.example.test"); err != nil {
		t.Errorf("a spared SNI on a spared tunnel: %v", err)
	}
	if err := hello("api.example.test:"+port, "evil.example.test"); err == nil {
		t.Errorf("a denied name went through a spared name's tunnel")
	}
	if err := hello("evil.example.test:"+port, "api.example.test"); err == nil {
		t.Errorf("CONNECT to a denied name was let through")
	}
	var sniDenied bool
	for _, ev := range e.rec.all() {
		if ev.Kind == KindClose && ev.Rule == RuleSNI && ev.SNI == "evil.example.test" {
			sniDenied = true
		}
	}
	if !sniDenied {
		t.Errorf("no SNI refusal recorded: %s", e.rec.json(t))
	}
}

type statusErr struct {
	code int
	rule string
}

func (s statusErr) Error() string { return "CONNECT answered " + itoa(s.code) + " (" + s.rule + ")" }

func errStatus(code int, rule string) error { return statusErr{code, rule} }
