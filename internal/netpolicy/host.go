package netpolicy

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// Target is a parsed destination: a normalised host name or an IP literal,
// and a port.
type Target struct {
	// Host is the lowercase ASCII name (punycode for internationalised
	// names, no trailing dot) or, for an IP literal, the address in its
	// canonical form.
	Host string
	// Addr is the address of an IP literal, invalid for a name.
	Addr netip.Addr
	Port int
}

// IsIP reports whether the target is an IP literal.
func (t Target) IsIP() bool { return t.Addr.IsValid() }

// String is the target as host:port, with brackets around IPv6.
func (t Target) String() string {
	return joinHostPort(t.Host, t.Port)
}

func joinHostPort(host string, port int) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}

// errHost is the kind of every host parsing error, so callers can tell a
// malformed destination from a refused one.
var errHost = errors.New("invalid host")

func hostErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errHost, fmt.Sprintf(format, args...))
}

// ParseTarget parses an authority ("host", "host:port", "[v6]" or
// "[v6]:port") strictly: ASCII only, no userinfo, no control bytes, names
// of at most 253 bytes with labels of at most 63, one trailing dot removed,
// punycode labels checked (valid IDNA, one script per label), and IPv4
// written in any of the forms inet_aton accepts (decimal, octal, hex, fewer
// than four parts) turned into the address it means, so that the guards see
// the real destination. defaultPort is used when no port is given; 0 means
// a port is required.
func ParseTarget(authority string, defaultPort int) (Target, error) {
	if authority == "" {
		return Target{}, hostErr("empty")
	}
	if len(authority) > 300 {
		return Target{}, hostErr("%d bytes is too long", len(authority))
	}
	for i := 0; i < len(authority); i++ {
		c := authority[i]
		if c <= ' ' || c >= 0x7f {
			return Target{}, hostErr("byte %#02x at %d", c, i)
		}
		switch c {
		case '@':
			return Target{}, hostErr("userinfo is not allowed")
		case '/', '\\', '?', '#', '%', '"', '<', '>', '^', '`', '{', '|', '}':
			return Target{}, hostErr("%q is not allowed in a host", c)
		}
	}
	host, portStr := authority, ""
	if strings.HasPrefix(authority, "[") {
		end := strings.IndexByte(authority, ']')
		if end < 0 {
			return Target{}, hostErr("unterminated [")
		}
		host, portStr = authority[1:end], authority[end+1:]
		if portStr != "" {
			if portStr[0] != ':' {
				return Target{}, hostErr("junk after ]")
			}
			portStr = portStr[1:]
			if portStr == "" {
				return Target{}, hostErr("empty port")
			}
		}
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return Target{}, hostErr("%q is not an IPv6 address", host)
		}
		return finishIP(a, portStr, defaultPort)
	}
	if i := strings.LastIndexByte(authority, ':'); i >= 0 {
		host, portStr = authority[:i], authority[i+1:]
		if strings.IndexByte(host, ':') >= 0 {
			return Target{}, hostErr("an IPv6 address needs brackets")
		}
		if portStr == "" {
			return Target{}, hostErr("empty port")
		}
	}
	if a, ok, err := parseIPv4(host); err != nil {
		return Target{}, err
	} else if ok {
		return finishIP(a, portStr, defaultPort)
	}
	name, err := normalizeName(host, false)
	if err != nil {
		return Target{}, err
	}
	port, err := parsePort(portStr, defaultPort)
	if err != nil {
		return Target{}, err
	}
	return Target{Host: name, Port: port}, nil
}

func finishIP(a netip.Addr, portStr string, defaultPort int) (Target, error) {
	if a.Is4In6() {
		// An IPv4-mapped address reaches the IPv4 host: check and dial
		// that one.
		a = a.Unmap()
	}
	port, err := parsePort(portStr, defaultPort)
	if err != nil {
		return Target{}, err
	}
	return Target{Host: a.String(), Addr: a, Port: port}, nil
}

func parsePort(s string, def int) (int, error) {
	if s == "" {
		if def <= 0 {
			return 0, hostErr("a port is required")
		}
		return def, nil
	}
	if len(s) > 5 || (len(s) > 1 && s[0] == '0') {
		return 0, hostErr("port %q", s)
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, hostErr("port %q", s)
		}
		n = n*10 + int(s[i]-'0')
	}
	if n < 1 || n > 65535 {
		return 0, hostErr("port %d is out of range", n)
	}
	return n, nil
}

// parseIPv4 reads host as an IPv4 address the way inet_aton and URL
// parsers do when its last label is numeric: 1 to 4 parts, each decimal,
// octal (leading 0) or hex (0x). ok is false for a host that is a name. A
// host whose last label is numeric but that is no valid address is an
// error: no top-level domain is numeric, so it can only be a trick.
func parseIPv4(host string) (a netip.Addr, ok bool, err error) {
	h := strings.TrimSuffix(host, ".")
	parts := strings.Split(h, ".")
	if !numericPart(parts[len(parts)-1]) {
		return netip.Addr{}, false, nil
	}
	if len(parts) > 4 {
		return netip.Addr{}, false, hostErr("%q: numeric last label but not an IPv4 address", host)
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		v, ok := parseIPv4Part(p)
		if !ok {
			return netip.Addr{}, false, hostErr("%q: numeric last label but not an IPv4 address", host)
		}
		vals[i] = v
	}
	// All parts but the last are single bytes; the last fills the rest.
	var n uint64
	for _, v := range vals[:len(vals)-1] {
		if v > 255 {
			return netip.Addr{}, false, hostErr("%q: IPv4 part out of range", host)
		}
		n = n<<8 | v
	}
	rest := uint(8 * (5 - len(vals)))
	last := vals[len(vals)-1]
	if last >= 1<<rest {
		return netip.Addr{}, false, hostErr("%q: IPv4 part out of range", host)
	}
	n = n<<rest | last
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true, nil
}

func numericPart(p string) bool {
	if p == "" {
		return false
	}
	if len(p) >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X') {
		for i := 2; i < len(p); i++ {
			if !isHex(p[i]) {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func parseIPv4Part(p string) (uint64, bool) {
	if p == "" || len(p) > 12 {
		return 0, false
	}
	base, digits := 10, p
	switch {
	case len(p) >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'):
		base, digits = 16, p[2:]
		if digits == "" {
			return 0, true // "0x" is 0 to inet_aton
		}
	case len(p) >= 2 && p[0] == '0':
		base, digits = 8, p[1:]
	}
	v, err := strconv.ParseUint(digits, base, 64)
	if err != nil || v > 0xffffffff {
		return 0, false
	}
	return v, true
}

// normalizeName checks a DNS name and returns it lowercase, in ASCII, with
// no trailing dot. With pattern, a leading "*." label is allowed (for
// policy wildcards) and kept. Non-ASCII input is accepted only in policy
// patterns (pattern true), where it is converted with IDNA.
func normalizeName(name string, pattern bool) (string, error) {
	star := false
	if pattern && strings.HasPrefix(name, "*.") {
		star, name = true, name[2:]
	}
	name = strings.TrimSuffix(name, ".")
	if name == "" {
		return "", hostErr("empty name")
	}
	if !isASCII(name) {
		if !pattern {
			return "", hostErr("non-ASCII name (send punycode)")
		}
		a, err := idna.Lookup.ToASCII(name)
		if err != nil {
			return "", hostErr("%q: %v", name, err)
		}
		name = a
	}
	if len(name) > 253 {
		return "", hostErr("name of %d bytes (at most 253)", len(name))
	}
	name = strings.ToLower(name)
	for label := range strings.SplitSeq(name, ".") {
		if err := checkLabel(label); err != nil {
			return "", err
		}
	}
	if star {
		return "*." + name, nil
	}
	return name, nil
}

func checkLabel(label string) error {
	if label == "" {
		return hostErr("empty label")
	}
	if len(label) > 63 {
		return hostErr("label of %d bytes (at most 63)", len(label))
	}
	if label[0] == '-' || label[len(label)-1] == '-' {
		return hostErr("label %q starts or ends with '-'", label)
	}
	for i := 0; i < len(label); i++ {
		c := label[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return hostErr("byte %q in label %q", c, label)
		}
	}
	if strings.HasPrefix(label, "xn--") {
		return checkPunycode(label)
	}
	if len(label) >= 4 && label[2] == '-' && label[3] == '-' {
		return hostErr("label %q has '--' at positions 3-4 but is not punycode", label)
	}
	return nil
}

// checkPunycode decodes an xn-- label and refuses it unless it is valid
// IDNA that encodes back to itself, holds only letters, digits and marks,
// and uses one script (Japanese and Korean combinations with Han
// excepted), so that a look-alike of an allowed name cannot pass for it.
func checkPunycode(label string) error {
	u, err := idna.Registration.ToUnicode(label)
	if err != nil {
		return hostErr("punycode label %q: %v", label, err)
	}
	back, err := idna.Lookup.ToASCII(u)
	if err != nil || back != label {
		return hostErr("punycode label %q is not in canonical form", label)
	}
	for _, r := range u {
		if r != '-' && !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsMark(r) {
			return hostErr("punycode label %q holds %U, which is not a letter, digit or mark", label, r)
		}
	}
	if s := mixedScripts(u); s != "" {
		return hostErr("punycode label %q mixes scripts (%s)", label, s)
	}
	return nil
}

var cjk = map[string]bool{"Han": true, "Hiragana": true, "Katakana": true, "Hangul": true, "Bopomofo": true}

// mixedScripts returns the scripts of a label joined by "+" when it uses
// more than one, ignoring Common and Inherited runes (digits, hyphen,
// combining marks).
func mixedScripts(label string) string {
	var seen []string
	for _, r := range label {
		if r < utf8.RuneSelf {
			if r >= 'a' && r <= 'z' {
				seen = addScript(seen, "Latin")
			}
			continue
		}
		for name, table := range unicode.Scripts {
			if name == "Common" || name == "Inherited" {
				continue
			}
			if unicode.Is(table, r) {
				seen = addScript(seen, name)
				break
			}
		}
	}
	if len(seen) <= 1 {
		return ""
	}
	allCJK := true
	for _, s := range seen {
		allCJK = allCJK && cjk[s]
	}
	if allCJK {
		return ""
	}
	return strings.Join(seen, "+")
}

func addScript(seen []string, s string) []string {
	for _, x := range seen {
		if x == s {
			return seen
		}
	}
	return append(seen, s)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
