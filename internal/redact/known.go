package redact

import (
	"bytes"
	"encoding/base32"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
)

// minSecret is the shortest value Add accepts. Every form of a value is at least this long,
// which the scan in known.find relies on.
const minSecret = 6

// known matches a fixed set of secret values in all their forms. It is immutable once built.
type known struct {
	values  []string
	needles []needle
	// shift and byKey drive a Wu-Manber scan. A window is the minSecret bytes where a
	// needle might start; shift[g] says how far the window may move when the two bytes g
	// end it, given where g occurs in the needles' first minSecret bytes (skip) and 0 when
	// g ends one of them. Ordinary text seldom holds the needles' byte pairs, so the scan
	// moves about five bytes a step; byKey then holds the needles that start with a window.
	shift *[1 << 16]uint8
	byKey map[uint64][]int32
	// hasWrap: some needle is a base64 or hex form (see findWrapped).
	hasWrap bool
	// longest is the most bytes one finding of a needle can cover.
	longest int
}

// needle is one form of one value.
type needle struct {
	text []byte
	// For base64 forms: also take the partial character on either side (it carries some of
	// the value's bits) and up to pad '=' after it.
	b64 bool
	// wrap: a form tools wrap into lines (base64, hex), looked for across line breaks.
	wrap              bool
	extLeft, extRight bool
	pad               int
}

// span is the most bytes a finding of n can cover: its text, the loose
// characters on either side and the padding of a base64 form, and that
// wrapped into lines (findWrapped): at worst "\r\n" after each character.
func (n *needle) span() int {
	if !n.wrap {
		return len(n.text)
	}
	return 3 * (len(n.text) + 2 + n.pad)
}

const mask48 = 1<<(8*minSecret) - 1

// skip is the largest safe shift: a byte pair found in no needle rules out every window
// that would hold it.
const skip = minSecret - 1

func newKnown(values []string) *known {
	k := &known{values: values, byKey: map[uint64][]int32{}, shift: new([1 << 16]uint8)}
	for i := range k.shift {
		k.shift[i] = skip
	}
	seen := map[string]bool{}
	for _, v := range values {
		for _, n := range forms(v) {
			if seen[string(n.text)] {
				continue
			}
			seen[string(n.text)] = true
			for j := range minSecret - 1 {
				g := uint16(n.text[j]) | uint16(n.text[j+1])<<8
				k.shift[g] = min(k.shift[g], uint8(minSecret-2-j))
			}
			key := load48(n.text, 0)
			k.byKey[key] = append(k.byKey[key], int32(len(k.needles)))
			k.needles = append(k.needles, n)
			k.hasWrap = k.hasWrap || n.wrap
			// (2*len+1: the form spaced out or as UTF-16, see findInterleaved)
			k.longest = max(k.longest, n.span(), 2*len(n.text)+1)
		}
		k.longest = max(k.longest, dumpSpan(len(v)))
	}
	return k
}

// forms returns the forms in which v may appear: as is, JSON-escaped, URL-escaped, lower-
// and upper-cased, reversed, hex (either case), base32 and base64. (Spaced out and UTF-16
// are found by findInterleaved, dumps by findDumps.)
//
// Base64 needs care, because a value's encoding depends on where it starts in the encoded
// stream: "user:SECRET" (basic auth) encodes SECRET differently from SECRET alone. Base64
// turns each 3 input bytes into 4 characters, so a value starts at one of three alignments
// (offset 0, 1 or 2 mod 3). For each alignment we encode the value behind that many filler
// bytes and keep only the characters whose 6 bits all come from the value: the stable
// middle, which is the same whatever surrounds the value. The partial characters at either
// end mix in neighbouring bits, so they are matched loosely (any base64 character) and
// redacted with the middle, along with any '=' padding. Padded and raw encodings share the
// middle, so both are caught; the standard and URL-safe alphabets each get their own needle.
// A value of minSecret bytes still has a middle of at least 7 characters (42 bits), so
// chance matches are negligible.
func forms(v string) []needle {
	ns := []needle{{text: []byte(v)}}
	plain := func(s string) {
		if s != v {
			ns = append(ns, needle{text: []byte(s)})
		}
	}
	if j, err := json.Marshal(v); err == nil {
		plain(string(j[1 : len(j)-1]))
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) == nil {
		j := bytes.TrimSpace(buf.Bytes())
		plain(string(j[1 : len(j)-1]))
	}
	for _, e := range []string{url.QueryEscape(v), url.PathEscape(v)} {
		plain(e)
		plain(lowerPercent(e)) // other encoders emit %2f rather than %2F
	}
	// JSON as PHP and others write it ("\/"); lower-cased, as a host name
	// is (a value sent out as a DNS label comes back lower-case).
	plain(strings.ReplaceAll(v, "/", `\/`))
	plain(strings.ToLower(v))
	plain(strings.ToUpper(v))
	plain(string(reversed([]byte(v))))
	for _, h := range []string{hex.EncodeToString([]byte(v)), strings.ToUpper(hex.EncodeToString([]byte(v)))} {
		if h != v {
			ns = append(ns, needle{text: []byte(h), wrap: true})
		}
	}
	// Base32 groups 5 bytes into 8 characters: as for base64 below, keep the characters
	// that depend on the value alone, at each of the five alignments.
	for align := range 5 {
		in := make([]byte, align+len(v))
		copy(in[align:], v)
		lo, hi := (8*align+4)/5, 8*(align+len(v))/5
		if hi-lo >= minSecret {
			plain(base32.StdEncoding.EncodeToString(in)[lo:hi])
		}
	}

	n := len(v)
	for align := range 3 {
		in := make([]byte, align+n)
		copy(in[align:], v)
		lo := (8*align + 5) / 6 // first character with no filler bits
		hi := 8 * (align + n) / 6
		pad := 0
		if r := (align + n) % 3; r != 0 {
			pad = 3 - r
		}
		for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
			mid := enc.EncodeToString(in)[lo:hi]
			ns = append(ns, needle{
				text:     []byte(mid),
				b64:      true,
				wrap:     true,
				extLeft:  8*align%6 != 0,
				extRight: 8*(align+n)%6 != 0,
				pad:      pad,
			})
		}
	}
	return ns
}

func reversed(b []byte) []byte {
	r := bytes.Clone(b)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return r
}

func lowerPercent(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1] = lowerASCII(b[i+1])
			b[i+2] = lowerASCII(b[i+2])
		}
	}
	return string(b)
}

// load48 reads minSecret bytes at b[i:] as an integer; the caller ensures they exist.
func load48(b []byte, i int) uint64 {
	if i+8 <= len(b) {
		return binary.LittleEndian.Uint64(b[i:]) & mask48
	}
	var key uint64
	for j := minSecret - 1; j >= 0; j-- {
		key = key<<8 | uint64(b[i+j])
	}
	return key
}

// findWrapped finds the base64 and hex forms of known values in text that
// is wrapped into lines (base64(1), MIME and PEM wrap at 64 or 76
// columns, `xxd -p` at 60): in every run of two or more lines made of nothing but base64
// characters, the line breaks are taken out, the run is searched, and a
// hit that spans a line break is reported in b's offsets (line breaks
// included).
func (k *known) findWrapped(b []byte, add func(start, end int)) {
	if !k.hasWrap || bytes.IndexByte(b, '\n') < 0 {
		return
	}
	var joined []byte
	var pos []int // pos[j]: offset in b of joined[j]
	flush := func(lines int) {
		if lines >= 2 {
			k.scan(joined, true, func(s, e int) {
				if pos[e-1]-pos[s] != e-1-s { // it spans a line break
					add(pos[s], pos[e-1]+1)
				}
			})
		}
		joined, pos = joined[:0], pos[:0]
	}
	lines := 0
	for start := 0; start < len(b); {
		end := bytes.IndexByte(b[start:], '\n')
		next := len(b)
		if end < 0 {
			end = len(b)
		} else {
			end += start
			next = end + 1
		}
		line := end
		if line > start && b[line-1] == '\r' {
			line--
		}
		ok := line > start
		for i := start; i < line && ok; i++ {
			ok = base64Char[b[i]] || b[i] == '='
		}
		if !ok {
			flush(lines)
			lines = 0
		} else {
			for i := start; i < line; i++ {
				joined = append(joined, b[i])
				pos = append(pos, i)
			}
			lines++
		}
		start = next
	}
	flush(lines)
}

// find calls add for every occurrence of every needle in b.
func (k *known) find(b []byte, add func(start, end int)) { k.scan(b, false, add) }

// scan is find, for base64 and hex needles only when onlyWrap is set.
func (k *known) scan(b []byte, onlyWrap bool, add func(start, end int)) {
	for i := 0; i+minSecret <= len(b); {
		if s := k.shift[uint16(b[i+minSecret-2])|uint16(b[i+minSecret-1])<<8]; s > 0 {
			i += int(s)
			continue
		}
		cands := k.byKey[load48(b, i)]
		for _, ni := range cands {
			n := &k.needles[ni]
			if onlyWrap && !n.wrap || !bytes.HasPrefix(b[i:], n.text) {
				continue
			}
			s, e := i, i+len(n.text)
			if n.b64 {
				if n.extLeft && s > 0 && base64Char[b[s-1]] {
					s--
				}
				if n.extRight && e < len(b) && base64Char[b[e]] {
					e++
				}
				for p := 0; p < n.pad && e < len(b) && b[e] == '='; p++ {
					e++
				}
			}
			add(s, e)
		}
		i++
	}
}

// base64Char holds both alphabets: a partial character next to a middle may be from either.
var base64Char = charset("A-Za-z0-9+/_-")
