package policy

import (
	"strings"
	"testing"
)

// The daemon's fetch policy is an egress policy's rules, checked as
// strictly; secrets are brokered for sandboxes only.
func TestFetchSection(t *testing.T) {
	f, err := Parse([]byte("fetch:\n  grant: [public_web]\n  rules:\n    - {id: local-git, action: allow, cidrs: [127.0.0.1/32], ports: [8080]}\n"))
	if err != nil || f.Fetch == nil || len(f.Fetch.Rules) != 1 || f.Fetch.Grant[0] != "public_web" {
		t.Fatalf("%+v %v", f, err)
	}
	if f, err := Parse([]byte("version: 1\n")); err != nil || f.Fetch != nil {
		t.Fatalf("no fetch section: %+v %v", f, err)
	}
	for doc, why := range map[string]string{
		"fetch:\n  rules:\n    - {id: x, action: allow, cidrs: [not-a-cidr]}\n":               "cidr",
		"fetch:\n  grant: [everything]\n":                                                     "category",
		"fetch:\n  hosts: [a.example.test]\n":                                                 "hosts",
		"fetch:\n  secrets:\n    - {id: s, placeholder: PLACEHOLDER-0123, hosts: [a.test]}\n": "sandboxes only",
	} {
		if _, err := Parse([]byte(doc)); err == nil || !strings.Contains(strings.ToLower(err.Error()), why) {
			t.Errorf("%q: %v, want an error about %s", doc, err, why)
		}
	}
}
