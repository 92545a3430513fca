package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"30s", 30 * time.Second, true},
		{"5m", 5 * time.Minute, true},
		{"1h30m", 90 * time.Minute, true},
		{"0", 0, true},
		{"30d", 30 * 24 * time.Hour, true},
		{"1d12h", 36 * time.Hour, true},
		{"1.5d", 36 * time.Hour, true},
		{"-2d", -48 * time.Hour, true},
		{"5x", 0, false},
		{"d", 0, false},
		{"5", 0, false},
		{"1e3d", 0, false},
		{"infd", 0, false},
		{"1d-2h", 0, false},
		{"1.2.3d", 0, false},
		{"999999d", 0, false},
		{"", 0, false},
	} {
		got, err := parseDuration(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("parseDuration(%q) = %s, %v; want %s, ok %v", c.in, got, err, c.want, c.ok)
		}
		if c.ok && c.in != "" {
			if back, err := parseDuration(fmtDuration(got)); err != nil || back != got {
				t.Errorf("fmtDuration(%s) = %q reads back as %s, %v", got, fmtDuration(got), back, err)
			}
		}
	}
}

// A bad duration says what to write; days work wherever a duration is
// taken (flags and arguments, the CLI's and the daemon's).
func TestDurationErrorsAndDays(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--timeout", "5x", "--", "true"}, `airlock run: --timeout: "5x": use a number with a unit: 30s, 5m, 2h, 7d`},
		{[]string{"sandbox", "exec", "--timeout", "5x", "sb-1", "--", "true"}, `airlock sandbox exec: --timeout: "5x": use a number with a unit: 30s, 5m, 2h, 7d`},
		{[]string{"serve", "--max-lifetime", "1y"}, `airlock serve: --max-lifetime: "1y": use a number with a unit`},
		{[]string{"approve", "--for", "soon", "ap-1"}, `airlock approve: --for: "soon": use a number with a unit`},
		{[]string{"sandbox", "timeout", "sb-1", "5x"}, `airlock sandbox timeout: "5x" is not a duration: use a number with a unit`},
		{[]string{"audit", "query", "--since", "yesterday"}, `airlock audit query: --since: "yesterday": use a time (RFC 3339`},
		{[]string{"run", "--memory", "lots", "--", "true"}, `airlock run: --memory: "lots": not a size: use a number with a unit: 512M, 1G, 64G`},
	} {
		var out, errOut bytes.Buffer
		if code := dispatch(c.args, &out, &errOut); code != 2 || !strings.HasPrefix(errOut.String(), c.want) {
			t.Errorf("airlock %s: exit %d, %q; want 2 and %q", strings.Join(c.args, " "), code, errOut.String(), c.want)
		}
	}
	d := newSbxDaemon(t)
	if code, out, errOut := d.run("create", "--ttl", "2d"); code != 0 {
		t.Fatalf("create --ttl 2d: %d %q %q", code, out, errOut)
	}
	var req map[string]any
	if err := json.Unmarshal([]byte(d.last()), &req); err != nil || req["ttl_seconds"] != float64(2*86400) {
		t.Errorf("create --ttl 2d sent %s", d.last())
	}
	if code, out, errOut := d.run("timeout", "sb1", "1d"); code != 0 || !strings.Contains(d.last(), `"ttl_seconds":86400`) {
		t.Errorf("timeout sb1 1d: %d %q %q, sent %s", code, out, errOut, d.last())
	}
}

// Sizes in help are shown as they are written.
func TestSizesInHelpAsWritten(t *testing.T) {
	for n, want := range map[int64]string{64 << 30: "64G", 512 << 20: "512M", 3 << 29: "1.5G", 1 << 40: "1T", 4096: "4K", 1000: "1000"} {
		if got := fmtSize(n); got != want {
			t.Errorf("fmtSize(%d) = %q, want %q", n, got, want)
		}
		if back, err := parseSize(fmtSize(n)); err != nil || back != n {
			t.Errorf("fmtSize(%d) reads back as %d, %v", n, back, err)
		}
	}
	var out, errOut bytes.Buffer
	if code := dispatch([]string{"serve", "--help"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "(default 64G)") {
		t.Errorf("serve --help does not show --max-disk as 64G: %q", out.String())
	}
}

// serve --max-proxy-conns: shown in help, and a cap below 1 is refused
// before the daemon starts.
func TestServeMaxProxyConns(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := dispatch([]string{"serve", "--help"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "-max-proxy-conns") {
		t.Errorf("serve --help does not show --max-proxy-conns: %q", out.String())
	}
	out.Reset()
	errOut.Reset()
	if code := dispatch([]string{"serve", "--max-proxy-conns", "0"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "--max-proxy-conns 0") {
		t.Errorf("serve --max-proxy-conns 0: exit %d, %q; want 2 and the flag named", code, errOut.String())
	}
}
