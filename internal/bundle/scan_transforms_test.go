package bundle

import (
	"encoding/base32"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/airlock-dev/airlock/internal/redact"
)

// Threat model, Secrets: an artifact that holds a known secret in an
// everyday transform (a hex dump, od output, reversed, upper-cased,
// spaced out, base32, UTF-16) is flagged and not copied into the bundle.
func TestScanArtifactTransformedSecret(t *testing.T) {
	const secret = "artifact-secret-Value-77q"
	r := redact.New(secret)
	find := func(b []byte) []string {
		var kinds []string
		for _, f := range r.Find(b) {
			kinds = append(kinds, f.Kind)
		}
		return kinds
	}
	text := "config dump\nkey=" + secret + "\nend\n"
	xxdP := func(s string) string {
		h := hex.EncodeToString([]byte(s))
		var b strings.Builder
		for len(h) > 60 {
			b.WriteString(h[:60] + "\n")
			h = h[60:]
		}
		return b.String() + h + "\n"
	}
	odC := func(s string) string { // od -c: 16 bytes a line, 4 columns a byte
		var b strings.Builder
		for off := 0; off < len(s); off += 16 {
			fmt.Fprintf(&b, "%07o", off)
			for _, c := range []byte(s[off:min(off+16, len(s))]) {
				if c == '\n' {
					b.WriteString("  \\n")
				} else {
					fmt.Fprintf(&b, "%4c", c)
				}
			}
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%07o\n", len(s))
		return b.String()
	}
	utf16le := func(s string) string {
		b := []byte{0xff, 0xfe}
		for _, u := range utf16.Encode([]rune(s)) {
			b = append(b, byte(u), byte(u>>8))
		}
		return string(b)
	}
	rev := []byte(secret)
	slices.Reverse(rev)
	for name, data := range map[string]string{
		"xxd -p":      xxdP(text),
		"od -c":       odC(text),
		"reversed":    "x=" + string(rev) + "\n",
		"upper-cased": strings.ToUpper(text),
		"spaced":      strings.Join(strings.Split(secret, ""), " ") + "\n",
		"base32":      base32.StdEncoding.EncodeToString([]byte(text)) + "\n",
		"UTF-16LE":    utf16le(text),
	} {
		a := ScanArtifact("out/"+strings.ReplaceAll(name, " ", "_")+".txt", []byte(data), false, int64(len(data)), find)
		if a.Included || !slices.Contains(a.Findings, redact.KindKnown) {
			t.Errorf("%s: %+v, want a known-secret finding and not included", name, a)
		}
	}
}
