package netpolicy

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

const examplePolicy = `
grant: [registries, git]
presets: [npm, go, debian]
rules:
  - id: corp-git
    action: allow
    category: git
    hosts: ["git.corp.example.test", "*.git.corp.example.test"]
    ports: [443, 22]
    opaque: true
  - id: build-cache
    action: allow
    category: internal
    cidrs: ["10.20.0.0/16"]
    ports: [8080]
  - id: no-paste
    action: deny
    hosts: ["*.paste.example.test"]
secrets:
  - id: git-token
    placeholder: AIRLOCK-SECRET-GIT-TOKEN
    hosts: ["git.corp.example.test"]
    headers: [Authorization]
`

func TestParsePolicy(t *testing.T) {
	p, err := Parse([]byte(examplePolicy))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Rules) != 3 || len(p.Secrets) != 1 || p.Secrets[0].Value != "" || len(p.Grant) != 2 {
		t.Errorf("parsed %+v", p)
	}
	if p, err := Parse(nil); err != nil || len(p.Rules) != 0 {
		t.Errorf("empty: %+v %v", p, err)
	}
	if _, err := ParseJSON([]byte(`{"grant":["git"],"rules":[{"id":"a","action":"allow","hosts":["a.example.test"]}]}`)); err != nil {
		t.Errorf("JSON: %v", err)
	}
	bad := map[string]string{
		"unknown key":          "rulez: []",
		"unknown category":     "grant: [everything]",
		"unknown preset":       "presets: [maven]",
		"unknown action":       "rules: [{id: a, action: ask, hosts: [a.example.test]}]",
		"no id":                "rules: [{action: allow, hosts: [a.example.test]}]",
		"id with colon":        "rules: [{id: 'a:b', action: allow, hosts: [a.example.test]}]",
		"duplicate id":         "rules: [{id: a, action: allow, hosts: [a.example.test]}, {id: a, action: deny, hosts: [b.example.test]}]",
		"matches nothing":      "rules: [{id: a, action: allow}]",
		"bad host":             "rules: [{id: a, action: allow, hosts: ['a b']}]",
		"address as host":      "rules: [{id: a, action: allow, hosts: ['10.0.0.1']}]",
		"inner wildcard":       "rules: [{id: a, action: allow, hosts: ['a.*.example.test']}]",
		"bad cidr":             "rules: [{id: a, action: allow, cidrs: ['10.0.0.0/33']}]",
		"host bits":            "rules: [{id: a, action: allow, cidrs: ['10.0.0.1/8']}]",
		"bad port":             "rules: [{id: a, action: allow, hosts: [a.example.test], ports: [70000]}]",
		"deny with category":   "rules: [{id: a, action: deny, category: git, hosts: [a.example.test]}]",
		"public_web as a rule": "rules: [{id: a, action: allow, category: public_web, hosts: [a.example.test]}]",
		"short placeholder":    "secrets: [{id: s, placeholder: short, hosts: [a.example.test]}]",
		"secret without hosts": "secrets: [{id: s, placeholder: AIRLOCK-SECRET-XXXX}]",
		"value in the file":    "secrets: [{id: s, placeholder: AIRLOCK-SECRET-XXXX, hosts: [a.example.test], value: x}]",
		"nested placeholders":  "secrets: [{id: s, placeholder: AIRLOCK-SECRET-XXXX, hosts: [a.example.test]}, {id: t, placeholder: AIRLOCK-SECRET-XXXX-2, hosts: [a.example.test]}]",
	}
	for name, doc := range bad {
		if _, err := Parse([]byte(doc)); err == nil || !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := ParseJSON([]byte(`{"rules":[],"extra":1}`)); err == nil {
		t.Errorf("JSON with an unknown field accepted")
	}
}

func TestMerge(t *testing.T) {
	daemon := Policy{Grant: []Category{Git}, Presets: []string{"npm"}, Rules: []Rule{{ID: "a", Action: Allow, Hosts: []string{"a.example.test"}}}}
	task := Policy{Rules: []Rule{{ID: "b", Action: Deny, Hosts: []string{"b.example.test"}}}}
	m := daemon.Merge(task)
	if len(m.Grant) != 1 || len(m.Rules) != 2 || len(m.Presets) != 1 {
		t.Errorf("merge %+v", m)
	}
	m = m.Merge(Policy{Grant: []Category{}})
	if len(m.Grant) != 0 {
		t.Errorf("an empty grant list in a later layer must revoke: %+v", m.Grant)
	}
	if err := m.Check(); err != nil {
		t.Error(err)
	}
}

func TestUnicodePattern(t *testing.T) {
	p, err := Parse([]byte("rules: [{id: a, action: allow, hosts: ['*.b\u00fccher.example.test']}]"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Allow[0].MatchName("shop.xn--bcher-kva.example.test") || c.Allow[0].MatchName("xn--bcher-kva.example.test") {
		t.Errorf("pattern compiled to %v", c.Allow[0].suffixes)
	}
	if strings.Contains(c.Allow[0].suffixes[0], "\u00fc") {
		t.Errorf("pattern kept Unicode")
	}
}

func TestLooserThan(t *testing.T) {
	deny := Rule{ID: "incident", Action: Deny, Hosts: []string{"a.example.test"}}
	allow := Rule{ID: "web", Action: Allow, Hosts: []string{"b.example.test"}}
	sec := Secret{ID: "s", Placeholder: "placeholder-0123", Hosts: []string{"b.example.test"}}
	prev := Policy{Grant: []Category{Git}, Presets: []string{"go"}, Rules: []Rule{deny, allow}, Secrets: []Secret{sec}}
	for _, tc := range []struct {
		name string
		p    Policy
		want []string
	}{
		{"the same", prev, nil},
		{"less of everything, the deny kept", Policy{Rules: []Rule{deny}}, nil},
		{"a further deny", Policy{Rules: []Rule{deny, {ID: "more", Action: Deny, Hosts: []string{"c.example.test"}}}}, nil},
		{"the deny dropped", Policy{Grant: []Category{Git}}, []string{"deny rule incident is dropped"}},
		{"the deny changed", Policy{Rules: []Rule{{ID: "incident", Action: Deny, Hosts: []string{"z.example.test"}}}}, []string{"deny rule incident is dropped"}},
		{"a grant back", Policy{Grant: []Category{Git, PublicWeb}, Rules: []Rule{deny}}, []string{"grants public_web"}},
		{"a preset", Policy{Presets: []string{"npm"}, Rules: []Rule{deny}}, []string{"preset npm"}},
		{"a changed allow", Policy{Rules: []Rule{deny, {ID: "web", Action: Allow, Hosts: []string{"*.example.test"}}}}, []string{"rule web allows"}},
		{"another secret", Policy{Rules: []Rule{deny}, Secrets: []Secret{{ID: "s", Placeholder: "placeholder-0123", Hosts: []string{"*.example.test"}}}}, []string{"brokers secret s"}},
	} {
		if got := tc.p.LooserThan(prev); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
