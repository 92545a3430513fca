package broker

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"html"
	"io"
	"slices"
	"unicode/utf8"
)

// reflector finds brokered secret values in what an upstream sends back.
// A value counts as found when one of its forms (the value, reversed, hex,
// base64 and base32 at every byte offset) appears, ignoring ASCII case, in
// one of the views of the text: as it is, HTML-entity-decoded, with
// backslash escapes decoded (\uXXXX, \xHH, \/), percent-decoded, and each
// of those with whitespace and NUL bytes dropped (spacing, wrapped lines,
// UTF-16). The forms and views are fixed, so the cost is linear in the
// text times the number of forms.
type reflector struct {
	forms []reflForm
	// plain and squeezed index the forms by their first two bytes, so a
	// view is searched in one pass whatever the number of forms.
	plain, squeezed pairIndex
	// span bounds the raw bytes one echoed form may cover: a stream is
	// checked in windows that overlap by span.
	span int
}

type reflForm struct {
	secret, name  string
	pat, squeezed []byte // lower-case; squeezed without whitespace and NUL
}

// minForm is the shortest derived form looked for: shorter ones (from a
// short value) would match ordinary text.
const minForm = 8

func newReflector(secrets []*csecret) *reflector {
	r := &reflector{}
	longest := 0
	for _, s := range secrets {
		if s.Value == "" {
			continue
		}
		for _, f := range valueForms(s.Value) {
			if f.name != "plain" && len(f.pat) < minForm {
				continue
			}
			pat := asciiLower(f.pat)
			if slices.ContainsFunc(r.forms, func(o reflForm) bool { return bytes.Equal(o.pat, pat) }) {
				continue
			}
			r.forms = append(r.forms, reflForm{secret: s.ID, name: f.name, pat: pat, squeezed: squeeze(pat)})
			longest = max(longest, len(pat))
		}
	}
	if len(r.forms) == 0 {
		return nil
	}
	for i, f := range r.forms {
		r.plain.add(f.pat, i)
		r.squeezed.add(f.squeezed, i)
	}
	// An HTML entity or a \u escape takes at most ~10 bytes per byte of
	// the form; spacing as much again.
	r.span = max(4096, 24*longest+256)
	return r
}

type namedForm struct {
	name string
	pat  []byte
}

// valueForms are v's forms. For base64 and base32 of a value inside a
// longer text, the characters that depend only on v are kept: those of v
// encoded after k unknown bytes, for every k below the group size.
func valueForms(v string) []namedForm {
	b := []byte(v)
	forms := []namedForm{{"plain", b}, {"reversed", reversed(b)}, {"hex", []byte(hex.EncodeToString(b))}}
	for k := range 3 {
		forms = append(forms,
			namedForm{"base64", middle(base64.StdEncoding, 6, k, b)},
			namedForm{"base64url", middle(base64.URLEncoding, 6, k, b)})
	}
	for k := range 5 {
		forms = append(forms, namedForm{"base32", middle(base32.StdEncoding, 5, k, b)})
	}
	return forms
}

type encoder interface{ EncodeToString([]byte) string }

// middle is the part of enc(k bytes, then v, then anything) that depends
// on v alone; bits is the bits per character.
func middle(enc encoder, bits, k int, v []byte) []byte {
	s := enc.EncodeToString(append(make([]byte, k), v...))
	start := (8*k + bits - 1) / bits
	end := 8 * (k + len(v)) / bits
	if end <= start {
		return nil
	}
	return []byte(s[start:end])
}

// asciiLower lower-cases ASCII letters only: quick, and the same for the
// text and the forms.
func asciiLower(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}

func reversed(b []byte) []byte {
	r := bytes.Clone(b)
	slices.Reverse(r)
	return r
}

func isSqueezed(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v' || c == 0
}

// squeeze drops whitespace and NUL bytes.
func squeeze(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if !isSqueezed(c) {
			out = append(out, c)
		}
	}
	return out
}

// scanWindow is the most of a long text find looks at in one piece (its
// views are copies of what it looks at).
const scanWindow = 256 << 10

// findAll is find over b in windows of scanWindow that overlap by span
// (as a streamed body is checked), so that the views' copies stay the
// size of a window whatever the size of b (an inflated body is up to
// scanInflated, three layers deep).
func (r *reflector) findAll(b []byte) (secret, form string, ok bool) {
	if r == nil || len(b) <= scanWindow+r.span {
		return r.find(b)
	}
	for start := 0; ; start += scanWindow {
		end := min(start+scanWindow+r.span, len(b))
		if s, f, ok := r.find(b[start:end]); ok {
			return s, f, true
		}
		if end == len(b) {
			return "", "", false
		}
	}
}

// find reports the secret and form of the first value found in b.
func (r *reflector) find(b []byte) (secret, form string, ok bool) {
	if r == nil || len(b) == 0 {
		return "", "", false
	}
	for _, v := range views(b) {
		if s, f, ok := r.findIn(asciiLower(v.text), v.name); ok {
			return s, f, true
		}
	}
	return "", "", false
}

func (r *reflector) findIn(low []byte, view string) (secret, form string, ok bool) {
	if i := r.plain.find(low, func(i int) []byte { return r.forms[i].pat }); i >= 0 {
		return r.forms[i].secret, viewName(r.forms[i].name, view), true
	}
	if !slices.ContainsFunc(low, isSqueezed) {
		return "", "", false
	}
	if i := r.squeezed.find(squeeze(low), func(i int) []byte { return r.forms[i].squeezed }); i >= 0 {
		return r.forms[i].secret, viewName(r.forms[i].name, view+", spaced"), true
	}
	return "", "", false
}

// pairIndex maps the first two bytes of patterns to the patterns; next
// holds their second and third, a cheap second look before the map.
type pairIndex struct {
	any, next [1 << 16]bool
	by        map[uint16][]int
}

func (x *pairIndex) add(pat []byte, i int) {
	if len(pat) < 2 {
		return // (every form is at least minForm bytes, or the whole value)
	}
	k := uint16(pat[0])<<8 | uint16(pat[1])
	if x.by == nil {
		x.by = map[uint16][]int{}
	}
	x.any[k] = true
	if len(pat) > 2 {
		x.next[uint16(pat[1])<<8|uint16(pat[2])] = true
	}
	x.by[k] = append(x.by[k], i)
}

// find returns the first pattern (by its index) found in b, or -1.
func (x *pairIndex) find(b []byte, pat func(int) []byte) int {
	for j := 0; j+1 < len(b); j++ {
		k := uint16(b[j])<<8 | uint16(b[j+1])
		if !x.any[k] || (j+2 < len(b) && !x.next[uint16(b[j+1])<<8|uint16(b[j+2])]) {
			continue
		}
		for _, i := range x.by[k] {
			if bytes.HasPrefix(b[j:], pat(i)) {
				return i
			}
		}
	}
	return -1
}

func viewName(form, view string) string {
	if view == "" {
		return form
	}
	return form + " (" + view + ")"
}

type view struct {
	name string
	text []byte
}

// views are b and its decodings; a decoding is made only when b holds its
// escape character.
func views(b []byte) []view {
	vs := []view{{"", b}}
	if bytes.IndexByte(b, '&') >= 0 {
		vs = append(vs, view{"HTML entities", []byte(html.UnescapeString(string(b)))})
	}
	if bytes.IndexByte(b, '\\') >= 0 {
		vs = append(vs, view{"backslash escapes", unbackslash(b)})
	}
	if bytes.IndexByte(b, '%') >= 0 {
		vs = append(vs, view{"percent escapes", unpercent(b)})
	}
	return vs
}

// unbackslash decodes \uXXXX, \u{X...}, \xHH and \c (any other byte c
// stands for itself); anything malformed is kept as it is.
func unbackslash(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 == len(b) {
			out = append(out, b[i])
			continue
		}
		switch c := b[i+1]; {
		case (c == 'u' || c == 'U') && i+2 < len(b) && b[i+2] == '{':
			end := bytes.IndexByte(b[i+3:min(len(b), i+12)], '}')
			if n, ok := hexNum(b[i+3 : i+3+max(end, 0)]); end > 0 && ok {
				out = utf8.AppendRune(out, rune(n))
				i += 3 + end
				continue
			}
			out = append(out, b[i])
		case (c == 'u' || c == 'U') && i+6 <= len(b):
			if n, ok := hexNum(b[i+2 : i+6]); ok {
				out = utf8.AppendRune(out, rune(n))
				i += 5
				continue
			}
			out = append(out, b[i])
		case c == 'x' && i+4 <= len(b):
			if n, ok := hexNum(b[i+2 : i+4]); ok {
				out = append(out, byte(n))
				i += 3
				continue
			}
			out = append(out, b[i])
		default:
			out = append(out, c)
			i++
		}
	}
	return out
}

// unpercent decodes %HH; anything malformed is kept as it is.
func unpercent(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] == '%' && i+3 <= len(b) {
			if n, ok := hexNum(b[i+1 : i+3]); ok {
				out = append(out, byte(n))
				i += 2
				continue
			}
		}
		out = append(out, b[i])
	}
	return out
}

func hexNum(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 8 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			n = n<<4 | int(c-'0')
		case c >= 'a' && c <= 'f':
			n = n<<4 | int(c-'a'+10)
		case c >= 'A' && c <= 'F':
			n = n<<4 | int(c-'A'+10)
		default:
			return 0, false
		}
	}
	return n, true
}

// compressed sniffs a gzip or zlib stream at the start of b, whatever the
// headers say: an upstream may compress without saying so.
func compressed(b []byte) bool {
	if len(b) < 2 {
		return false
	}
	var r io.Reader
	var err error
	switch {
	case b[0] == 0x1f && b[1] == 0x8b:
		r, err = gzip.NewReader(bytes.NewReader(b))
	case b[0]&0x0f == 8 && b[0]>>4 <= 7 && (int(b[0])<<8|int(b[1]))%31 == 0:
		// zlib's header: deflate, and check bits that 1 in 31 texts
		// starting with "x", "H", "(" ... also have
		r, err = zlib.NewReader(bytes.NewReader(b))
	default:
		return false
	}
	if err != nil {
		return false
	}
	// it is a stream only if it starts to inflate
	var one [1]byte
	n, err := r.Read(one[:])
	return n == 1 || err == io.EOF
}

var errTooLarge = errors.New("too large")

// inflate decompresses a gzip (every member) or zlib stream, up to limit
// bytes; a corrupt stream gives what came out before the damage.
func inflate(b []byte, limit int) ([]byte, error) {
	var r io.Reader
	var err error
	if b[0] == 0x1f {
		r, err = gzip.NewReader(bytes.NewReader(b))
	} else {
		r, err = zlib.NewReader(bytes.NewReader(b))
	}
	if err != nil {
		return nil, nil
	}
	out, _ := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if len(out) > limit {
		return nil, errTooLarge
	}
	return out, nil
}
