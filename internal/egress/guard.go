package egress

import (
	"net/netip"
)

// A guarded range is refused as a destination unless an allow rule's CIDR
// lies inside that very range and contains the address (so 0.0.0.0/0 never
// opens loopback, and allowing link-local never opens the metadata
// service).
type guardRange struct {
	prefix netip.Prefix
	kind   string // the rule id suffix: guard-<kind>
}

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// guards are checked in order; the first containing range names the
// refusal, so the narrow metadata ranges come before the ranges holding
// them.
var guards = []guardRange{
	// Cloud metadata services (AWS, GCP, Azure, OCI, DigitalOcean,
	// OpenStack: 169.254.169.254; AWS IPv6; Alibaba; Azure's wire server).
	{mustPrefix("169.254.169.254/32"), "metadata"},
	{mustPrefix("169.254.170.2/32"), "metadata"}, // ECS task credentials
	{mustPrefix("fd00:ec2::254/128"), "metadata"},
	{mustPrefix("100.100.100.200/32"), "metadata"},
	{mustPrefix("168.63.129.16/32"), "metadata"},

	{mustPrefix("0.0.0.0/8"), "unspecified"},
	{mustPrefix("::/128"), "unspecified"},
	{mustPrefix("127.0.0.0/8"), "loopback"},
	{mustPrefix("::1/128"), "loopback"},
	{mustPrefix("169.254.0.0/16"), "link-local"},
	{mustPrefix("fe80::/10"), "link-local"},
	{mustPrefix("10.0.0.0/8"), "private"},
	{mustPrefix("172.16.0.0/12"), "private"},
	{mustPrefix("192.168.0.0/16"), "private"},
	{mustPrefix("fc00::/7"), "private"},
	{mustPrefix("fec0::/10"), "private"}, // deprecated site-local
	{mustPrefix("100.64.0.0/10"), "cgnat"},
	{mustPrefix("224.0.0.0/4"), "multicast"},
	{mustPrefix("ff00::/8"), "multicast"},
	{mustPrefix("255.255.255.255/32"), "broadcast"},
	{mustPrefix("240.0.0.0/4"), "reserved"},
	{mustPrefix("192.0.0.0/24"), "reserved"},
	{mustPrefix("192.0.2.0/24"), "reserved"},
	{mustPrefix("198.18.0.0/15"), "reserved"},
	{mustPrefix("198.51.100.0/24"), "reserved"},
	{mustPrefix("203.0.113.0/24"), "reserved"},
	{mustPrefix("2001:db8::/32"), "reserved"},
	{mustPrefix("100::/64"), "reserved"},
	// IPv4-compatible addresses (deprecated) and Teredo tunnels lead
	// nowhere a sandbox needs and hide the IPv4 address they carry.
	{mustPrefix("::/96"), "reserved"},
	{mustPrefix("2001::/32"), "reserved"},
}

// classify returns the guarded range holding a, if any. An IPv4-mapped
// address is judged as the IPv4 address; NAT64 and 6to4 addresses are
// judged by the IPv4 address they embed when that one is guarded.
func classify(a netip.Addr) (guardRange, bool) {
	a = a.WithZone("").Unmap()
	for _, g := range guards {
		if g.prefix.Contains(a) {
			return g, true
		}
	}
	if v4, ok := embeddedIPv4(a); ok {
		if g, ok := classify(v4); ok {
			return g, true
		}
	}
	return guardRange{}, false
}

var (
	nat64      = mustPrefix("64:ff9b::/96")
	nat64Local = mustPrefix("64:ff9b:1::/48")
	sixToFour  = mustPrefix("2002::/16")
)

func embeddedIPv4(a netip.Addr) (netip.Addr, bool) {
	if !a.Is6() {
		return netip.Addr{}, false
	}
	b := a.As16()
	switch {
	case nat64.Contains(a), nat64Local.Contains(a):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	}
	return netip.Addr{}, false
}

// unlocks reports whether an allow CIDR opens address a in guarded range
// g: it must contain a and lie entirely within g.
func unlocks(cidr netip.Prefix, g guardRange, a netip.Addr) bool {
	a = a.WithZone("").Unmap()
	if !cidr.Contains(a) {
		return false
	}
	return cidr.Bits() >= g.prefix.Bits() && g.prefix.Contains(cidr.Addr())
}

// Guarded says whether a lies in a range that egress refuses unless a
// rule opens exactly that range (loopback, private, link-local, metadata,
// ...), and names the range. The daemon's own fetches for remote clients
// (a task's clone) use it too.
func Guarded(a netip.Addr) (string, bool) {
	g, ok := classify(a)
	return g.kind, ok
}
