package egress

import (
	"context"
	"net"
	"net/netip"
	"strings"
)

// FetchDecision is the outcome of CheckFetch.
type FetchDecision struct {
	Allow bool
	// Rule is the id of the rule that decided, or a built-in one
	// (default-deny, port, resolve, guard-loopback, ...).
	Rule   string
	Reason string
	// Addrs are the checked addresses, the only ones the fetch may
	// connect to (resolved once: no second resolution, no rebinding).
	Addrs []netip.Addr
}

// CheckFetch decides whether the daemon itself may fetch from t (a URL's
// host and port; tls for https) under p, the daemon's fetch policy, as
// the proxy decides a sandbox's request under its egress policy: deny
// rules, allow rules and granted categories, ports (https as CONNECT,
// http as plain HTTP), and the address guards, on the addresses res
// gives (nil: the system resolver). A nil p allows nothing. An error is
// a policy that does not compile.
func CheckFetch(ctx context.Context, p *Policy, presets Presets, res Resolver, t Target, tls bool) (FetchDecision, error) {
	if p == nil {
		return FetchDecision{Rule: RuleDefaultDeny, Reason: "the daemon has no fetch policy"}, nil
	}
	c, err := compile(p, presets)
	if err != nil {
		return FetchDecision{}, err
	}
	if res == nil {
		res = net.DefaultResolver
	}
	m := modeHTTP
	if tls {
		m = modeConnect
	}
	// The same decision as a sandbox's, from a service that only decides
	// (never cut: the kill switch is the sandboxes').
	d := (&Service{resolver: res}).decide(ctx, c, t, m, "ip")
	reason := strings.NewReplacer("this sandbox's egress policy", "the daemon's fetch policy", "this sandbox's policy", "the daemon's fetch policy", "this sandbox has no egress policy", "the daemon has no fetch policy").Replace(d.reason)
	out := FetchDecision{Allow: d.allow, Rule: d.rule, Reason: reason}
	if d.allow {
		out.Addrs = d.addrs
	}
	return out, nil
}
