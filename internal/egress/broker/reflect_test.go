package broker

import (
	"bytes"
	"compress/gzip"
	"io"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/egress/broker/brokertest"
)

const secretValue = "s3cr3t-value-f00dcafe"

// FuzzReflector: the detector never panics, and a value planted in any
// of the echo transforms (on a line of its own) inside arbitrary text is
// found.
func FuzzReflector(f *testing.F) {
	for _, s := range []string{"", "plain", `\u{41}\x4`, "&#x;&#", "%zz%4", "\\", "\x1f\x8b\x08"} {
		f.Add([]byte(s), uint8(0))
	}
	rf := newReflector([]*csecret{{ID: "gh", Value: secretValue}})
	f.Fuzz(func(t *testing.T, text []byte, pick uint8) {
		rf.find(text)
		form := brokertest.Echoes[int(pick)%len(brokertest.Echoes)]
		if strings.HasPrefix(form.Name, "gzip") {
			return // whole bodies only: see TestBrokeredSecretEchoedTransformed
		}
		mid := len(text) / 2
		// (set apart: a stray backslash or '&' just before would change
		// how the escapes that follow read)
		in := append(append(append(append([]byte{}, text[:mid]...), "\n \n"...), form.Body("Bearer "+secretValue)...), text[mid:]...)
		if _, _, ok := rf.find(in); !ok {
			t.Fatalf("%s not found in %q", form.Name, in)
		}
	})
}

// Text that happens to start like a zlib header is not taken for a
// compressed body (a long one would be refused as too large to check).
func TestCompressedSniff(t *testing.T) {
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	io.WriteString(w, "hello")
	w.Close()
	for in, want := range map[string]bool{gz.String(): true, "x^ not zlib at all": false, "x\x9c": false, "plain": false, "": false} {
		if got := compressed([]byte(in)); got != want {
			t.Errorf("compressed(%q) = %v", in, got)
		}
	}
}

// findAll finds what find finds, also across the windows it cuts a long
// text into.
func TestFindAllAcrossWindows(t *testing.T) {
	rf := newReflector([]*csecret{{ID: "gh", Value: secretValue}})
	filler := bytes.Repeat([]byte("lorem ipsum "), (3*scanWindow)/12)
	for _, form := range brokertest.Echoes {
		if strings.HasPrefix(form.Name, "gzip") {
			continue
		}
		echo := form.Body("Bearer " + secretValue)
		for _, at := range []int{0, scanWindow - len(echo)/2, scanWindow, 2*scanWindow - 1, len(filler)} {
			in := append(append(append([]byte{}, filler[:at]...), echo...), filler[at:]...)
			if _, _, ok := rf.findAll(in); !ok {
				t.Errorf("%s at %d of %d bytes: not found", form.Name, at, len(in))
			}
		}
	}
}

// BenchmarkReflectorFind measures the check of a brokered host's answer:
// 1 MiB of JSON holding '&', '\' and '%', so every decoded view is made.
func BenchmarkReflectorFind(b *testing.B) {
	rf := newReflector([]*csecret{{ID: "a", Value: secretValue}, {ID: "b", Value: "ghp_0123456789abcdefghijABCDEFGHIJ012345"}})
	in := bytes.Repeat([]byte(`{"id": 12345, "name": "repo-name", "url": "https://api.example.test/repos/x/y?per_page=100&page=2", "desc": "a \u00e9 thing"}`+"\n"), (1<<20)/130)
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if _, _, ok := rf.find(in); ok {
			b.Fatal("found")
		}
	}
}
