package egress

import (
	"context"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/internal/egress/guard"
	"github.com/airlock-dev/airlock/internal/netpolicy"
)

// Deny rules name hosts, but a host is reached by address: with public_web
// granted, the sandbox could reach a denied host by its IP address or by
// another name that resolves to the same server. So a destination allowed
// by public_web alone is also refused when an address it would connect to
// is one the deny rules' names resolve to (host-side, cached for
// deniedTTL). A wildcard rule (*.example.com) is resolved at its base name
// (example.com): the proxy cannot list every subdomain. A destination an
// allow rule names (or whose CIDR it allows) is the operator's explicit
// choice and is not refused for sharing an address; fronting (a name
// allowed, another server behind the same address or CDN) is what the
// README's Known limits describe.

const (
	deniedTTL    = time.Minute
	deniedNegTTL = 10 * time.Second // a deny name that did not resolve
	deniedLookup = 3 * time.Second  // per name
	// maxDenyNames bounds the host names one policy's deny rules may
	// name (netpolicy.MaxDenyNames says why). Each compiled policy
	// caches its own names' addresses, so one policy never evicts
	// another's.
	maxDenyNames = netpolicy.MaxDenyNames
)

type deniedEntry struct {
	addrs   []netip.Addr
	expires time.Time
}

// deniedCache holds the addresses of one compiled policy's deny names.
type deniedCache struct {
	mu sync.Mutex
	m  map[string]deniedEntry
}

// deniedAddrs returns a deny name's addresses, resolving it when the
// cache has none in date, unless cachedOnly (a re-check under locks).
func (s *Service) deniedAddrs(ctx context.Context, dc *deniedCache, name string, cachedOnly bool) []netip.Addr {
	now := time.Now()
	if s.cfg.Now != nil { // (CheckFetch decides with a bare Service)
		now = s.cfg.Now()
	}
	dc.mu.Lock()
	e, ok := dc.m[name]
	dc.mu.Unlock()
	if (ok && now.Before(e.expires)) || cachedOnly {
		return e.addrs
	}
	lctx, cancel := context.WithTimeout(ctx, deniedLookup)
	defer cancel()
	addrs, err := s.resolver.LookupNetIP(lctx, "ip", name)
	e = deniedEntry{expires: now.Add(deniedTTL)}
	if err != nil {
		e.expires = now.Add(deniedNegTTL)
	}
	for _, a := range addrs {
		e.addrs = append(e.addrs, a.WithZone("").Unmap())
	}
	dc.mu.Lock()
	if dc.m == nil {
		dc.m = map[string]deniedEntry{}
	}
	dc.m[name] = e // at most the policy's maxDenyNames
	dc.mu.Unlock()
	return e.addrs
}

// deniedByAddr reports the deny rule and name whose address a is, among
// the rules that apply to this mode and t's port and do not spare t at a.
func (s *Service) deniedByAddr(ctx context.Context, c *compiled, m mode, t Target, a netip.Addr, cachedOnly bool) (rule, name string, ok bool) {
	a = a.WithZone("").Unmap()
	forms := append([]netip.Addr{a}, guard.Embedded(a, c.nat64)...)
	for _, r := range c.Deny {
		if !r.Denies(m, t.Port) || spares(r, t, a, c.nat64) {
			continue
		}
		for _, n := range r.DenyNames() {
			for _, d := range s.deniedAddrs(ctx, c.denied, n, cachedOnly) {
				if slices.Contains(forms, d) {
					return r.ID, n, true
				}
			}
		}
	}
	return "", "", false
}
