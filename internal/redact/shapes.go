package redact

import (
	"regexp"
	"sync"

	"github.com/airlock-dev/airlock/internal/lazyre"
)

// rule is one token shape. A rule is tried only where one of its anchors occurs, and its
// regexp is anchored there and run on a bounded window. Running every regexp over the whole
// input would cost one pass per rule (Go regexps without a literal prefix manage tens of
// MB/s); instead findShapes makes one pass that looks for all anchors at once.
type rule struct {
	kind    string
	anchors []string // literal starts of a match; lowercase when fold is set
	fold    bool     // anchors match regardless of ASCII case
	// match tries a match whose anchor is at sc.b[at:]. It returns the secret part
	// [start, end), or start < 0, and where this rule's scan may resume (0: at+1).
	match matchFunc
}

// scan is the state of one findShapes pass.
type scan struct {
	b []byte
	// The first PEM END line at or after endFrom spans [endAt, endEnd); endAt < 0: none.
	// Cached so that many BEGIN lines without an END cost one search, not one each.
	endFrom, endAt, endEnd int
}

// rules, in priority order for overlapping matches: specific formats before the
// generic ones (a "token=ghp_..." is a github-token first).
var rules = []rule{
	{kind: "private-key", anchors: []string{"-----BEGIN"}, match: matchPEM},
	{
		kind:    "aws-access-key",
		anchors: []string{"AKIA", "ASIA"},
		match:   bounded(alnum, alnum, regexpAt(`^(?:AKIA|ASIA)[A-Z0-9]{16}`, upTo(20), nil)),
	},
	{
		// A 40-character secret key looks like any base64, so only one next to its name.
		kind:    "aws-secret-key",
		anchors: []string{"secret_access_key", "secret-access-key", "secretaccesskey", "aws_secret_key"},
		fold:    true,
		match: bounded(nil, charset("A-Za-z0-9+/="), regexpAt(
			`^(?i:secret[_-]?access[_-]?key|aws_secret_key)["']?[ \t]*(?::=|=>|[=:])[ \t]*["']?([A-Za-z0-9/+]{40})`, upTo(128), nil)),
	},
	{
		kind:    "github-token",
		anchors: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"},
		match: bounded(alnum, nil, regexpAt(
			`^(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})`, upTo(256), charset("A-Za-z0-9_"))),
	},
	{
		kind:    "gitlab-token",
		anchors: []string{"glpat-"},
		match: bounded(alnum, nil, regexpAt(
			`^glpat-[A-Za-z0-9_-]{20,}(?:\.[A-Za-z0-9_-]+){0,3}`, upTo(256), nil)),
	},
	{
		kind:    "slack-token",
		anchors: []string{"xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-"},
		match:   bounded(alnum, nil, regexpAt(`^xox[abprs]-[A-Za-z0-9-]{10,}`, upTo(256), charset("A-Za-z0-9-"))),
	},
	{
		kind:    "stripe-key",
		anchors: []string{"sk_live_", "rk_live_"},
		match:   bounded(alnum, nil, regexpAt(`^[sr]k_live_[A-Za-z0-9]{16,}`, upTo(256), alnum)),
	},
	{
		kind:    "google-api-key",
		anchors: []string{"AIza"},
		match:   bounded(alnum, charset("A-Za-z0-9_-"), regexpAt(`^AIza[A-Za-z0-9_-]{35}`, upTo(39), nil)),
	},
	{
		kind:    "npm-token",
		anchors: []string{"npm_"},
		match:   bounded(alnum, alnum, regexpAt(`^npm_[A-Za-z0-9]{36}`, upTo(40), nil)),
	},
	{
		// The left bound keeps "eyJ" inside longer base64 from matching, and makes the scan
		// linear: only the first "eyJ" of a run of base64url characters is tried.
		kind:    "jwt",
		anchors: []string{"eyJ"},
		match: bounded(base64URL, nil, regexpAt(
			`^eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*`, jwtWindow, nil)),
	},
	{
		kind:    "bearer-token",
		anchors: []string{"bearer"},
		fold:    true,
		match: bounded(alnum, nil, regexpAt(
			`^(?i:bearer)[ \t]+([A-Za-z0-9._~+/-]{16,}=*)`, tokenAfter(len("bearer"), charset("A-Za-z0-9._~+/=-")), nil)),
	},
	{kind: "password-in-url", anchors: []string{"://"}, match: matchURLPassword},
	{
		kind:    "generic-api-key",
		anchors: []string{"api_key", "api-key", "apikey", "secret", "token", "password", "passwd"},
		fold:    true,
		match:   matchGeneric,
	},
}

// byteSet is a set of bytes, built by charset.
type byteSet *[256]bool

// charset returns the set of the bytes in spec, where "a-z" is a range.
func charset(spec string) byteSet {
	var s [256]bool
	for i := 0; i < len(spec); i++ {
		if i+2 < len(spec) && spec[i+1] == '-' {
			for c := int(spec[i]); c <= int(spec[i+2]); c++ {
				s[c] = true
			}
			i += 2
			continue
		}
		s[spec[i]] = true
	}
	return &s
}

var (
	alnum     = charset("A-Za-z0-9")
	base64URL = charset("A-Za-z0-9_-")
)

type matchFunc = func(sc *scan, at int) (start, end, resume int)

// A windowFunc returns where the text a regexp sees ends, for a match starting at b[at:].
// The tighter the window, the cheaper the regexp: Go picks its fast backtracking matcher
// only for short inputs, and its general one costs some 100 ns a byte.
type windowFunc = func(b []byte, at int) int

// upTo is a window of at most n bytes, for shapes of bounded length.
func upTo(n int) windowFunc {
	return func(b []byte, at int) int { return min(len(b), at+n) }
}

// tokenAfter is the window over skip bytes, at least one blank, then a run of token bytes.
func tokenAfter(skip int, token byteSet) windowFunc {
	return func(b []byte, at int) int {
		i := min(len(b), at+skip)
		if i == len(b) || (b[i] != ' ' && b[i] != '\t') {
			return i // no token follows; and "bearer-bearer-..." must not cost a scan each
		}
		for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
			i++
		}
		for i < len(b) && token[b[i]] {
			i++
		}
		return i
	}
}

// jwtWindow is the window over three dot-separated base64url parts, or empty if there are
// fewer. It stops at the third dot so that a long run of "eyJ...." parts costs each
// candidate only its own three.
func jwtWindow(b []byte, at int) int {
	i, dots := at, 0
	for ; i < len(b); i++ {
		if b[i] == '.' {
			if dots++; dots == 3 {
				break
			}
		} else if !base64URL[b[i]] {
			break
		}
	}
	if dots < 2 {
		return at
	}
	return i
}

// regexpAt returns a matchFunc that runs expr (which must start with ^) on the window at the
// anchor. The secret is the first capturing group that took part, or the whole match. When
// the match runs into the end of a window cut short, it is continued over the bytes in tail,
// so that a long token is not cut and half shown.
func regexpAt(expr string, window windowFunc, tail byteSet) matchFunc {
	// Compiled on first use, not when the table is built at start.
	re := sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
	return func(sc *scan, at int) (int, int, int) {
		b := sc.b
		lim := window(b, at)
		m := re().FindSubmatchIndex(b[at:lim])
		if m == nil {
			return -1, 0, 0
		}
		s, e := m[0], m[1]
		for g := 2; g+1 < len(m); g += 2 {
			if m[g] >= 0 {
				s, e = m[g], m[g+1]
				break
			}
		}
		s, e = at+s, at+e
		if tail != nil && at+m[1] == lim {
			for e < len(b) && tail[b[e]] {
				e++
			}
		}
		return s, e, 0
	}
}

// bounded wraps m to require that the byte before the anchor is not in before, and the
// byte after the secret is not in after (nil: no requirement). This is \b made exact: "x"
// before AKIA means the text is some longer identifier, not an access key id.
func bounded(before, after byteSet, m matchFunc) matchFunc {
	return func(sc *scan, at int) (int, int, int) {
		b := sc.b
		if before != nil && at > 0 && before[b[at-1]] {
			return -1, 0, 0
		}
		s, e, resume := m(sc, at)
		if s < 0 || (after != nil && e < len(b) && after[b[e]]) {
			return -1, 0, resume
		}
		return s, e, resume
	}
}

// maxPEM bounds the search for a private key's END line; real keys are under 16 KiB.
const maxPEM = 64 << 10

var (
	pemBegin = lazyre.New(`^-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----`)
	pemEnd   = lazyre.New(`-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----`)
	// pemBody is what a key body can hold: base64, newlines, "Proc-Type: 4,ENCRYPTED"
	// headers, and "\n" escapes when the key sits in a JSON string or a quoted log line.
	pemBody = charset("A-Za-z0-9+/= \t\r\n\\:,-")
)

// matchPEM takes a whole private key block, BEGIN line through END line. A block with no END
// line (cut off by a size limit, say) is taken up to the end of its body: half a key is
// still a secret.
func matchPEM(sc *scan, at int) (int, int, int) {
	b := sc.b
	m := pemBegin().FindIndex(b[at:min(len(b), at+80)])
	if m == nil {
		return -1, 0, 0
	}
	body := at + m[1]
	if body < sc.endFrom || (sc.endAt >= 0 && sc.endAt < body) {
		sc.endFrom, sc.endAt = body, -1
		if e := pemEnd().FindIndex(b[body:]); e != nil {
			sc.endAt, sc.endEnd = body+e[0], body+e[1]
		}
	}
	if sc.endAt >= 0 && sc.endAt-body <= maxPEM {
		return at, sc.endEnd, 0
	}
	e := body
	for e < len(b) && pemBody[b[e]] {
		e++
	}
	return at, e, 0
}

// urlPassword matches the userinfo after "://"; the user may be empty ("redis://:pw@host").
// Neither part may hold '/', '?', '#' or '@', which end the authority.
var urlPassword = lazyre.New(`^://[^\s:@/?#\[\]"'<>]*:([^\s@/?#\[\]"'<>]+)@`)

// authorityEnd holds the bytes that end a URL's userinfo, and '@', which ends it well.
var authorityEnd = charset("/?#@[]\"'<> \t\r\n")

// matchURLPassword takes only the password of scheme://user:password@host.
func matchURLPassword(sc *scan, at int) (int, int, int) {
	b := sc.b
	if at == 0 || !alnum[b[at-1]] { // no scheme
		return -1, 0, 0
	}
	// Most URLs have no userinfo; find that out without the regexp, which costs a
	// microsecond a call and would dominate on logs full of URLs.
	colon, i := false, at+3
	for lim := min(len(b), at+520); i < lim && !authorityEnd[b[i]]; i++ {
		colon = colon || b[i] == ':'
	}
	if !colon || i == len(b) || b[i] != '@' {
		return -1, 0, 0
	}
	m := urlPassword().FindSubmatchIndex(b[at : i+1])
	if m == nil {
		return -1, 0, 0
	}
	return at + m[2], at + m[3], 0
}

// generic matches "<name> = value" and "<name>: value" for names containing api_key,
// apikey, secret, token, password or passwd (optionally followed by "_key"), quoted or not.
// The value must have 8 or more characters: "password: x" and "token:" alone are prose.
// Brackets never belong to a value, so a marker is never re-redacted.
var generic = lazyre.New(`^(?i:api[_-]?key|secret|token|password|passwd)(?i:[_-]?key)?["']?[ \t]*(?::=|=>|[=:])[ \t]*` +
	`(?:"([^"\s\[\]]{8,})|'([^'\s\[\]]{8,})|([^\s"'\[\]{}()<>,;&=][^\s"'\[\]{}()<>,;&]{7,}))`)

var (
	// A dotted identifier is code or a host name (cfg.Token, os.Environ, api.example.com).
	dottedIdent = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$`)
	// An identifier followed by "(" is a call: token = newToken().
	callee = lazyre.New(`^[A-Za-z_][A-Za-z0-9_.]*$`)
	// A reference to where the secret lives is not the secret: $TOKEN, %PASSWORD%.
	varRef = lazyre.New(`^(?:\$[A-Za-z_][A-Za-z0-9_]*|%[A-Za-z_][A-Za-z0-9_]*%)$`)
	// So is a file path. A lone leading "/" is not enough, since base64 may start with it.
	filePath = lazyre.New(`^(?:\./|\.\./|~/|/[A-Za-z0-9._~-]*/)[A-Za-z0-9._~/-]*$`)
)

// matchGeneric takes the value of a generic assignment, unless it looks like code, a
// variable or a path rather than a secret.
func matchGeneric(sc *scan, at int) (int, int, int) {
	b := sc.b
	value, quote, ok := genericWindow(b, at)
	if !ok {
		return -1, 0, 0
	}
	// The regexp sees a short window, so that a failing candidate costs little even in a
	// long run of "token=token=..."; a value longer than the window is continued by hand.
	lim := min(len(b), value+genericWindowLen)
	m := generic().FindSubmatchIndex(b[at:lim])
	if m == nil {
		return -1, 0, 0
	}
	s, e := at+m[len(m)-2], at+m[len(m)-1]
	quoted := m[6] < 0
	if quoted {
		if m[2] >= 0 {
			s, e = at+m[2], at+m[3]
		} else {
			s, e = at+m[4], at+m[5]
		}
	}
	if e == lim {
		stop := genericStop
		if quoted {
			stop = quotedStop[quote]
		}
		for e < len(b) && !stop[b[e]] {
			e++
		}
	}
	// None of the values rejected below can hold another "name=value", so the scan may
	// skip past them; this keeps "token=a.b.token=a.b..." linear.
	resume := max(at+m[1], e)
	v := b[s:e]
	if varRef().Match(v) || filePath().Match(v) {
		return -1, 0, resume
	}
	if !quoted && (dottedIdent().Match(v) || e < len(b) && b[e] == '(' && callee().Match(v)) {
		return -1, 0, resume
	}
	return s, e, resume
}

// genericWindow finds, without the regexp, where the value of a "name = value" at b[at:]
// starts and which quote opens it (0: none), or ok=false when no "=" or ":" follows the
// name. Most anchors in ordinary text ("TestToken", "token.go") fail here for the price of
// a few byte tests.
func genericWindow(b []byte, at int) (value int, quote byte, ok bool) {
	i, lim := at, min(len(b), at+32)
	for i < lim && nameChar[b[i]] {
		i++
	}
	if i < lim && (b[i] == '"' || b[i] == '\'') {
		i++
	}
	for i < lim && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	if i == lim || (b[i] != '=' && b[i] != ':') {
		return 0, 0, false
	}
	i++
	if i < len(b) && (b[i] == '=' || b[i] == '>') {
		i++
	}
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	if i < len(b) && (b[i] == '"' || b[i] == '\'') {
		return i + 1, b[i], true
	}
	return i, 0, true
}

// genericWindowLen bounds the value the generic regexp sees.
const genericWindowLen = 256

var (
	nameChar    = charset("A-Za-z0-9_-")
	genericStop = charset(" \t\r\n\v\f\"'[]{}()<>,;&")
	quotedStop  = map[byte]byteSet{
		'"':  charset(" \t\r\n\v\f[]\""),
		'\'': charset(" \t\r\n\v\f[]'"),
	}
)

// maxRules sizes findShapes' per-rule state without an allocation.
const maxRules = 16

// anchorRef is one anchor of one rule.
type anchorRef struct {
	rule int
	lit  string
	fold bool
}

// The anchor index: bigram[b[i]|b[i+1]<<8] is 0 when no anchor starts with those two bytes,
// else 1 + the index in anchorLists of the anchors that do. Two bytes rather than one keep
// common letters (every 's' of ordinary text) from costing a comparison. Built on first use:
// every airlock process (a sandbox's init too) would pay for it at start.
var anchorIndex = sync.OnceValues(func() (*[1 << 16]uint8, [][]anchorRef) {
	var idx [1 << 16]uint8
	var lists [][]anchorRef
	if len(rules) > maxRules {
		panic("redact: raise maxRules")
	}
	for ri, r := range rules {
		for _, a := range r.anchors {
			ref := anchorRef{rule: ri, lit: a, fold: r.fold}
			firsts, seconds := []byte{a[0]}, []byte{a[1]}
			if r.fold {
				firsts, seconds = caseVariants(a[0]), caseVariants(a[1])
			}
			for _, c0 := range firsts {
				for _, c1 := range seconds {
					k := uint16(c0) | uint16(c1)<<8
					if idx[k] == 0 {
						lists = append(lists, nil)
						if len(lists) > 255 {
							panic("redact: too many anchor bigrams")
						}
						idx[k] = uint8(len(lists))
					}
					lists[idx[k]-1] = append(lists[idx[k]-1], ref)
				}
			}
		}
	}
	return &idx, lists
})

func caseVariants(c byte) []byte {
	l, u := lowerASCII(c), upperASCII(c)
	if l == u {
		return []byte{c}
	}
	return []byte{l, u}
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func upperASCII(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}

func hasAnchor(b []byte, a anchorRef) bool {
	if len(b) < len(a.lit) {
		return false
	}
	if !a.fold {
		return string(b[:len(a.lit)]) == a.lit
	}
	for i := 0; i < len(a.lit); i++ {
		if lowerASCII(b[i]) != a.lit[i] {
			return false
		}
	}
	return true
}

// findShapes calls add for every shape match in b, in one pass over b.
func findShapes(b []byte, add func(span)) {
	var resume [maxRules]int // per rule: no anchor before this may start a match
	sc := &scan{b: b, endFrom: len(b) + 1}
	bigram, anchorLists := anchorIndex()
	for i := 0; i+1 < len(b); i++ {
		k := bigram[uint16(b[i])|uint16(b[i+1])<<8]
		if k == 0 {
			continue
		}
		for _, a := range anchorLists[k-1] {
			if i < resume[a.rule] || !hasAnchor(b[i:], a) {
				continue
			}
			s, e, next := rules[a.rule].match(sc, i)
			if s >= 0 {
				add(span{start: s, end: e, prio: a.rule + 1})
				next = max(next, e)
			}
			resume[a.rule] = next
		}
	}
}
