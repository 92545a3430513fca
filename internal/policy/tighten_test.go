//go:build !airlock_noyaml

package policy

import (
	"slices"
	"testing"

	"github.com/airlock-dev/airlock/internal/netpolicy"
)

// What Tightened keeps of any layer never relaxes the policy it was
// tightened for, and what it leaves out is named: every layer here is
// tried over policies strict and loose.
func TestTightenedNeverRelaxes(t *testing.T) {
	strict := Defaults().with(Layer{Classes: map[Class]Action{Network: Deny, Read: Ask}, OutsideScope: Deny, Scope: []string{"src/**"},
		InstallScripts: Deny, Egress: &EgressPolicy{Grant: []netpolicy.Category{"registries"}}}, "strict")
	loose := Defaults().with(Layer{Classes: map[Class]Action{Network: Allow, Read: Allow}, OutsideScope: Allow}, "loose")
	layers := []Layer{
		{Classes: map[Class]Action{Network: Allow, Read: Deny}},
		{OutsideScope: Allow},
		{Scope: []string{"src/**", "docs/**"}},
		{InstallScripts: Allow},
		{Rules: []Rule{{ID: "no-rm", Command: "rm *", Action: Deny}}},
		{Egress: &EgressPolicy{Grant: []netpolicy.Category{"registries", "public_web"}, Presets: []string{"npm"},
			Rules: []netpolicy.Rule{{ID: "x", Action: netpolicy.Allow, Hosts: []string{"x.example.test"}}, {ID: "y", Action: netpolicy.Deny, Hosts: []string{"y.example.test"}}}}},
		{Egress: &EgressPolicy{Grant: []netpolicy.Category{}}},
	}
	for _, p := range []*Policy{strict, loose, Defaults()} {
		for i, l := range layers {
			got, left := p.Tightened(l)
			if err := p.Relaxes(got); err != nil {
				t.Errorf("%v, layer %d: what it kept relaxes: %v", p.Sources, i, err)
			}
			if (p.Relaxes(l) == nil) != (len(left) == 0) {
				t.Errorf("%v, layer %d: left out %q, but Relaxes says %v", p.Sources, i, left, p.Relaxes(l))
			}
		}
	}
	got, left := strict.Tightened(layers[0])
	if got.Classes[Read] != Deny || len(got.Classes) != 1 || !slices.Equal(left, []string{"network deny->allow"}) {
		t.Errorf("classes over strict: %+v, left %q", got.Classes, left)
	}
	got, _ = strict.Tightened(layers[5])
	if got.Egress == nil || !slices.Equal(got.Egress.Grant, []netpolicy.Category{"registries"}) || len(got.Egress.Rules) != 1 || got.Egress.Rules[0].ID != "y" || len(got.Egress.Presets) != 0 {
		t.Errorf("egress over strict: %+v", got.Egress)
	}
}
