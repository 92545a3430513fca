package egress

import (
	"bytes"
	"testing"
)

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
