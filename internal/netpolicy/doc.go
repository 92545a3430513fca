// Package netpolicy is the egress rule model: where a sandbox's network
// traffic may go. A Policy grants categories (registries, git, public_web,
// internal, webhooks), names presets (package registries, as data: the
// hosts come from the caller, see egress.DiscoverPresets), and lists allow
// and deny rules over host names and wildcards, CIDRs and ports, plus the
// hosts and headers of brokered secrets. Parse and ParseJSON read one
// strictly; Check validates; Merge layers them; LooserThan says what a
// policy would open that another does not. ParseTarget parses a
// destination strictly (IDNA, every IPv4 spelling, one port), and Compile
// turns a policy into matchers of names, addresses and ports.
//
// The package is pure: no I/O, no resolution, no clock. It decides which
// rules match; internal/egress (the proxy and DNS filter) decides what
// wins, resolves names, guards addresses and records every decision, and
// internal/policy carries a policy as each layer's egress section. Both
// import this package; it imports nothing of airlock's but errdefs.
package netpolicy
