package termsafe

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// hostile holds every kind of character an agent could use on a terminal
// or a page: cursor movement, screen clearing, an OSC title, C1 CSI, DEL,
// bidi overrides and isolates, zero-width and filler characters, line
// separators, a tag character (above U+FFFF) and an invalid byte.
var hostile = []string{
	"\x1b[2J\x1b[H", "\x1b]0;title\x07", "\r", "\b", "\x00", "\x7f", "\u009b31m", "\u0085",
	"\u202e", "\u202a", "\u2066", "\u2069", "\u200b", "\u200f", "\u061c", "\ufeff",
	"\u2028", "\u2029", "\u3164", "\ufe0f", "\U000e0041", "\xff", "\xe2\x80",
}

func rawUnsafe(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || !Safe(r) && r != '\n' && r != '\t' {
			return true
		}
		i += n
	}
	return false
}

func TestStringEscapesEveryTerminalControl(t *testing.T) {
	for _, h := range hostile {
		s := "ls -la" + h + "rm -rf /"
		got := String(s)
		if rawUnsafe(got) || strings.ContainsAny(got, "\n\t") {
			t.Errorf("String(%q) = %q: still holds a raw control", s, got)
		}
		if !strings.HasPrefix(got, "ls -la") || !strings.HasSuffix(got, "rm -rf /") || got == "ls -larm -rf /" {
			t.Errorf("String(%q) = %q: the escape must be visible and the rest kept", s, got)
		}
	}
	if got := String("a\tb\nc"); got != `a\tb\nc` {
		t.Errorf("tab and newline in a field: %q", got)
	}
	if got := String("\x1b\u202e"); got != `\x1b\u202e` {
		t.Errorf("the escapes: %q", got)
	}
	if s := "plain ascii, ünïcödé → ok"; String(s) != s {
		t.Errorf("clean text changed: %q", String(s))
	}
}

func TestTextKeepsLinesAndTabs(t *testing.T) {
	if got := Text("a\tb\nc\x1b[1A\u202e"); got != "a\tb\nc\\x1b[1A\\u202e" {
		t.Errorf("Text: %q", got)
	}
}

// A JSON document passed through the writer stays valid and decodes to
// the same values, yet holds no raw control character.
func TestJSONSafeKeepsJSONMeaning(t *testing.T) {
	doc := map[string]any{"cmd": strings.Join(hostile, "|"), "n": 1}
	b, _ := json.MarshalIndent(doc, "", "  ")
	out := JSONSafe(b)
	if rawUnsafe(string(out)) {
		t.Fatalf("raw control left: %q", out)
	}
	var back, want map[string]any
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatalf("not JSON any more: %v: %s", err, out)
	}
	_ = json.Unmarshal(b, &want)
	if back["cmd"] != want["cmd"] {
		t.Errorf("JSON meaning changed: %q, want %q", back["cmd"], want["cmd"])
	}
}

func TestWriter(t *testing.T) {
	var buf bytes.Buffer
	n, err := NewWriter(&buf).Write([]byte("held\t\x1b[1Aread\n"))
	if err != nil || n != len("held\t\x1b[1Aread\n") {
		t.Fatalf("write: %d %v", n, err)
	}
	if buf.String() != "held\t\\x1b[1Aread\n" {
		t.Errorf("writer: %q", buf.String())
	}
}
