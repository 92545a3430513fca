package netpolicy

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Compiled is a checked policy ready for decisions: its rules as
// matchers. It is immutable; callers only read it.
type Compiled struct {
	// Allow and Deny are the allow rules (presets first) and the deny
	// rules, in the policy's order.
	Allow, Deny []*CompiledRule
	Secrets     []*CompiledSecret
	// EmptyPresets names presets that were asked for but found no host.
	EmptyPresets []string

	grants map[Category]bool
}

// CompiledRule is one rule (or preset) as a matcher.
type CompiledRule struct {
	ID       string
	Category Category // of an allow rule; "" applies on its own
	Opaque   bool
	// Preset marks a preset's rule: naming a preset is the grant, so it
	// applies on its own (its category, registries, labels it).
	Preset bool

	names    map[string]bool
	suffixes []string // ".example.test" for "*.example.test"
	cidrs    []netip.Prefix
	ports    []int
	// except* are a deny rule's exceptions (Rule.ExceptHosts, ExceptCIDRs).
	exceptNames    map[string]bool
	exceptSuffixes []string
	exceptCIDRs    []netip.Prefix
}

// CompiledSecret is one brokered secret as a matcher of its hosts.
type CompiledSecret struct {
	ID, Placeholder, Value string
	// Headers are the canonical names of the headers the value may go
	// in; never empty.
	Headers map[string]bool

	names    map[string]bool
	suffixes []string
}

// Compile checks p and builds its matcher; presets maps preset names to
// the hosts discovered for them (nil: checking only).
func Compile(p *Policy, presets Presets) (*Compiled, error) {
	c := &Compiled{grants: map[Category]bool{}}
	for _, g := range p.Grant {
		if !slices.Contains(Categories, g) {
			return nil, invalid("unknown category %q (categories: %s)", g, categoryList())
		}
		c.grants[g] = true
	}
	ids := map[string]bool{}
	for _, name := range p.Presets {
		if !slices.Contains(presetNames, name) {
			return nil, invalid("unknown preset %q (presets: %s)", name, strings.Join(presetNames, ", "))
		}
		id := "preset-" + name
		if ids[id] {
			continue
		}
		ids[id] = true
		r := &CompiledRule{ID: id, Category: Registries, Preset: true, names: map[string]bool{}}
		ports := map[int]bool{}
		for _, hp := range presets[name] {
			t, err := ParseTarget(hp, 443)
			if err != nil || t.IsIP() {
				continue // egress.DiscoverPresets only returns names; be safe
			}
			r.names[t.Host] = true
			ports[t.Port] = true
		}
		for port := range ports {
			r.ports = append(r.ports, port)
		}
		slices.Sort(r.ports)
		if len(r.names) == 0 {
			if presets != nil {
				c.EmptyPresets = append(c.EmptyPresets, name)
			}
			continue
		}
		c.Allow = append(c.Allow, r)
	}
	for i := range p.Rules {
		r := &p.Rules[i]
		if !validID(r.ID) {
			return nil, invalid("rule %d: an id (no spaces or colons, at most 64 bytes) is required", i+1)
		}
		if ids[r.ID] {
			return nil, invalid("rule id %q is used twice", r.ID)
		}
		ids[r.ID] = true
		cr, err := compileRule(r)
		if err != nil {
			return nil, err
		}
		if r.Action == Allow {
			c.Allow = append(c.Allow, cr)
		} else {
			c.Deny = append(c.Deny, cr)
		}
	}
	if n := denyNameCount(c.Deny); n > MaxDenyNames {
		return nil, invalid("the deny rules name %d hosts, at most %d: each is resolved by the daemon (deny by cidrs, or allow only what is needed)", n, MaxDenyNames)
	}
	sids := map[string]bool{}
	for i := range p.Secrets {
		s := &p.Secrets[i]
		if !validID(s.ID) {
			return nil, invalid("secret %d: an id (no spaces or colons) is required", i+1)
		}
		if sids[s.ID] {
			return nil, invalid("secret id %q is used twice", s.ID)
		}
		sids[s.ID] = true
		cs, err := compileSecret(s)
		if err != nil {
			return nil, err
		}
		for _, o := range c.Secrets {
			if strings.Contains(o.Placeholder, cs.Placeholder) || strings.Contains(cs.Placeholder, o.Placeholder) {
				return nil, invalid("secrets %s and %s: one placeholder contains the other", o.ID, cs.ID)
			}
		}
		c.Secrets = append(c.Secrets, cs)
	}
	return c, nil
}

func compileRule(r *Rule) (*CompiledRule, error) {
	if r.Action != Allow && r.Action != Deny {
		return nil, invalid("rule %s: action must be allow or deny, not %q", r.ID, r.Action)
	}
	if r.Category != "" {
		if r.Action == Deny {
			return nil, invalid("rule %s: a deny rule has no category (it always applies)", r.ID)
		}
		if !slices.Contains(Categories, r.Category) || r.Category == PublicWeb {
			return nil, invalid("rule %s: category %q (rules take: registries, git, internal, webhooks)", r.ID, r.Category)
		}
	}
	if len(r.Hosts) == 0 && len(r.CIDRs) == 0 {
		return nil, invalid("rule %s matches nothing: give hosts or cidrs", r.ID)
	}
	cr := &CompiledRule{ID: r.ID, Category: r.Category, names: map[string]bool{}, Opaque: r.Opaque}
	if r.Opaque && r.Action == Deny {
		return nil, invalid("rule %s: opaque is for allow rules", r.ID)
	}
	for _, h := range r.Hosts {
		if err := addPattern(h, cr.names, &cr.suffixes); err != nil {
			return nil, invalid("rule %s: %v", r.ID, err)
		}
	}
	var err error
	if cr.cidrs, err = parseCIDRs(r.ID, r.CIDRs); err != nil {
		return nil, err
	}
	if err := compileExceptions(r, cr); err != nil {
		return nil, err
	}
	for _, p := range r.Ports {
		if p < 1 || p > 65535 {
			return nil, invalid("rule %s: port %d is out of range", r.ID, p)
		}
		if !slices.Contains(cr.ports, p) {
			cr.ports = append(cr.ports, p)
		}
	}
	return cr, nil
}

// parseCIDRs parses a rule's ranges: a CIDR or one address, no zone, no
// host bits, IPv4-mapped ranges written as IPv4.
func parseCIDRs(id string, list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		pfx, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil || a.Zone() != "" {
				return nil, invalid("rule %s: cidr %q: %v", id, s, err)
			}
			pfx = netip.PrefixFrom(a, a.BitLen())
		}
		if pfx != pfx.Masked() {
			return nil, invalid("rule %s: cidr %q has host bits set (did you mean %s?)", id, s, pfx.Masked())
		}
		if pfx.Addr().Is4In6() {
			return nil, invalid("rule %s: cidr %q: write IPv4-mapped ranges as IPv4", id, s)
		}
		out = append(out, pfx)
	}
	return out, nil
}

// compileExceptions checks and adds a deny rule's exceptions. An allow
// rule has none: an exception to an allow would be a deny, which is what
// deny rules are for.
func compileExceptions(r *Rule, cr *CompiledRule) error {
	if len(r.ExceptHosts) == 0 && len(r.ExceptCIDRs) == 0 {
		return nil
	}
	if r.Action != Deny {
		return invalid("rule %s: except_hosts and except_cidrs are for deny rules (deny what an allow rule must not reach)", r.ID)
	}
	cr.exceptNames = map[string]bool{}
	for _, h := range r.ExceptHosts {
		if err := addPattern(h, cr.exceptNames, &cr.exceptSuffixes); err != nil {
			return invalid("rule %s: except_hosts: %v", r.ID, err)
		}
	}
	var err error
	cr.exceptCIDRs, err = parseCIDRs(r.ID, r.ExceptCIDRs)
	return err
}

func addPattern(h string, names map[string]bool, suffixes *[]string) error {
	if _, ok, _ := parseIPv4(strings.TrimPrefix(h, "*.")); ok || strings.Contains(h, ":") {
		return fmt.Errorf("host %q is an address: use cidrs", h)
	}
	n, err := normalizeName(h, true)
	if err != nil {
		return fmt.Errorf("host %q: %v", h, err)
	}
	if s, ok := strings.CutPrefix(n, "*"); ok {
		*suffixes = append(*suffixes, s)
	} else {
		names[n] = true
	}
	return nil
}

func compileSecret(s *Secret) (*CompiledSecret, error) {
	if len(s.Placeholder) < 12 {
		return nil, invalid("secret %s: the placeholder must be at least 12 bytes", s.ID)
	}
	for i := 0; i < len(s.Placeholder); i++ {
		if c := s.Placeholder[i]; c <= ' ' || c >= 0x7f {
			return nil, invalid("secret %s: the placeholder must be printable ASCII without spaces", s.ID)
		}
	}
	if strings.ContainsAny(s.Value, "\r\n\x00") {
		return nil, invalid("secret %s: the value contains CR, LF or NUL", s.ID)
	}
	if len(s.Hosts) == 0 {
		return nil, invalid("secret %s: hosts are required", s.ID)
	}
	cs := &CompiledSecret{ID: s.ID, Placeholder: s.Placeholder, Value: s.Value, names: map[string]bool{}}
	for _, h := range s.Hosts {
		if err := addPattern(h, cs.names, &cs.suffixes); err != nil {
			return nil, invalid("secret %s: %v", s.ID, err)
		}
	}
	cs.Headers = map[string]bool{}
	for _, h := range s.Headers {
		if err := checkSecretHeader(h); err != nil {
			return nil, invalid("secret %s: %v", s.ID, err)
		}
		cs.Headers[canonicalHeader(h)] = true
	}
	if len(cs.Headers) == 0 {
		cs.Headers[DefaultSecretHeader] = true
	}
	return cs, nil
}

func matchName(name string, names map[string]bool, suffixes []string) bool {
	if names[name] {
		return true
	}
	for _, s := range suffixes {
		if len(name) > len(s) && strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// MatchName reports whether the rule's hosts name a (normalized) name.
func (r *CompiledRule) MatchName(name string) bool { return matchName(name, r.names, r.suffixes) }

// MatchName reports whether the secret is bound to a (normalized) name.
func (s *CompiledSecret) MatchName(name string) bool { return matchName(name, s.names, s.suffixes) }

// ExceptsName reports whether a deny rule's except_hosts name a
// (normalized) name.
func (r *CompiledRule) ExceptsName(name string) bool {
	return matchName(name, r.exceptNames, r.exceptSuffixes)
}

// ExceptsAddr reports whether a is in a deny rule's except_cidrs (a zone
// and an IPv4-mapped form do not matter). Callers that judge an address
// by the IPv4 address it embeds must ask about that one too.
func (r *CompiledRule) ExceptsAddr(a netip.Addr) bool {
	a = a.WithZone("").Unmap()
	for _, p := range r.exceptCIDRs {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// CIDRs are the rule's address ranges; callers must not change them.
func (r *CompiledRule) CIDRs() []netip.Prefix { return r.cidrs }

// MatchAddr reports whether a is in one of the rule's CIDRs (a zone and
// an IPv4-mapped form do not matter).
func (r *CompiledRule) MatchAddr(a netip.Addr) bool {
	a = a.WithZone("").Unmap()
	for _, p := range r.cidrs {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Mode is what a destination is used for; it sets the default ports.
type Mode int

const (
	ModeConnect Mode = iota
	ModeHTTP
	ModeDNS // ports do not apply
)

// String names the mode in refusal reasons.
func (m Mode) String() string {
	switch m {
	case ModeConnect:
		return "CONNECT"
	case ModeHTTP:
		return "HTTP"
	}
	return "DNS"
}

var (
	defaultConnectPorts = []int{443}
	defaultHTTPPorts    = []int{80, 443}
)

// DefaultPorts are the ports a rule without ports (and public_web)
// allows in mode m: 443 for CONNECT, 80 and 443 for plain HTTP. The
// slice is the caller's.
func DefaultPorts(m Mode) []int { return slices.Clone(defaultPorts(m)) }

func defaultPorts(m Mode) []int {
	if m == ModeConnect {
		return defaultConnectPorts
	}
	return defaultHTTPPorts
}

// Ports are the ports the rule allows in mode m (its own, else
// DefaultPorts); callers must not change them.
func (r *CompiledRule) Ports(m Mode) []int {
	if len(r.ports) > 0 {
		return r.ports
	}
	return defaultPorts(m)
}

// PortOK reports whether an allow rule allows port in mode m (DNS has no
// port).
func (r *CompiledRule) PortOK(m Mode, port int) bool {
	return m == ModeDNS || slices.Contains(r.Ports(m), port)
}

// Granted reports whether the policy grants category g.
func (c *Compiled) Granted(g Category) bool { return c.grants[g] }

// Active reports whether rule r applies: it has no category, or its
// category is granted.
func (c *Compiled) Active(r *CompiledRule) bool {
	return r.Category == "" || r.Preset || c.grants[r.Category]
}

// DenyNames are the names a deny rule's host patterns resolve as (a
// wildcard at its base name).
func (r *CompiledRule) DenyNames() []string {
	out := make([]string, 0, len(r.names)+len(r.suffixes))
	for n := range r.names {
		out = append(out, n)
	}
	for _, s := range r.suffixes {
		out = append(out, strings.TrimPrefix(s, "."))
	}
	slices.Sort(out)
	return out
}

// denyNameCount is how many names the deny rules resolve as.
func denyNameCount(rules []*CompiledRule) int {
	n := 0
	for _, r := range rules {
		n += len(r.names) + len(r.suffixes)
	}
	return n
}

// Denies reports whether a deny rule applies on this port: one without
// ports denies every port; one with ports never stops a DNS answer, since
// the name may be used on other ports.
func (r *CompiledRule) Denies(m Mode, port int) bool {
	if len(r.ports) == 0 {
		return true
	}
	return m != ModeDNS && slices.Contains(r.ports, port)
}

// MaxDenyNames bounds the host names one policy's deny rules may name:
// the proxy resolves each host-side, outside the sandbox's DNS rate (found
// in a review: 4,596 names made every decision resolve them all again, and
// evicted other sandboxes' cached names).
const MaxDenyNames = 1024
