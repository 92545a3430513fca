package policy

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// Tightened is the part of layer l that does not relax p, and what it
// left out (in Relaxes' words; empty: l whole). p.Relaxes(Tightened) is
// always nil. It is how a project's own layer, checked against the
// policy file when it was set, applies to a sandbox whose template's
// section is stricter still: what the template set stays, and the rest
// of the project's layer applies.
func (p *Policy) Tightened(l Layer) (Layer, []string) {
	out := Layer{Rules: slices.Clone(l.Rules)} // a rule can only make a decision stricter
	var left []string
	for c, a := range l.Classes {
		if a.rank() < p.Classes[c].rank() {
			left = append(left, string(c)+" "+string(p.Classes[c])+"->"+string(a))
			continue
		}
		if out.Classes == nil {
			out.Classes = map[Class]Action{}
		}
		out.Classes[c] = a
	}
	if l.OutsideScope != "" {
		if l.OutsideScope.rank() < p.OutsideScope.rank() {
			left = append(left, "outside_scope "+string(p.OutsideScope)+"->"+string(l.OutsideScope))
		} else {
			out.OutsideScope = l.OutsideScope
		}
	}
	out.Scope = slices.Clone(l.Scope)
	if len(l.Scope) > 0 && len(p.Scope) > 0 {
		out.Scope = nil
		for _, g := range l.Scope {
			if slices.Contains(p.Scope, g) {
				out.Scope = append(out.Scope, g)
			} else {
				left = append(left, "scope adds "+g)
			}
		}
	}
	if l.InstallScripts == Allow && p.InstallScripts == Deny {
		left = append(left, "install_scripts deny->allow")
	} else {
		out.InstallScripts = l.InstallScripts
	}
	if l.Egress != nil {
		e, dropped := p.tightenedEgress(*l.Egress)
		out.Egress, left = &e, append(left, dropped...)
	}
	sort.Strings(left)
	return out, left
}

// tightenedEgress keeps of e its deny rules and the grants p already
// has (a grant list replaces the one before: a shorter one tightens).
func (p *Policy) tightenedEgress(e EgressPolicy) (EgressPolicy, []string) {
	var out EgressPolicy
	var left []string
	if e.Grant != nil {
		out.Grant = e.Grant[:0:0] // a list, even empty, replaces the one before
		for _, c := range e.Grant {
			if slices.Contains(p.Egress.Grant, c) {
				out.Grant = append(out.Grant, c)
			} else {
				left = append(left, "egress grants "+string(c))
			}
		}
	}
	for _, pr := range e.Presets {
		left = append(left, "egress preset "+pr)
	}
	for _, r := range e.Rules {
		if r.Action == egressDeny {
			out.Rules = append(out.Rules, r)
		} else {
			left = append(left, "egress rule "+r.ID+" allows")
		}
	}
	if len(e.Secrets) > 0 {
		left = append(left, "egress brokers secrets")
	}
	return out, left
}

// LayerFromJSON reads a layer kept as JSON (a project's own, in its
// record), as strictly as a request's: an unknown field, class or action
// is an error (a layer that cannot be read is not silently dropped).
// Empty or null: nil, no layer.
func LayerFromJSON(raw []byte) (*Layer, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var l Layer
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return nil, errdefs.Wrap(errdefs.ErrInvalid, "policy: a layer's JSON: %v", err)
	}
	if err := l.Check(); err != nil {
		return nil, err
	}
	return &l, nil
}

// IsZero says whether l sets nothing.
func (l Layer) IsZero() bool {
	return len(l.Classes) == 0 && l.OutsideScope == "" && len(l.Scope) == 0 && len(l.Rules) == 0 && l.Egress == nil && l.InstallScripts == ""
}
