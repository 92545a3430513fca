package redact

import "bytes"

// Dumps: `od`, `xxd` and `hexdump` print bytes as numbers or escaped
// characters, 16 (or so) to a line, with an offset in front and sometimes
// the text behind. A known value in a dump is split across lines and
// fields, so it is looked for in what the dump decodes to: each line is
// decoded in each of the formats below, consecutive lines that decode in
// the same format are joined, and a value found there redacts the lines
// it came from, whole.

// dumpFormat is one way of reading a dump line.
type dumpFormat int

const (
	hexBytes   dumpFormat = iota // od -An -tx1, hexdump -C, xxd (groups in byte order), xxd -p
	hexWordsLE                   // od -x, hexdump: 16-bit little-endian words in hex
	octWordsLE                   // od: 16-bit little-endian words in octal
	odChars                      // od -c: a 4-column field per byte
	numDumpFormats
)

// dumpSpan is the most bytes a dump of n bytes takes: 16 bytes a line of
// at most ~80 characters, and a line more where the value starts mid-line.
func dumpSpan(n int) int { return (n/16 + 2) * 82 }

// run is consecutive lines decoded in one format.
type run struct {
	data   []byte
	lineOf []int32 // line index of each data byte
}

// findDumps calls add for each known value found in a dump in b, with the
// span of the whole lines it is on.
func (k *known) findDumps(b []byte, add func(start, end int)) {
	var starts, ends []int // line i is b[starts[i]:ends[i]]
	var runs [numDumpFormats]run
	var buf []byte
	flush := func(f dumpFormat) {
		r := &runs[f]
		if len(r.data) >= minSecret {
			k.scan(r.data, false, func(s, e int) {
				add(starts[r.lineOf[s]], ends[r.lineOf[e-1]])
			})
		}
		r.data, r.lineOf = r.data[:0], r.lineOf[:0]
	}
	for start := 0; start <= len(b); {
		end := len(b)
		if i := bytes.IndexByte(b[start:], '\n'); i >= 0 {
			end = start + i
		}
		line := b[start:end]
		if len(line) > 0 && line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
		numeric, chars := dumpCandidate(line)
		if !numeric && !chars {
			// the common case: ordinary text ends every run
			for f := range numDumpFormats {
				if len(runs[f].data) > 0 {
					flush(f)
				}
			}
			start = end + 1
			continue
		}
		li := int32(len(starts))
		starts, ends = append(starts, start), append(ends, start+len(line))
		for f := range numDumpFormats {
			if (f == odChars && !chars) || (f != odChars && !numeric) {
				if len(runs[f].data) > 0 {
					flush(f)
				}
				continue
			}
			var ok, neutral bool
			buf, ok, neutral = decodeDumpLine(f, line, buf[:0])
			switch {
			case neutral:
			case !ok:
				flush(f)
			default:
				r := &runs[f]
				r.data = append(r.data, buf...)
				for range buf {
					r.lineOf = append(r.lineOf, li)
				}
			}
		}
		start = end + 1
	}
	for f := range numDumpFormats {
		flush(f)
	}
}

// dumpCandidate is a quick look at a line: numeric, it may be a line of
// numbers (its first field is hex digits, or an xxd offset); chars, of
// od -c (an offset, or fields of four columns).
func dumpCandidate(line []byte) (numeric, chars bool) {
	i := 0
	for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	j := i
	for j < len(line) && isHex(line[j]) {
		j++
	}
	numeric = j > i && (j == len(line) || line[j] == ' ' || line[j] == '\t' || line[j] == ':')
	chars = len(line) >= 4 && (line[0] == ' ' && len(line)%4 == 0 || i == 0 && j >= 6)
	return numeric, chars
}

// decodeDumpLine decodes line in format f into out. neutral: the line is
// an offset alone (od's last line), which neither ends a run nor adds to
// it.
func decodeDumpLine(f dumpFormat, line []byte, out []byte) (_ []byte, ok, neutral bool) {
	if len(line) == 0 || !(isHex(line[0]) || line[0] == ' ' || line[0] == '\t') {
		return out, false, false
	}
	if f == odChars {
		out, ok = decodeODChars(line, out)
		return out, ok, false
	}
	i, first := 0, true
	width, lineStart := 0, len(out)
	for {
		gap := i
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if i == len(line) {
			break
		}
		if f == hexBytes && i-gap >= 2 && len(out) > lineStart && len(out)-lineStart != 8 {
			// two spaces end the numbers (xxd's text column follows);
			// hexdump -C has them after 8 bytes too
			break
		}
		j := i
		for j < len(line) && line[j] != ' ' && line[j] != '\t' {
			j++
		}
		tok := line[i:j]
		last := j == len(line)
		if first {
			first = false
			if isOffset(tok, last, nextLen(line[j:])) {
				if last {
					return out, false, true
				}
				i = j
				continue
			}
		}
		if !isHexToken(tok) {
			if f == hexBytes && len(out) > 0 {
				break // the text column of xxd or hexdump -C
			}
			return out, false, false
		}
		switch f {
		case hexBytes:
			if width == 0 {
				width = len(tok)
			}
			if len(tok)%2 != 0 || len(tok) > width {
				if len(out) > 0 {
					return out, true, false
				}
				return out, false, false
			}
			if len(tok) < width && !last {
				// a shorter group ends the line's data: what follows is text
				for p := 0; p < len(tok); p += 2 {
					out = append(out, hexVal(tok[p])<<4|hexVal(tok[p+1]))
				}
				return out, true, false
			}
			for p := 0; p < len(tok); p += 2 {
				out = append(out, hexVal(tok[p])<<4|hexVal(tok[p+1]))
			}
		case hexWordsLE:
			if len(tok) != 4 {
				return out, false, false
			}
			out = append(out, hexVal(tok[2])<<4|hexVal(tok[3]), hexVal(tok[0])<<4|hexVal(tok[1]))
		case octWordsLE:
			if len(tok) != 6 || !isOctal(tok) {
				return out, false, false
			}
			w := 0
			for _, c := range tok {
				w = w<<3 | int(c-'0')
			}
			if w > 0xffff {
				return out, false, false
			}
			out = append(out, byte(w), byte(w>>8))
		}
		i = j
	}
	return out, len(out) > 0, false
}

// isOffset: a dump line's first field is its offset when it ends in ':'
// (xxd), or is 7 or more digits followed by data (od, hexdump), or is an
// odd number of them alone (od's last line; xxd -p lines are even).
// A 6-digit one (od -A x) counts when the next field is not as long.
func isOffset(tok []byte, alone bool, next int) bool {
	if len(tok) > 1 && tok[len(tok)-1] == ':' && isHexToken(tok[:len(tok)-1]) {
		return true
	}
	if len(tok) < 6 || !isHexToken(tok) || (len(tok) == 6 && (alone || next == 6)) {
		return len(tok) == 6 && alone && isHexToken(tok) // od -A x's last line
	}
	return !alone || len(tok)%2 != 0
}

// nextLen is the length of the first field in b.
func nextLen(b []byte) int {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	j := i
	for j < len(b) && b[j] != ' ' && b[j] != '\t' {
		j++
	}
	return j - i
}

// decodeODChars reads an od -c line: an optional offset, then a field of
// four columns per byte, right-aligned: the character, a backslash escape,
// or three octal digits.
func decodeODChars(line []byte, out []byte) ([]byte, bool) {
	i := 0 // the offset: octal, or decimal or hex with -A d, -A x
	for i < len(line) && isHex(line[i]) {
		i++
	}
	if i > 0 && i < 6 {
		return out, false
	}
	rest := line[i:]
	if len(rest) == 0 || len(rest)%4 != 0 {
		return out, false
	}
	for p := 0; p < len(rest); p += 4 {
		f := rest[p : p+4]
		q := 0
		for q < 4 && f[q] == ' ' {
			q++
		}
		switch v := f[q:]; {
		case len(v) == 0:
			out = append(out, ' ')
		case len(v) == 1:
			out = append(out, v[0])
		case len(v) == 2 && v[0] == '\\':
			c, ok := odEscapes[v[1]]
			if !ok {
				return out, false
			}
			out = append(out, c)
		case len(v) == 3 && isOctal(v):
			out = append(out, (v[0]-'0')<<6|(v[1]-'0')<<3|(v[2]-'0'))
		default:
			return out, false
		}
	}
	return out, true
}

var odEscapes = map[byte]byte{'0': 0, 'a': 7, 'b': 8, 'f': 12, 'n': '\n', 'r': '\r', 't': '\t', 'v': 11, '\\': '\\'}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func isHexToken(b []byte) bool {
	for _, c := range b {
		if !isHex(c) {
			return false
		}
	}
	return len(b) > 0
}

func isOctal(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '7' {
			return false
		}
	}
	return len(b) > 0
}

func hexVal(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}
