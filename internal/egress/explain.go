package egress

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"strings"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// Explanation is what the proxy would decide for one destination of a
// sandbox, found without connecting (a user behind a registry mirror
// once needed three tries to learn why "Forbidden").
type Explanation struct {
	// Target is the destination as the proxy reads it, "host:port".
	Target string `json:"target"`
	// Mode is how the sandbox would reach it: "CONNECT" (a tunnel:
	// https, or host:port) or "HTTP" (a plain request).
	Mode     string `json:"mode"`
	Decision string `json:"decision"` // allow or deny
	Rule     string `json:"rule"`
	Reason   string `json:"reason,omitempty"`
	// Addrs are the addresses the proxy would dial (allowed), or the one
	// it refused (a guard or deny rule); none when the name is refused
	// before it is resolved.
	Addrs []netip.Addr `json:"addrs,omitempty"`
	// Brokered names the secrets the proxy would put into requests to an
	// allowed host (by id, never their values).
	Brokered []string `json:"brokered,omitempty"`
}

// Explain decides dest for a sandbox as its proxy would, resolving the
// name through the daemon's resolver as the proxy does, but dials
// nothing and records nothing. dest is a URL (http://, https://) or
// "host:port" (a CONNECT). Invariant: Explain and the proxy call the same
// decide, so what it says is what the proxy does under the same policy
// and DNS answers.
func (s *Service) Explain(ctx context.Context, sandboxID, dest string) (*Explanation, error) {
	t, m, err := explainTarget(dest)
	if err != nil {
		return nil, err
	}
	pol := s.policy(sandboxID)
	d := s.decide(ctx, pol, t, m, "ip")
	x := &Explanation{Target: t.String(), Mode: m.String(), Decision: decisionWord(d.allow), Rule: d.rule, Reason: d.reason, Addrs: d.addrs}
	if d.allow && !t.IsIP() {
		for _, sec := range pol.secretsFor(t.Host) {
			x.Brokered = append(x.Brokered, sec.ID)
		}
	}
	return x, nil
}

// explainTarget reads dest as the proxy would see it: a URL's scheme says
// the mode and default port; a bare "host:port" is a CONNECT.
func explainTarget(dest string) (Target, mode, error) {
	bad := func(format string, args ...any) (Target, mode, error) {
		return Target{}, 0, errdefs.Wrap(errdefs.ErrInvalid, format, args...)
	}
	if !strings.Contains(dest, "://") {
		t, err := ParseTarget(dest, 443)
		if err != nil {
			return bad("destination %q: %v", dest, err)
		}
		return t, modeConnect, nil
	}
	u, err := url.Parse(dest)
	if err != nil {
		return bad("destination %q: %v", dest, err)
	}
	m, port := modeConnect, 443
	switch u.Scheme {
	case "https":
	case "http":
		m, port = modeHTTP, 80
	default:
		return bad("destination %q: scheme %q (http or https, or host:port for a tunnel)", dest, u.Scheme)
	}
	if u.User != nil {
		return bad("destination %q: a user name or password is not part of a destination", dest)
	}
	if u.Host == "" {
		return bad("destination %q has no host", dest)
	}
	t, err := ParseTarget(u.Host, port)
	if err != nil {
		return bad("destination %q: %v", dest, err)
	}
	return t, m, nil
}

// String is e as one line for a terminal.
func (e *Explanation) String() string {
	s := fmt.Sprintf("%s %s (%s): rule %s", e.Decision, e.Target, e.Mode, e.Rule)
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}
