package egress

import (
	"context"
	"net/netip"

	"github.com/airlock-dev/airlock/internal/egress/guard"
	"github.com/airlock-dev/airlock/internal/egress/presets"
	"github.com/airlock-dev/airlock/internal/netpolicy"
)

// The rule model (policies, rules, secrets, categories, presets as data,
// host parsing, validation and matching) is internal/netpolicy, pure and
// shared with internal/policy. These aliases keep the names egress's
// callers use; new code may name netpolicy directly.
type (
	Policy   = netpolicy.Policy
	Rule     = netpolicy.Rule
	Secret   = netpolicy.Secret
	Category = netpolicy.Category
	Action   = netpolicy.Action
	Presets  = netpolicy.Presets
	Target   = netpolicy.Target
)

// The categories and actions (see netpolicy).
const (
	Registries = netpolicy.Registries
	Git        = netpolicy.Git
	PublicWeb  = netpolicy.PublicWeb
	Internal   = netpolicy.Internal
	Webhooks   = netpolicy.Webhooks

	Allow = netpolicy.Allow
	Deny  = netpolicy.Deny

	DefaultSecretHeader = netpolicy.DefaultSecretHeader
)

// Parse is netpolicy.Parse.
func Parse(data []byte) (*Policy, error) { return netpolicy.Parse(data) }

// ParseJSON is netpolicy.ParseJSON.
func ParseJSON(data []byte) (*Policy, error) { return netpolicy.ParseJSON(data) }

// ParseTarget is netpolicy.ParseTarget.
func ParseTarget(authority string, defaultPort int) (Target, error) {
	return netpolicy.ParseTarget(authority, defaultPort)
}

// CheckSecretHeader is netpolicy.CheckSecretHeader.
func CheckSecretHeader(h string) error { return netpolicy.CheckSecretHeader(h) }

type (
	crule   = netpolicy.CompiledRule
	csecret = netpolicy.CompiledSecret
	mode    = netpolicy.Mode
)

const (
	modeConnect = netpolicy.ModeConnect
	modeHTTP    = netpolicy.ModeHTTP
	modeDNS     = netpolicy.ModeDNS
)

// compiled is a sandbox's checked policy with what the proxy keeps beside
// it: the network's NAT64 prefixes and its deny names' addresses. It is
// immutable but for the cache, which has its own lock.
type compiled struct {
	*netpolicy.Compiled
	// nat64 are the network's NAT64 prefixes (Config.NAT64Prefixes).
	nat64 []netip.Prefix
	// denied caches the addresses of the deny rules' names.
	denied *deniedCache
}

// compile checks p and builds its matcher; presets maps preset names to
// the hosts discovered for them (nil: checking only).
func compile(p *Policy, presets Presets) (*compiled, error) {
	c, err := netpolicy.Compile(p, presets)
	if err != nil {
		return nil, err
	}
	return &compiled{Compiled: c, denied: &deniedCache{}}, nil
}

// matchDenied is MatchAddr for a deny rule: an address that embeds an
// IPv4 address (NAT64, SIIT, 6to4, Teredo...; see guard.Embedded) is also
// denied by it, since it reaches that host where the network translates.
func matchDenied(r *crule, a netip.Addr, nat64 []netip.Prefix) bool {
	if r.MatchAddr(a) {
		return true
	}
	for _, v4 := range guard.Embedded(a.WithZone("").Unmap(), nat64) {
		if r.MatchAddr(v4) {
			return true
		}
	}
	return false
}

// spares reports whether deny rule r's exceptions spare target t at
// address a (invalid when the name is not resolved yet): t's name is in
// its except_hosts, or a is in its except_cidrs and so is every IPv4
// address a embeds, so that an IPv6 exception never spares a translated
// form of a denied IPv4 host.
func spares(r *crule, t Target, a netip.Addr, nat64 []netip.Prefix) bool {
	if !t.IsIP() && r.ExceptsName(t.Host) {
		return true
	}
	if !a.IsValid() || !r.ExceptsAddr(a) {
		return false
	}
	for _, v4 := range guard.Embedded(a.WithZone("").Unmap(), nat64) {
		if !r.ExceptsAddr(v4) {
			return false
		}
	}
	return true
}

// DiscoverEnv is presets.Env (where DiscoverPresets looks).
type DiscoverEnv = presets.Env

// DiscoverPresets is presets.Discover.
func DiscoverPresets(ctx context.Context, env DiscoverEnv) (Presets, error) {
	return presets.Discover(ctx, env)
}

// Guarded says whether a lies in a range that egress refuses unless a
// rule opens exactly that range (loopback, private, link-local, metadata,
// ...), and names the range. The daemon's own fetches for remote clients
// (a task's clone) use it too. nat64 are the NAT64 prefixes the network
// is known to use besides the well-known ones (see Config.NAT64Prefixes).
func Guarded(a netip.Addr, nat64 ...netip.Prefix) (string, bool) {
	g, ok := guard.Classify(a, nat64...)
	return g.Kind, ok
}

// ValidNAT64Prefix is guard.ValidNAT64Prefix.
func ValidNAT64Prefix(p netip.Prefix) bool { return guard.ValidNAT64Prefix(p) }
