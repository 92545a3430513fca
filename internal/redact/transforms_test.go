package redact

import (
	"encoding/base32"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"
)

const transformSecret = "kept-secret-Value-0042xyz"

func utf16Of(s string, big bool) string {
	var b []byte
	for _, u := range utf16.Encode([]rune(s)) {
		if big {
			b = append(b, byte(u>>8), byte(u))
		} else {
			b = append(b, byte(u), byte(u>>8))
		}
	}
	return string(b)
}

func reverse(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}

// Threat model, Secrets: a known value written in an everyday transform
// (reversed, upper-cased, spaced out, base32 at any offset, UTF-16, hex
// wrapped as `xxd -p` writes it) is redacted.
func TestKnownTransforms(t *testing.T) {
	r := New(transformSecret)
	wrappedHex := func(s string) string {
		h := hex.EncodeToString([]byte(s))
		var b strings.Builder
		for len(h) > 60 {
			b.WriteString(h[:60] + "\n")
			h = h[60:]
		}
		return b.String() + h + "\n"
	}
	for _, tc := range []struct{ name, text, form string }{
		{"reversed", "x " + reverse(transformSecret) + " y", reverse(transformSecret)},
		{"upper-cased", "shout: " + strings.ToUpper(transformSecret), strings.ToUpper(transformSecret)},
		{"spaced", "t: " + strings.Join(strings.Split(transformSecret, ""), " ") + "\n", strings.Join(strings.Split(transformSecret, ""), " ")},
		{"base32", base32.StdEncoding.EncodeToString([]byte(transformSecret)), base32.StdEncoding.EncodeToString([]byte(transformSecret))[:32]},
		{"base32 at offset 3", base32.StdEncoding.EncodeToString([]byte("ab:" + transformSecret)), base32.StdEncoding.EncodeToString([]byte("ab:" + transformSecret))[8:32]},
		{"UTF-16LE", "\xff\xfe" + utf16Of("key="+transformSecret+"\n", false), utf16Of(transformSecret, false)},
		{"UTF-16BE", "\xfe\xff" + utf16Of("key="+transformSecret+"\n", true), utf16Of(transformSecret, true)[1:]},
		{"xxd -p", wrappedHex("some leading text: " + transformSecret + " and more"), hex.EncodeToString([]byte(transformSecret))[10:40]},
		{"xxd -p -u", strings.ToUpper(wrappedHex("some leading text: " + transformSecret + " and more")), strings.ToUpper(hex.EncodeToString([]byte(transformSecret)))[10:40]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, changed := r.Redact([]byte(tc.text))
			flat := strings.ReplaceAll(string(out), "\n", "")
			if !changed || strings.Contains(flat, tc.form) {
				t.Errorf("not redacted: %q", out)
			}
			if again, changed := r.Redact(out); changed || string(again) != string(out) {
				t.Errorf("not idempotent: %q then %q", out, again)
			}
		})
	}
}

// Threat model, Secrets: a known value in a dump made by od, xxd or
// hexdump (the files in testdata/dumps, made by the real tools from
// "header line\ntoken=kept-secret-Value-0042xyz\nfooter\n") is redacted:
// the lines that hold it, whole; the others stay.
func TestKnownInDumps(t *testing.T) {
	r := New(transformSecret)
	files, _ := filepath.Glob("testdata/dumps/*.txt")
	if len(files) < 10 {
		t.Fatalf("dumps: %v", files)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			in, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			out, changed := r.Redact(in)
			if !changed {
				t.Fatalf("not redacted:\n%s", in)
			}
			lines := strings.SplitAfter(string(in), "\n")
			if strings.Contains(f, "-p.txt") {
				// xxd -p: the value's hex, across the line break
				if strings.Contains(strings.ToLower(strings.ReplaceAll(string(out), "\n", "")), hex.EncodeToString([]byte("secret-Value"))) {
					t.Errorf("the value's hex is left:\n%s", out)
				}
				return
			}
			want := lines[0] + "[REDACTED:known-secret]\n" + strings.Join(lines[3:], "")
			if string(out) != want {
				t.Errorf("got\n%s\nwant\n%s", out, want)
			}
		})
	}
}

// Dump-like lines that decode to no known value are left alone.
func TestDumpsLeftAlone(t *testing.T) {
	r := New(transformSecret)
	for _, in := range []string{
		"0000000 6568 6461 7265 6c20 6e69 0a65 6f74 656b\n0000020\n",
		"cafe babe dead beef\n00000000: 6865 6164  cafe\n",
		"   a   b   c   d\n 61 62 63 64\n",
	} {
		if out, changed := r.Redact([]byte(in)); changed {
			t.Errorf("%q changed to %q", in, out)
		}
	}
}
