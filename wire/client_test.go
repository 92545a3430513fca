package wire

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCleanClient(t *testing.T) {
	for in, want := range map[string]string{
		"claude-code/2.1":              "claude-code/2.1",
		" a\r\nb\tc\x00\x7f/1 ":        "abc/1",
		"x\u202eexe.txt\u200b\u2066/1": "xexe.txt/1",
		"\xff\xfebad/1":                "bad/1",
		"\x1b[31m":                     "[31m",
		"\n\n":                         "",
	} {
		if got := CleanClient(in); got != want {
			t.Errorf("CleanClient(%q) = %q, want %q", in, got, want)
		}
	}
	long := CleanClient(strings.Repeat("é", 1000))
	if len(long) != MaxClient || !utf8.ValidString(long) {
		t.Errorf("long name: %d bytes, valid %v", len(long), utf8.ValidString(long))
	}
}
