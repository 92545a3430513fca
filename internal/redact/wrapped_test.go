package redact

import (
	"encoding/base64"
	"strings"
	"testing"
)

// A known value's base64, wrapped into lines as base64(1), MIME and PEM
// write it, is found across the line breaks.
func TestKnownBase64Wrapped(t *testing.T) {
	secret := "wrapped-secret-" + strings.Repeat("0123456789", 6) // 75 bytes: its base64 spans lines
	r := New(secret)
	enc := base64.StdEncoding.EncodeToString([]byte("prefix:" + secret + ":suffix"))
	for _, width := range []int{76, 64, 20} {
		for _, nl := range []string{"\n", "\r\n"} {
			var b strings.Builder
			b.WriteString("begin\n")
			for i := 0; i < len(enc); i += width {
				b.WriteString(enc[i:min(i+width, len(enc))])
				b.WriteString(nl)
			}
			b.WriteString("end\n")
			out, changed := r.Redact([]byte(b.String()))
			if !changed || !strings.Contains(string(out), "[REDACTED:known-secret]") {
				t.Errorf("width %d, %q line ends: not redacted:\n%s", width, nl, out)
			}
			// what is left decodes to no part of the secret longer than a few bytes
			left := strings.NewReplacer("\r", "", "\n", "").Replace(string(out))
			if strings.Contains(left, enc[12:40]) {
				t.Errorf("width %d: the encoded secret's middle is still there:\n%s", width, out)
			}
			if !strings.HasPrefix(string(out), "begin\n") || !strings.HasSuffix(string(out), "end\n") {
				t.Errorf("width %d: the text around it changed:\n%s", width, out)
			}
		}
	}
	// Lines that merely look like base64 are left alone.
	plain := "alpha\nbeta\ngamma\n"
	if out, changed := r.Redact([]byte(plain)); changed || string(out) != plain {
		t.Errorf("plain lines changed: %q", out)
	}
}
