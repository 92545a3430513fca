package policy

import (
	"slices"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/classify"
)

// GrantScope is how far an approval reaches.
type GrantScope string

const (
	// ScopeCommand: this exact command line, in this directory.
	ScopeCommand GrantScope = "command"
	// ScopeClass: any command whose only held classes are these.
	ScopeClass GrantScope = "class"
)

// Grant is an approval that lets held commands run: narrow (one command
// line or a set of classes), owned by one task or sandbox (the caller
// checks that), and always expiring.
type Grant struct {
	ID      string     `json:"id"`
	Scope   GrantScope `json:"scope"`
	Line    string     `json:"line,omitempty"`
	Cwd     string     `json:"cwd,omitempty"`
	Classes []Class    `json:"classes,omitempty"`
	Expires time.Time  `json:"expires"`
}

// covers reports whether the grant lets the held match m of a decision
// for line in cwd through at time now.
func (g *Grant) covers(m Match, line, cwd string, now time.Time) bool {
	if !now.Before(g.Expires) {
		return false
	}
	switch g.Scope {
	case ScopeCommand:
		return g.Line == line && g.Cwd == cwd
	case ScopeClass:
		// Only the class table's own holds: a rule or a write outside the
		// scope was written to hold this command whatever its class.
		return strings.HasPrefix(m.Rule, "class:") && slices.Contains(g.Classes, m.Class)
	}
	return false
}

// ApplyGrants turns an ask into an allow when grants cover every held
// match. A deny is never lifted by a grant. It reports whether it did.
func (d *Decision) ApplyGrants(grants []Grant, now time.Time) bool {
	if d.Action != Ask || len(grants) == 0 {
		return false
	}
	var used []string
	for _, m := range d.Matches {
		if m.Action != Ask {
			continue
		}
		ok := false
		for i := range grants {
			if grants[i].covers(m, d.Analysis.Line, d.Analysis.Cwd, now) {
				used = appendUniq(used, grants[i].ID)
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	d.Action = Allow
	d.Grant = used
	d.Reason = "allowed by approval " + strings.Join(used, ", ") + ": " + joinClasses(d.Analysis.Classes)
	return true
}

// HeldClasses are the classes whose table entry held the command: what a
// class-scoped approval would have to name.
func (d *Decision) HeldClasses() []Class {
	var out []Class
	for _, m := range d.Matches {
		if m.Action == Ask && strings.HasPrefix(m.Rule, "class:") {
			out = append(out, m.Class)
		}
	}
	return classify.SortClasses(out)
}
