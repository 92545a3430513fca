package netpolicy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/internal/errdefs"
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
	// own configuration (see egress.DiscoverPresets): npm, go, pypi, debian,
	// crates. Each is an allow rule of category registries named
	// "preset-<name>" that applies on its own: naming the preset is the
	// grant (a user found that a preset alone allowed nothing).
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
	// ExceptHosts and ExceptCIDRs (deny rules only) are destinations this
	// rule does not deny: a name its hosts match is spared only by
	// ExceptHosts; an address its CIDRs match (or one of its names
	// resolves to) is spared by ExceptCIDRs, or by ExceptHosts matching
	// the name being reached. An exception only narrows this one rule:
	// other deny rules, the guards and the need for an allow rule still
	// apply, so it never opens anything (E2B's allowOut, issue 25).
	ExceptHosts []string `yaml:"except_hosts,omitempty" json:"except_hosts,omitempty"`
	ExceptCIDRs []string `yaml:"except_cidrs,omitempty" json:"except_cidrs,omitempty"`
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
	// policy file: the caller fills it in before egress's SetPolicy.
	Value string `yaml:"-" json:"-"`
}

// Parse reads a policy, YAML or JSON, strictly: unknown keys, categories,
// actions and presets, duplicate ids, bad patterns, CIDRs and ports are
// errors of kind errdefs.ErrInvalid. An empty document is the zero policy.
// A binary built with the tag airlock_noyaml (the front) reads no YAML:
// an unsupported error.
func Parse(data []byte) (*Policy, error) {
	var p Policy
	if err := decodeYAML(data, &p); err != nil {
		return nil, err
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

// NarrowedBy is p with layer applied, refused (errdefs.ErrDenied) when
// the result lets anything through that p does not: a layer an agent's
// door gives (deny rules and their exceptions) can then be replaced
// whole while the sandbox lives, widening back to p but never past it.
func (p Policy) NarrowedBy(layer Policy) (Policy, error) {
	if err := layer.Check(); err != nil {
		return Policy{}, err
	}
	next := p.Merge(layer)
	if err := next.Check(); err != nil {
		return Policy{}, err
	}
	if loose := next.LooserThan(p); len(loose) > 0 {
		return Policy{}, errdefs.Wrap(errdefs.ErrDenied, "this layer may only narrow the sandbox's egress policy; it would relax it: %s", strings.Join(loose, ", "))
	}
	return next, nil
}

// Check validates a policy (see Parse).
func (p *Policy) Check() error {
	_, err := Compile(p, nil)
	return err
}

func invalid(format string, args ...any) error {
	return errdefs.Wrap(errdefs.ErrInvalid, "egress policy: "+format, args...)
}

// Presets known to egress.DiscoverPresets.
var presetNames = []string{"npm", "go", "pypi", "debian", "crates"}

func validID(id string) bool {
	return id != "" && len(id) <= 64 && !strings.ContainsAny(id, " \t\r\n:")
}

func categoryList() string {
	var s []string
	for _, c := range Categories {
		s = append(s, string(c))
	}
	return strings.Join(s, ", ")
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

// Presets maps a preset name (npm, go, pypi, debian, crates) to the hosts
// of its registries, each "name:port".
type Presets map[string][]string

// canonicalHeader is a header name as net/http spells it (textproto's
// CanonicalMIMEHeaderKey): the first letter and each letter after a
// hyphen upper case, the others lower case; a name with a byte that is
// not a token's (RFC 9110: a space, a control, a separator, non-ASCII) is
// left as it is. Written here, held equal to textproto's by a test, so
// that this package does not link net (textproto imports it), whose
// initialisation every policy check, a process of its own, would pay.
func canonicalHeader(name string) string {
	for i := 0; i < len(name); i++ {
		if !tokenByte(name[i]) {
			return name
		}
	}
	b := []byte(name)
	upper := true
	for i, c := range b {
		switch {
		case upper && 'a' <= c && c <= 'z':
			c -= 'a' - 'A'
		case !upper && 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		b[i] = c
		upper = c == '-'
	}
	return string(b)
}

// tokenByte reports whether c may be in an HTTP token (a header name).
func tokenByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
