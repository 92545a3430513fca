package guard

import (
	"net/netip"
)

// Range is a guarded range. A guarded range is refused as a destination
// unless an allow rule's CIDR lies inside that very range and contains
// the address (so 0.0.0.0/0 never opens loopback, and allowing link-local
// never opens the metadata service): see Unlocks.
type Range struct {
	Prefix netip.Prefix
	Kind   string // the rule id suffix: guard-<kind>
}

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// guards are checked in order; the first containing range names the
// refusal, so the narrow metadata ranges come before the ranges holding
// them.
var guards = []Range{
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

// Classify returns the guarded range holding a, if any, with the NAT64
// prefixes the network is known to use (see Embedded). An address
// that carries an IPv4 address is judged by it too: a mapped one only as
// the IPv4 address, the others also as themselves.
func Classify(a netip.Addr, nat64 ...netip.Prefix) (Range, bool) {
	a = a.WithZone("").Unmap()
	// The embedded address first: its range names the refusal, and no
	// IPv6 rule can open it (a CIDR must lie inside the range it opens),
	// so allowing Teredo or a NAT64 prefix never opens the metadata
	// service through it.
	for _, v4 := range Embedded(a, nat64) {
		if g, ok := Classify(v4); ok {
			return g, true
		}
	}
	for _, g := range guards {
		if g.Prefix.Contains(a) {
			return g, true
		}
	}
	if wkp32.Contains(a) && !nat64WKP.Contains(a) && !nat64Local.Contains(a) {
		// the rest of 64:ff9b::/32 is unassigned: nothing translates it
		// in a known way, so nothing reaches it
		return Range{wkp32, "reserved"}, true
	}
	return Range{}, false
}

var (
	nat64WKP   = mustPrefix("64:ff9b::/96")   // RFC 6052 well-known prefix
	nat64Local = mustPrefix("64:ff9b:1::/48") // RFC 8215 local-use, any RFC 6052 length inside
	wkp32      = mustPrefix("64:ff9b::/32")
	siit       = mustPrefix("::ffff:0:0:0/96") // RFC 2765 IPv4-translated
	compat     = mustPrefix("::/96")           // IPv4-compatible (deprecated)
	sixToFour  = mustPrefix("2002::/16")       // RFC 3056
	teredo     = mustPrefix("2001::/32")       // RFC 4380
)

// nat64Layouts are where RFC 6052 puts the IPv4 address after a prefix
// of each allowed length: the byte offsets, skipping byte 8 (the "u"
// octet, always zero).
var nat64Layouts = map[int][4]int{
	32: {4, 5, 6, 7},
	40: {5, 6, 7, 9},
	48: {6, 7, 9, 10},
	56: {7, 9, 10, 11},
	64: {9, 10, 11, 12},
	96: {12, 13, 14, 15},
}

// ValidNAT64Prefix checks a configured NAT64 prefix: a length RFC 6052
// defines a layout for.
func ValidNAT64Prefix(p netip.Prefix) bool {
	_, ok := nat64Layouts[p.Bits()]
	return p.IsValid() && p.Addr().Is6() && !p.Addr().Is4In6() && ok
}

func at(b [16]byte, i [4]int) netip.Addr {
	return netip.AddrFrom4([4]byte{b[i[0]], b[i[1]], b[i[2]], b[i[3]]})
}

// Embedded are the IPv4 addresses a may stand for where the network
// translates or tunnels it: SIIT (::ffff:0:a.b.c.d), IPv4-compatible
// (::a.b.c.d), NAT64 under the well-known /96 and under each configured
// prefix (its own RFC 6052 layout), 6to4, and Teredo (server and client).
//
// Under the local-use 64:ff9b:1::/48 the operator picks the prefix length
// (/48 to /96), which the proxy cannot know: every layout that fits is a
// candidate, so an address is refused if any reading of it is guarded.
// Readings in 0.0.0.0/8 are left out there: the zero bytes of every
// ordinary address read as 0.x.x.x under the other layouts, and a
// translator forwards, so a packet for 0.0.0.0/8 is a martian that is
// dropped rather than delivered to the translator's own host.
func Embedded(a netip.Addr, nat64 []netip.Prefix) []netip.Addr {
	if !a.Is6() || a.Is4In6() {
		return nil
	}
	b := a.As16()
	var out []netip.Addr
	for _, p := range nat64 {
		if l, ok := nat64Layouts[p.Bits()]; ok && p.Contains(a) {
			out = append(out, at(b, l))
		}
	}
	switch {
	case siit.Contains(a), nat64WKP.Contains(a):
		out = append(out, at(b, nat64Layouts[96]))
	case compat.Contains(a) && b[12] != 0:
		// (::, ::1 and the like are judged as themselves)
		out = append(out, at(b, nat64Layouts[96]))
	case nat64Local.Contains(a):
		for _, bits := range []int{48, 56, 64, 96} {
			if v4 := at(b, nat64Layouts[bits]); v4.As4()[0] != 0 {
				out = append(out, v4)
			}
		}
	case sixToFour.Contains(a):
		out = append(out, netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
	case teredo.Contains(a):
		for _, v4 := range []netip.Addr{at(b, nat64Layouts[32]), netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})} {
			if v4.As4()[0] != 0 { // (2001::1 is judged as itself)
				out = append(out, v4)
			}
		}
	}
	return out
}

// Unlocks reports whether an allow CIDR opens address a in guarded range
// g: it must contain a and lie entirely within g.
func Unlocks(cidr netip.Prefix, g Range, a netip.Addr) bool {
	a = a.WithZone("").Unmap()
	if !cidr.Contains(a) {
		return false
	}
	return cidr.Bits() >= g.Prefix.Bits() && g.Prefix.Contains(cidr.Addr())
}
