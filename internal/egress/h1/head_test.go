package h1

import (
	"strings"
	"testing"
)

// FuzzParseHead: the request head parser never panics, and what it
// accepts has no byte a lenient parser could read as a line break.
func FuzzParseHead(f *testing.F) {
	for _, s := range []string{
		"CONNECT a.example.test:443 HTTP/1.1\r\nHost: a.example.test:443\r\n\r\n",
		"GET http://a.example.test/x?y HTTP/1.1\r\nHost: a.example.test\r\nContent-Length: 3\r\n\r\n",
		"GET http://a.example.test/ HTTP/1.1\r\nHost: a.example.test\nX: y\r\n\r\n",
		"POST http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		h, err := ParseHead([]byte(in))
		if err != nil {
			return
		}
		for _, fl := range h.Fields {
			if strings.ContainsAny(fl.Name+fl.Value, "\r\n\x00") {
				t.Fatalf("field %q: %q", fl.Name, fl.Value)
			}
		}
		if strings.ContainsAny(h.Target, " \r\n\x00") {
			t.Fatalf("target %q", h.Target)
		}
		if rt, err := ParseProxyTarget(h); err == nil && rt.Target.Host == "" {
			t.Fatalf("empty host from %q", in)
		}
	})
}
