package netpolicy

import (
	"strings"
	"testing"
)

func TestParseTarget(t *testing.T) {
	ok := []struct {
		in, host string
		port     int
	}{
		{"api.example.test:443", "api.example.test", 443},
		{"API.Example.Test.", "api.example.test", 80},
		{"a_b.example.test:8080", "a_b.example.test", 8080},
		{"xn--bcher-kva.example.test", "xn--bcher-kva.example.test", 80},
		{"[2001:db8::1]:443", "2001:db8::1", 443},
		{"[::ffff:10.0.0.1]", "10.0.0.1", 80},
		{"10.0.0.1:65535", "10.0.0.1", 65535},
		{"0x7f.1", "127.0.0.1", 80},
		{"017700000001", "127.0.0.1", 80},
		{"0", "0.0.0.0", 80},
		{"1.2.3.4.", "1.2.3.4", 80},
	}
	for _, c := range ok {
		tg, err := ParseTarget(c.in, 80)
		if err != nil || tg.Host != c.host || tg.Port != c.port {
			t.Errorf("ParseTarget(%q) = %+v, %v; want %s:%d", c.in, tg, err, c.host, c.port)
		}
	}
	bad := []string{
		"", ":443", "a.example.test:", "a.example.test:+1", "a.example.test:1e3", "[::1", "[::1]x", "::1",
		"[1.2.3.4]", "[fe80::1%eth0]", "user@host", "a b", "a\tb", "a/b", "a\\b", "a?b", "a#b", "a%2eb",
		"-a.example.test", "a-.example.test", "ab--c.example.test", "1.2.3.4.5", "1.2.3.0x100", "4294967296",
		"256.1.1.1", "1.2.65536", "08.1.1.1", strings.Repeat("a", 64), strings.Repeat("a.", 127) + "ab",
		"xn--ls8h", "xn--", "exa\u00e9mple.test", "a..b",
	}
	for _, in := range bad {
		if tg, err := ParseTarget(in, 80); err == nil {
			t.Errorf("ParseTarget(%q) = %+v, want an error", in, tg)
		}
	}
}

// FuzzParseTarget: whatever the input, ParseTarget does not panic, and
// what it accepts is normalised, bounded and stable.
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{
		"api.example.test:443", "[::ffff:169.254.169.254]:80", "0xA9FEA9FE", "0251.0376.0251.0376", "169.254.43518",
		"xn--bcher-kva.example.test", "a.example.test.", "user@host:1", "a\x00b", "[fe80::1%25eth0]:1", "1.2.3.4.5",
		"xn--pypal-4ve.example.test", strings.Repeat("a", 64) + ".test",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		tg, err := ParseTarget(in, 80)
		if err != nil {
			return
		}
		if tg.Port < 1 || tg.Port > 65535 {
			t.Fatalf("port %d", tg.Port)
		}
		if tg.IsIP() {
			if tg.Host != tg.Addr.String() || tg.Addr.Is4In6() || tg.Addr.Zone() != "" {
				t.Fatalf("address %+v", tg)
			}
		} else {
			if len(tg.Host) > 253 || tg.Host != strings.ToLower(tg.Host) || strings.HasSuffix(tg.Host, ".") {
				t.Fatalf("name %q", tg.Host)
			}
			for l := range strings.SplitSeq(tg.Host, ".") {
				if l == "" || len(l) > 63 {
					t.Fatalf("label %q in %q", l, tg.Host)
				}
			}
			for i := 0; i < len(tg.Host); i++ {
				if c := tg.Host[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
					t.Fatalf("byte %q in %q", c, tg.Host)
				}
			}
		}
		again, err := ParseTarget(tg.String(), 1)
		if err != nil || again != tg {
			t.Fatalf("%q -> %+v -> %+v, %v", in, tg, again, err)
		}
	})
}
