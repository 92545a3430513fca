package netpolicy

import (
	"errors"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"go.yaml.in/yaml/v3"
)

func TestExceptionsParse(t *testing.T) {
	p, err := Parse([]byte(`
rules:
  - id: e2b
    action: deny
    cidrs: ["0.0.0.0/0", "::/0"]
    except_hosts: ["API.Example.Test.", "*.ok.example.test"]
    except_cidrs: ["192.0.2.7", "198.51.100.0/24"]
`))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := c.Deny[0]
	for name, want := range map[string]bool{
		"api.example.test": true, "x.ok.example.test": true,
		"ok.example.test": false, "evilapi.example.test": false, "api.example.test.evil.test": false,
	} {
		if r.ExceptsName(name) != want {
			t.Errorf("ExceptsName(%s) = %v", name, !want)
		}
	}
	for addr, want := range map[string]bool{
		"192.0.2.7": true, "::ffff:192.0.2.7": true, "198.51.100.200": true,
		"192.0.2.8": false, "2001:db8::1": false,
	} {
		if r.ExceptsAddr(netip.MustParseAddr(addr)) != want {
			t.Errorf("ExceptsAddr(%s) = %v", addr, !want)
		}
	}
	for what, doc := range map[string]string{
		"an exception to an allow rule": "rules: [{id: a, action: allow, hosts: [a.example.test], except_hosts: [b.example.test]}]",
		"an address as a host":          "rules: [{id: a, action: deny, cidrs: [0.0.0.0/0], except_hosts: ['192.0.2.7']}]",
		"a bad name":                    "rules: [{id: a, action: deny, cidrs: [0.0.0.0/0], except_hosts: ['a b']}]",
		"host bits set":                 "rules: [{id: a, action: deny, cidrs: [0.0.0.0/0], except_cidrs: ['192.0.2.7/24']}]",
		"not a cidr":                    "rules: [{id: a, action: deny, cidrs: [0.0.0.0/0], except_cidrs: [example.test]}]",
		"exceptions alone":              "rules: [{id: a, action: deny, except_cidrs: ['192.0.2.7']}]",
	} {
		if _, err := Parse([]byte(doc)); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("%s: %v, want invalid", what, err)
		}
	}
}

// A caller that may only tighten cannot widen a deny rule by restating it
// with exceptions: that drops the rule, and LooserThan says so; a new
// deny rule with exceptions only adds a deny.
func TestExceptionsCannotWidenADeny(t *testing.T) {
	prev := Policy{Rules: []Rule{{ID: "op-deny", Action: Deny, CIDRs: []string{"203.0.113.0/24"}}}}
	widened := Policy{Rules: []Rule{{ID: "op-deny", Action: Deny, CIDRs: []string{"203.0.113.0/24"}, ExceptCIDRs: []string{"203.0.113.7"}}}}
	if loose := widened.LooserThan(prev); len(loose) != 1 || !strings.Contains(loose[0], "op-deny is dropped") {
		t.Errorf("restating a deny with exceptions: %v, want it reported dropped", loose)
	}
	added := prev
	added.Rules = append(added.Rules, Rule{ID: "e2b", Action: Deny, CIDRs: []string{"0.0.0.0/0"}, ExceptCIDRs: []string{"203.0.113.7"}})
	if loose := added.LooserThan(prev); len(loose) != 0 {
		t.Errorf("an added deny with exceptions: %v", loose)
	}
	// Layered, the same id is refused rather than shadowing the first.
	merged := prev.Merge(widened)
	if _, err := Compile(&merged, nil); err == nil || !strings.Contains(err.Error(), "used twice") {
		t.Errorf("a layer restating op-deny with exceptions compiled: %v", err)
	}
}

// The README's egress example, exceptions included, is a policy that
// checks, and its exception means what the README says.
func TestREADMEEgressExample(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "```yaml\negress:\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("README has no ```yaml egress: block")
	}
	var doc struct {
		Egress Policy `yaml:"egress"`
	}
	dec := yaml.NewDecoder(strings.NewReader("egress:\n" + block))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	c, err := Compile(&doc.Egress, nil)
	if err != nil {
		t.Fatal(err)
	}
	var lan *CompiledRule
	for _, r := range c.Deny {
		if len(r.exceptNames) > 0 {
			lan = r
		}
	}
	if lan == nil || !lan.MatchAddr(netip.MustParseAddr("10.1.2.3")) || !lan.ExceptsName("mirror.corp.example.com") || lan.ExceptsName("corp.example.com") {
		t.Errorf("the README's deny rule with an exception: %+v", lan)
	}
}
