// Package brokertest holds what the broker's tests and the egress
// proxy's end-to-end tests share: the ways an upstream might echo a
// credential back. Tests only: no other package imports it.
package brokertest

import (
	"bytes"
	"compress/gzip"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf16"
)

// Echo is one way an upstream on a brokered host might quote the
// Authorization header it got: Body turns it into a response body.
type Echo struct {
	Name string
	Body func(echo string) []byte
}

// Echoes are the everyday transforms the broker must see through.
var Echoes = []Echo{
	{"base64 at offset 1", func(e string) []byte { return []byte(base64.StdEncoding.EncodeToString([]byte(e))) }},
	{"base64 at offset 2", func(e string) []byte {
		return []byte(base64.StdEncoding.EncodeToString([]byte("Xy" + e[len("Bearer "):])))
	}},
	{"base64url in JSON", func(e string) []byte {
		return []byte(`{"seen":"` + base64.RawURLEncoding.EncodeToString([]byte("Authorization: "+e)) + `"}`)
	}},
	{"reversed", func(e string) []byte { b := []byte(e); slices.Reverse(b); return b }},
	{"spaced", func(e string) []byte { return []byte(strings.Join(strings.Split(e, ""), " ")) }},
	{"upper-cased", func(e string) []byte { return []byte(strings.ToUpper(e)) }},
	{"gzip without Content-Encoding", func(e string) []byte {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		io.WriteString(w, "you sent: "+e)
		w.Close()
		return b.Bytes()
	}},
	{"HTML entities", func(e string) []byte {
		var b strings.Builder
		for i, c := range e {
			if i%2 == 0 {
				fmt.Fprintf(&b, "&#%d;", c)
			} else {
				fmt.Fprintf(&b, "&#x%X;", c)
			}
		}
		return []byte("<p>" + b.String() + "</p>")
	}},
	{"backslash-u escapes", func(e string) []byte {
		var b strings.Builder
		for _, c := range e {
			fmt.Fprintf(&b, `\u%04x`, c)
		}
		return []byte(`{"auth":"` + b.String() + `"}`)
	}},
	{"UTF-16LE", func(e string) []byte { return UTF16(e, false) }},
	{"UTF-16BE", func(e string) []byte { return UTF16(e, true) }},
	{"base32", func(e string) []byte { return []byte(base32.StdEncoding.EncodeToString([]byte(e))) }},
	{"wrapped hex", func(e string) []byte {
		h := hex.EncodeToString([]byte("header dump: " + e))
		var b strings.Builder
		for len(h) > 30 {
			b.WriteString(h[:30] + "\n")
			h = h[30:]
		}
		return []byte(b.String() + h + "\n")
	}},
}

// UTF16 is s in UTF-16, big-endian or little-endian.
func UTF16(s string, big bool) []byte {
	var b []byte
	for _, u := range utf16.Encode([]rune(s)) {
		if big {
			b = append(b, byte(u>>8), byte(u))
		} else {
			b = append(b, byte(u), byte(u>>8))
		}
	}
	return b
}
