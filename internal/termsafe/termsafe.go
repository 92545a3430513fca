// Package termsafe shows text that came from a request, an analysis or a
// sandbox to a human without letting it act on the human's terminal or
// page: control characters (C0, DEL, C1), invalid UTF-8, line and
// paragraph separators and invisible format characters (bidirectional
// overrides and isolates, zero-width spaces, fillers) become visible
// escapes such as \x1b or \u202e. An agent can then no longer move the
// cursor to repaint an approval prompt, reorder it with a bidi override,
// or hide text in characters that render as nothing.
//
// The escapes are one-way and for display only: a literal backslash is
// left as it is, so "\x1b" typed by the agent looks like an escaped ESC,
// which is harmless.
package termsafe

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Rune returns how the character r (decoded from size bytes starting with
// b) is shown, or "" when it is shown as it is. Tabs and newlines are kept
// only when asked for; every other character Safe refuses is escaped.
func Rune(r rune, size int, b byte, keepTab, keepNewline bool) string {
	switch {
	case r == utf8.RuneError && size == 1:
		return fmt.Sprintf(`\x%02x`, b)
	case r == '\t' && keepTab, r == '\n' && keepNewline:
		return ""
	case r == '\t':
		return `\t`
	case r == '\n':
		return `\n`
	case r == '\r':
		return `\r`
	case r < 0x20 || r == 0x7f:
		return fmt.Sprintf(`\x%02x`, r)
	case !Safe(r):
		return fmt.Sprintf(`\u%04x`, r)
	}
	return ""
}

// Safe reports whether r may reach a terminal as it is: not a control
// character (tab and newline included: callers keep them on purpose),
// not a format character (unicode.Cf: bidi controls, zero-width
// characters, tags), not a line or paragraph separator, and not one of the
// other characters that render as nothing.
func Safe(r rune) bool {
	switch {
	case r == utf8.RuneError:
		return true // shown as the replacement character; invalid bytes are caught by the callers
	case r < 0x20 || r == 0x7f, unicode.IsControl(r), unicode.Is(unicode.Cf, r), r == '\u2028', r == '\u2029', invisible(r):
		return false
	}
	return true
}

// invisible: characters outside Cf that render as nothing (or as a blank),
// so text could hide in them: Hangul fillers, the Braille blank, the
// combining grapheme joiner, variation selectors, the Khmer inherent
// vowels and the Mongolian vowel separator.
func invisible(r rune) bool {
	switch r {
	case '\u115f', '\u1160', '\u3164', '\uffa0', '\u2800', '\u034f', '\u17b4', '\u17b5', '\u180e':
		return true
	}
	return r >= 0xfe00 && r <= 0xfe0f || r >= 0xe0100 && r <= 0xe01ef
}

// String is s for one field of one line: every unsafe character escaped,
// tabs and newlines too (a newline in a write target must not start a
// line of its own that reads like the prompt's "classes:", nor a tab
// shift a table's columns).
func String(s string) string { return escape(s, false, false) }

// Text is s for a block of lines: tabs and newlines are kept, every other
// unsafe character is escaped.
func Text(s string) string { return escape(s, true, true) }

// Strings is String of each element.
func Strings(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = String(s)
	}
	return out
}

// Join is strings.Join of the escaped elements.
func Join(ss []string, sep string) string { return strings.Join(Strings(ss), sep) }

func escape(s string, keepTab, keepNewline bool) string {
	if clean(s, keepTab, keepNewline) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if e := Rune(r, n, s[i], keepTab, keepNewline); e != "" {
			b.WriteString(e)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// clean is the fast path: nothing to escape.
func clean(s string, keepTab, keepNewline bool) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if Rune(r, n, c, keepTab, keepNewline) != "" {
			return false
		}
		i += n
	}
	return true
}

// JSONSafe escapes what Text escapes, but so that a JSON document stays
// valid and means the same: every unsafe character at or above DEL (the
// only ones encoding/json leaves raw) becomes a \uXXXX escape (a
// surrogate pair above U+FFFF), which a JSON reader turns back into the
// character. Outside JSON strings the same escapes are merely visible.
// Control characters below 0x20 other than tab and newline, and invalid
// UTF-8, are shown as Rune shows them.
func JSONSafe(b []byte) []byte {
	if clean(string(b), true, true) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && n == 1, r < 0x20:
			if e := Rune(r, n, b[i], true, true); e != "" {
				out = append(out, e...)
			} else {
				out = append(out, b[i:i+n]...)
			}
		case !Safe(r):
			out = appendU(out, r)
		default:
			out = append(out, b[i:i+n]...)
		}
		i += n
	}
	return out
}

func appendU(out []byte, r rune) []byte {
	if r > 0xffff {
		hi, lo := utf16.EncodeRune(r)
		return fmt.Appendf(out, `\u%04x\u%04x`, hi, lo)
	}
	return fmt.Appendf(out, `\u%04x`, r)
}

// Writer passes what is written to it through JSONSafe: for a command's
// human (and JSON) output as a whole, so that a field a printer forgot to
// escape still cannot reach the terminal raw. It does not replace String
// on fields: it keeps newlines and tabs. Each Write is escaped on its own
// (a character split across two writes is shown as \x escapes).
type Writer struct{ W io.Writer }

// NewWriter returns a Writer to w.
func NewWriter(w io.Writer) *Writer { return &Writer{W: w} }

// Write writes p escaped; it reports len(p) when all of it was written.
func (w *Writer) Write(p []byte) (int, error) {
	if _, err := w.W.Write(JSONSafe(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}
