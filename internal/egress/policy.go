package egress

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"reflect"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"go.yaml.in/yaml/v3"
)

// Category is a kind of destination, granted to a sandbox as a whole.
type Category string

// The categories. An allow rule belongs to at most one; it applies only
// while its category is granted. PublicWeb is built in: granted, it allows
// every name or address that is not guarded, on the default ports.
const (
	Registries Category = "registries"
	Git        Category = "git"
	PublicWeb  Category = "public_web"
	Internal   Category = "internal"
	Webhooks   Category = "webhooks"
)

// Categories lists every category.
var Categories = []Category{Registries, Git, PublicWeb, Internal, Webhooks}

// Action is what a rule does.
type Action string

// The actions of a rule.
const (
	Allow Action = "allow"
	Deny  Action = "deny"
)

// Policy is one sandbox's egress policy. The zero value allows nothing.
// It embeds in a policy file as the value of an `egress:` key; Parse reads
// it alone, strictly.
type Policy struct {
	// Grant lists the categories this sandbox may use.
	Grant []Category `yaml:"grant,omitempty" json:"grant,omitempty"`
	// Presets names package registries whose hosts come from the host's
	// own configuration (see DiscoverPresets): npm, go, pypi, debian,
	// crates. Each is an allow rule of category registries named
	// "preset-<name>".
	Presets []string `yaml:"presets,omitempty" json:"presets,omitempty"`
	Rules   []Rule   `yaml:"rules,omitempty" json:"rules,omitempty"`
	// Secrets are brokered credentials (see Secret).
	Secrets []Secret `yaml:"secrets,omitempty" json:"secrets,omitempty"`
}

// Rule allows or denies destinations. Every field given must match: a host
// pattern or a CIDR, and the port. Deny rules apply whatever is granted
// and win over allow rules.
type Rule struct {
	ID     string `yaml:"id" json:"id"`
	Action Action `yaml:"action" json:"action"`
	// Category of an allow rule; empty means the rule applies on its own.
	Category Category `yaml:"category,omitempty" json:"category,omitempty"`
	// Hosts are names ("api.example.test") or wildcards ("*.example.test":
	// every name below example.test, not example.test itself). IDNs may be
	// written in Unicode.
	Hosts []string `yaml:"hosts,omitempty" json:"hosts,omitempty"`
	// CIDRs match IP literals, and every address a name resolves to. An
	// allow CIDR inside a guarded range (loopback, private, link-local,
	// CGNAT, metadata, ...) is the only way to open that range.
	CIDRs []string `yaml:"cidrs,omitempty" json:"cidrs,omitempty"`
	// Ports allowed; empty means 443 for CONNECT and 80 and 443 for plain
	// HTTP.
	Ports []int `yaml:"ports,omitempty" json:"ports,omitempty"`
	// Opaque lets a CONNECT tunnel carry something other than TLS (ssh,
	// say); otherwise a tunnel must start with a TLS ClientHello whose SNI
	// is allowed too.
	Opaque bool `yaml:"opaque,omitempty" json:"opaque,omitempty"`
}

// Secret is a brokered credential: the sandbox holds only Placeholder, and
// the proxy puts Value in its place in the headers of requests to Hosts,
// over TLS it terminates with the sandbox's CA and re-originates to the
// real host. A placeholder sent anywhere else is forwarded untouched.
type Secret struct {
	ID string `yaml:"id" json:"id"`
	// Placeholder is the string the sandbox sees (at least 12 bytes, no
	// spaces or control bytes).
	Placeholder string `yaml:"placeholder" json:"placeholder"`
	// Hosts are name patterns, as in Rule; each must also be allowed by
	// a rule for the secret to be used.
	Hosts []string `yaml:"hosts" json:"hosts"`
	// Headers are the request headers the value may go in; empty means
	// Authorization only. Cookie is never one: a cookie jar, the URL and
	// the body never get the value.
	Headers []string `yaml:"headers,omitempty" json:"headers,omitempty"`
	// Value is the real credential. It is never read from or written to a
	// policy file: the caller fills it in before SetPolicy.
	Value string `yaml:"-" json:"-"`
}

// Parse reads a policy, YAML or JSON, strictly: unknown keys, categories,
// actions and presets, duplicate ids, bad patterns, CIDRs and ports are
// errors of kind errdefs.ErrInvalid. An empty document is the zero policy.
func Parse(data []byte) (*Policy, error) {
	var p Policy
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&p); err != nil && err != io.EOF {
		return nil, errdefs.Wrap(errdefs.ErrInvalid, "egress policy: %v", err)
	}
	if err := p.Check(); err != nil {
		return nil, err
	}
	return &p, nil
}

// ParseJSON reads a policy from JSON, rejecting unknown fields.
func ParseJSON(data []byte) (*Policy, error) {
	var p Policy
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, errdefs.Wrap(errdefs.ErrInvalid, "egress policy: %v", err)
	}
	if err := p.Check(); err != nil {
		return nil, err
	}
	return &p, nil
}

// Merge returns p with a later layer applied: the later grant list
// replaces p's when it is given, and presets, rules and secrets add up.
func (p Policy) Merge(later Policy) Policy {
	out := Policy{
		Grant:   slices.Clone(p.Grant),
		Presets: append(slices.Clone(p.Presets), later.Presets...),
		Rules:   append(slices.Clone(p.Rules), later.Rules...),
		Secrets: append(slices.Clone(p.Secrets), later.Secrets...),
	}
	if later.Grant != nil {
		out.Grant = slices.Clone(later.Grant)
	}
	return out
}

// LooserThan lists what p allows that prev does not: a grant or preset
// prev lacks, an allow rule or brokered secret that is not one of prev's,
// or a deny rule of prev's that p drops. A caller that may only tighten a
// sandbox's policy must be refused when the list is not empty. Rules and
// secrets are compared whole (a changed rule is a new rule).
func (p Policy) LooserThan(prev Policy) []string {
	var loose []string
	for _, g := range p.Grant {
		if !slices.Contains(prev.Grant, g) {
			loose = append(loose, "grants "+string(g))
		}
	}
	for _, pr := range p.Presets {
		if !slices.Contains(prev.Presets, pr) {
			loose = append(loose, "preset "+pr)
		}
	}
	sameRule := func(a Rule) func(Rule) bool {
		return func(b Rule) bool { return reflect.DeepEqual(a, b) }
	}
	for _, r := range p.Rules {
		if r.Action != Deny && !slices.ContainsFunc(prev.Rules, sameRule(r)) {
			loose = append(loose, "rule "+r.ID+" allows")
		}
	}
	for _, r := range prev.Rules {
		if r.Action == Deny && !slices.ContainsFunc(p.Rules, sameRule(r)) {
			loose = append(loose, "deny rule "+r.ID+" is dropped")
		}
	}
	for _, s := range p.Secrets {
		if !slices.ContainsFunc(prev.Secrets, func(o Secret) bool { return reflect.DeepEqual(s, o) }) {
			loose = append(loose, "brokers secret "+s.ID)
		}
	}
	return loose
}

// Check validates a policy (see Parse).
func (p *Policy) Check() error {
	_, err := compile(p, nil)
	return err
}

func invalid(format string, args ...any) error {
	return errdefs.Wrap(errdefs.ErrInvalid, "egress policy: "+format, args...)
}

// Presets known to DiscoverPresets.
var presetNames = []string{"npm", "go", "pypi", "debian", "crates"}

// compiled is a checked policy ready for decisions. It is immutable.
type compiled struct {
	grants  map[Category]bool
	allow   []*crule
	deny    []*crule
	secrets []*csecret
	// nat64 are the network's NAT64 prefixes (Config.NAT64Prefixes).
	nat64 []netip.Prefix
	// emptyPresets names presets that were asked for but found no host.
	emptyPresets []string
	// denied caches the addresses of the deny rules' names.
	denied *deniedCache
}

type crule struct {
	id       string
	category Category
	names    map[string]bool
	suffixes []string // ".example.test" for "*.example.test"
	cidrs    []netip.Prefix
	ports    []int
	opaque   bool
}

type csecret struct {
	id, placeholder, value string
	names                  map[string]bool
	suffixes               []string
	headers                map[string]bool // canonical header names, never empty
}

func validID(id string) bool {
	return id != "" && len(id) <= 64 && !strings.ContainsAny(id, " \t\r\n:")
}

// compile checks p and builds its matcher; presets maps preset names to the
// hosts discovered for them (nil: checking only).
func compile(p *Policy, presets Presets) (*compiled, error) {
	c := &compiled{grants: map[Category]bool{}, denied: &deniedCache{}}
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
		r := &crule{id: id, category: Registries, names: map[string]bool{}}
		ports := map[int]bool{}
		for _, hp := range presets[name] {
			t, err := ParseTarget(hp, 443)
			if err != nil || t.IsIP() {
				continue // DiscoverPresets only returns names; be safe
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
				c.emptyPresets = append(c.emptyPresets, name)
			}
			continue
		}
		c.allow = append(c.allow, r)
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
			c.allow = append(c.allow, cr)
		} else {
			c.deny = append(c.deny, cr)
		}
	}
	if n := denyNameCount(c.deny); n > maxDenyNames {
		return nil, invalid("the deny rules name %d hosts, at most %d: each is resolved by the daemon (deny by cidrs, or allow only what is needed)", n, maxDenyNames)
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
		for _, o := range c.secrets {
			if strings.Contains(o.placeholder, cs.placeholder) || strings.Contains(cs.placeholder, o.placeholder) {
				return nil, invalid("secrets %s and %s: one placeholder contains the other", o.id, cs.id)
			}
		}
		c.secrets = append(c.secrets, cs)
	}
	return c, nil
}

func categoryList() string {
	var s []string
	for _, c := range Categories {
		s = append(s, string(c))
	}
	return strings.Join(s, ", ")
}

func compileRule(r *Rule) (*crule, error) {
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
	cr := &crule{id: r.ID, category: r.Category, names: map[string]bool{}, opaque: r.Opaque}
	if r.Opaque && r.Action == Deny {
		return nil, invalid("rule %s: opaque is for allow rules", r.ID)
	}
	for _, h := range r.Hosts {
		if err := addPattern(h, cr.names, &cr.suffixes); err != nil {
			return nil, invalid("rule %s: %v", r.ID, err)
		}
	}
	for _, s := range r.CIDRs {
		pfx, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil || a.Zone() != "" {
				return nil, invalid("rule %s: cidr %q: %v", r.ID, s, err)
			}
			pfx = netip.PrefixFrom(a, a.BitLen())
		}
		if pfx != pfx.Masked() {
			return nil, invalid("rule %s: cidr %q has host bits set (did you mean %s?)", r.ID, s, pfx.Masked())
		}
		if pfx.Addr().Is4In6() {
			return nil, invalid("rule %s: cidr %q: write IPv4-mapped ranges as IPv4", r.ID, s)
		}
		cr.cidrs = append(cr.cidrs, pfx)
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

func compileSecret(s *Secret) (*csecret, error) {
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
	cs := &csecret{id: s.ID, placeholder: s.Placeholder, value: s.Value, names: map[string]bool{}}
	for _, h := range s.Hosts {
		if err := addPattern(h, cs.names, &cs.suffixes); err != nil {
			return nil, invalid("secret %s: %v", s.ID, err)
		}
	}
	cs.headers = map[string]bool{}
	for _, h := range s.Headers {
		if err := checkSecretHeader(h); err != nil {
			return nil, invalid("secret %s: %v", s.ID, err)
		}
		cs.headers[canonicalHeader(h)] = true
	}
	if len(cs.headers) == 0 {
		cs.headers[DefaultSecretHeader] = true
	}
	return cs, nil
}

// DefaultSecretHeader is the one request header a brokered value goes in
// when a secret names none.
const DefaultSecretHeader = "Authorization"

// checkSecretHeader refuses header names that are malformed, and those a
// value must never go in: cookies (a jar persists and is echoed back by
// design), and the hop-by-hop and framing headers the proxy owns.
func checkSecretHeader(h string) error { return CheckSecretHeader(h) }

// CheckSecretHeader says whether a brokered secret may name header h.
func CheckSecretHeader(h string) error {
	if h == "" || len(h) > 128 || strings.ContainsAny(h, " \t\r\n:\x00") {
		return fmt.Errorf("header name %q", h)
	}
	switch canonicalHeader(h) {
	case "Cookie", "Cookie2", "Set-Cookie", "Host", "Content-Length", "Transfer-Encoding",
		"Connection", "Proxy-Authorization", "Upgrade", "Te", "Trailer", "Keep-Alive":
		return fmt.Errorf("header %s may not carry a brokered secret", canonicalHeader(h))
	}
	return nil
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

func (r *crule) matchName(name string) bool { return matchName(name, r.names, r.suffixes) }

func (r *crule) matchAddr(a netip.Addr) bool {
	a = a.WithZone("").Unmap()
	for _, p := range r.cidrs {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// matchDenied is matchAddr for a deny rule: an address that embeds an
// IPv4 address (NAT64, SIIT, 6to4, Teredo...; see embeddedIPv4s) is also
// denied by it, since it reaches that host where the network translates.
func (r *crule) matchDenied(a netip.Addr, nat64 []netip.Prefix) bool {
	if r.matchAddr(a) {
		return true
	}
	for _, v4 := range embeddedIPv4s(a.WithZone("").Unmap(), nat64) {
		if r.matchAddr(v4) {
			return true
		}
	}
	return false
}

// mode is what a destination is used for; it sets the default ports.
type mode int

const (
	modeConnect mode = iota
	modeHTTP
	modeDNS // ports do not apply
)

func (m mode) String() string {
	switch m {
	case modeConnect:
		return "CONNECT"
	case modeHTTP:
		return "HTTP"
	}
	return "DNS"
}

var (
	defaultConnectPorts = []int{443}
	defaultHTTPPorts    = []int{80, 443}
)

func (r *crule) ports4(m mode) []int {
	if len(r.ports) > 0 {
		return r.ports
	}
	if m == modeConnect {
		return defaultConnectPorts
	}
	return defaultHTTPPorts
}

func (r *crule) portOK(m mode, port int) bool {
	return m == modeDNS || slices.Contains(r.ports4(m), port)
}

func (c *compiled) active(r *crule) bool {
	return r.category == "" || c.grants[r.category]
}
