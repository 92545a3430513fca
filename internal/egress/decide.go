package egress

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/airlock-dev/airlock/internal/egress/broker"
	"github.com/airlock-dev/airlock/internal/egress/guard"
	"github.com/airlock-dev/airlock/internal/netpolicy"
)

// Built-in rule ids, for decisions no policy rule made.
const (
	RuleCut         = "egress-cut"         // the kill switch is on
	RuleDefaultDeny = "default-deny"       // nothing allows the destination
	RulePort        = "port"               // the host is allowed, the port is not
	RuleParse       = "parse"              // a malformed request or host
	RuleResolve     = "resolve"            // the name did not resolve
	RuleSNI         = "sni"                // the TLS ClientHello names a host that is not allowed
	RulePublicWeb   = "public-web"         // allowed by the public_web category
	RuleAudit       = "audit"              // the event could not be recorded: fail closed
	RuleUpstream    = "upstream"           // the upstream failed mid-request
	RuleBrokerPlain = "broker-plain"       // plain HTTP to a host with a brokered secret
	RuleReflected   = broker.RuleReflected // a brokered host's response showed the secret's value
	// Guards are named "guard-<range>": guard-loopback, guard-private,
	// guard-link-local, guard-metadata, guard-cgnat, guard-multicast,
	// guard-unspecified, guard-broadcast, guard-reserved.
)

// decision is the outcome of checking one destination.
type decision struct {
	allow  bool
	rule   string
	reason string // safe to show the sandbox
	// addrs are the checked addresses to dial, in order; the only ones
	// the proxy may connect to.
	addrs  []netip.Addr
	opaque bool
}

func deny(rule, format string, args ...any) decision {
	return decision{rule: rule, reason: fmt.Sprintf(format, args...)}
}

// decideName checks a destination without resolving it: the kill switch,
// deny rules, then allow rules and their ports. For a name it returns the
// allowing rule; addresses are checked by checkAddrs.
func (c *compiled) decideName(t Target, m mode) (decision, bool) {
	if c == nil {
		return deny(RuleDefaultDeny, "this sandbox has no egress policy"), false
	}
	for _, r := range c.Deny {
		if !r.Denies(m, t.Port) {
			continue
		}
		if (!t.IsIP() && r.MatchName(t.Host) && !r.ExceptsName(t.Host)) ||
			(t.IsIP() && matchDenied(r, t.Addr, c.nat64) && !spares(r, t, t.Addr, c.nat64)) {
			return deny(r.ID, "%s is denied by rule %s", t.Host, r.ID), false
		}
	}
	var portMiss *crule
	for _, r := range c.Allow {
		if !c.Active(r) {
			continue
		}
		match := (!t.IsIP() && r.MatchName(t.Host)) || (t.IsIP() && r.MatchAddr(t.Addr))
		if !match {
			continue
		}
		if !r.PortOK(m, t.Port) {
			if portMiss == nil {
				portMiss = r
			}
			continue
		}
		return decision{allow: true, rule: r.ID, opaque: r.Opaque}, true
	}
	if c.Granted(PublicWeb) {
		ports := netpolicy.DefaultPorts(m)
		if m == modeDNS || slices.Contains(ports, t.Port) {
			return decision{allow: true, rule: RulePublicWeb}, true
		}
		if portMiss == nil {
			return deny(RulePort, "%s port %d is not allowed for public web (%s)", t.Host, t.Port, portList(ports)), false
		}
	}
	if portMiss != nil {
		return deny(RulePort, "%s port %d is not allowed for %s (%s)", t.Host, t.Port, m, portList(portMiss.Ports(m))), false
	}
	return deny(RuleDefaultDeny, "%s is not in this sandbox's egress policy", t.Host), false
}

func portList(ports []int) string {
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = strconv.Itoa(p)
	}
	return "allowed: " + strings.Join(s, ", ")
}

// checkAddr decides whether address a may be used for t: deny CIDRs
// refuse it (unless the rule's exceptions spare t at a), and an address in a guarded range needs an allow CIDR inside
// that very range (from a rule that is active and allows the port).
func (c *compiled) checkAddr(t Target, m mode, a netip.Addr) (rule, reason string, ok bool) {
	for _, r := range c.Deny {
		if !r.Denies(m, t.Port) {
			continue
		}
		if matchDenied(r, a, c.nat64) && !spares(r, t, a, c.nat64) {
			return r.ID, fmt.Sprintf("%s resolves to an address denied by rule %s", t.Host, r.ID), false
		}
	}
	g, guarded := guard.Classify(a, c.nat64...)
	if !guarded {
		return "", "", true
	}
	for _, r := range c.Allow {
		if !c.Active(r) || !r.PortOK(m, t.Port) {
			continue
		}
		for _, p := range r.CIDRs() {
			if guard.Unlocks(p, g, a) {
				return "", "", true
			}
		}
	}
	what := "resolves to"
	if t.IsIP() {
		what = "is"
	}
	// The hint names the one address: a host behind a local mirror
	// resolves into a reserved range, and its user needs the rule that
	// opens exactly that, not the whole range.
	return "guard-" + g.Kind, fmt.Sprintf("%s %s a %s address, which this sandbox's policy does not open (an allow rule with cidrs: [%s] opens it)",
		t.Host, what, g.Kind, netip.PrefixFrom(a, a.BitLen())), false
}

// decide checks t completely: the name, then the addresses it resolves to
// (host-side, through the injected resolver). The addresses in an allowing
// decision are the only ones the caller may connect to, so a second
// resolution (DNS rebinding) never happens.
func (s *Service) decide(ctx context.Context, c *compiled, t Target, m mode, network string) decision {
	if s.cut.Load() {
		return deny(RuleCut, "egress is switched off for every sandbox")
	}
	d, ok := c.decideName(t, m)
	if !ok {
		return d
	}
	// The proxy brokers only inside TLS it terminates: a plain request
	// would go out with the placeholder, and the agent would see only the
	// upstream's 401 (issue 19). Refused, saying so.
	if m == modeHTTP && !t.IsIP() && len(c.secretsFor(t.Host)) > 0 {
		return deny(RuleBrokerPlain, "%s has a brokered secret, which goes only over HTTPS (a plain request would carry its placeholder): use https://", t.Host)
	}
	var addrs []netip.Addr
	if t.IsIP() {
		addrs = []netip.Addr{t.Addr}
	} else {
		var err error
		addrs, err = s.resolver.LookupNetIP(ctx, network, t.Host)
		if err != nil {
			return deny(RuleResolve, "%s does not resolve", t.Host)
		}
	}
	var first decision
	for _, a := range addrs {
		a = a.Unmap()
		if !a.IsValid() {
			continue
		}
		rule, reason, ok := c.checkAddr(t, m, a)
		if ok && d.rule == RulePublicWeb {
			if r, n, denied := s.deniedByAddr(ctx, c, m, t, a, false); denied {
				rule, reason, ok = r, fmt.Sprintf("%s shares address %s with %s, which rule %s denies", t.Host, a, n, r), false
			}
		}
		if !ok {
			if first.rule == "" {
				first = deny(rule, "%s", reason)
				first.addrs = []netip.Addr{a} // for the record only
			}
			continue
		}
		if !slices.Contains(d.addrs, a) {
			d.addrs = append(d.addrs, a)
		}
	}
	if len(d.addrs) == 0 {
		if first.rule == "" {
			return deny(RuleResolve, "%s has no address", t.Host)
		}
		return first
	}
	return d
}

// stillAllowed re-checks an open connection against a new policy, without
// resolving again (deny names count by the addresses already cached).
func (s *Service) stillAllowed(c *compiled, t Target, m mode, a netip.Addr) bool {
	if s.cut.Load() {
		return false
	}
	d, ok := c.decideName(t, m)
	if !ok {
		return false
	}
	if d.rule == RulePublicWeb {
		if _, _, denied := s.deniedByAddr(context.Background(), c, m, t, a, true); denied {
			return false
		}
	}
	_, _, ok = c.checkAddr(t, m, a)
	return ok
}

// secretsFor returns the brokered secrets bound to a name.
func (c *compiled) secretsFor(name string) []*csecret {
	if c == nil {
		return nil
	}
	var out []*csecret
	for _, sec := range c.Secrets {
		if sec.MatchName(name) {
			out = append(out, sec)
		}
	}
	return out
}
