//go:build airlock_noyaml

package policy

import "github.com/airlock-dev/airlock/internal/errdefs"

// EgressPolicy in the front (built with airlock_noyaml): it reads no
// policy files, so no layer it makes has an egress section, and it does
// not link netpolicy (net/netip, IDNA's tables), whose initialisation
// every policy check, a process of its own, would pay. The fields are the
// ones this package reads, always empty here.
type EgressPolicy struct {
	Grant   []string
	Presets []string
	Rules   []struct{ ID, Action string }
	Secrets []struct{}
}

const egressDeny = "deny"

// Check: a section this build cannot have; if one were made, refuse it.
func (*EgressPolicy) Check() error {
	return errdefs.Wrap(errdefs.ErrUnsupported, "policy: egress sections are the full airlock program's (this binary is built with airlock_noyaml)")
}

// Merge of a section this build cannot have: never silently nothing.
func (EgressPolicy) Merge(EgressPolicy) EgressPolicy {
	panic("policy: unsupported: egress sections are the full airlock program's (built with airlock_noyaml)")
}
