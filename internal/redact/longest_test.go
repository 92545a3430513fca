package redact

import (
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"
)

// LongestMatch bounds every finding of a known value: a writer that holds
// back that much of a stream's tail never stores part of a value still
// arriving (a 40 KiB secret's hex form is longer than 64 KiB).
func TestLongestMatchCoversEveryForm(t *testing.T) {
	if n := New().LongestMatch(); n != 0 {
		t.Errorf("no known values: %d, want 0", n)
	}
	var nilR *Redactor
	if n := nilR.LongestMatch(); n != 0 {
		t.Errorf("nil redactor: %d, want 0", n)
	}
	value := strings.Repeat("s3cr/t ", 40<<10/7)
	r := New("short-secret", value)
	longest := r.LongestMatch()
	if longest < 2*len(value) {
		t.Errorf("LongestMatch %d is under the hex form's %d bytes", longest, 2*len(value))
	}
	var wrapped strings.Builder
	b64 := base64.StdEncoding.EncodeToString([]byte(value))
	for i := 0; i < len(b64); i += 76 {
		wrapped.WriteString(b64[i:min(i+76, len(b64))] + "\r\n")
	}
	for name, form := range map[string]string{
		"plain": value, "hex": hex.EncodeToString([]byte(value)), "query-escaped": url.QueryEscape(value),
		"path-escaped": url.PathEscape(value), "base64": b64, "wrapped base64": wrapped.String(),
	} {
		in := []byte("before\n" + form + "\nafter")
		fs := r.Find(in)
		if len(fs) == 0 {
			t.Errorf("%s: not found", name)
			continue
		}
		for _, f := range fs {
			if f.End-f.Start > longest {
				t.Errorf("%s: a finding of %d bytes, over LongestMatch %d", name, f.End-f.Start, longest)
			}
		}
	}
}
