package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/cli"
)

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
}

// Sizes in help are shown as they are written.
func TestSizesInHelpAsWritten(t *testing.T) {
	for n, want := range map[int64]string{64 << 30: "64G", 512 << 20: "512M", 3 << 29: "1.5G", 1 << 40: "1T", 4096: "4K", 1000: "1000"} {
		if got := cli.FmtSize(n); got != want {
			t.Errorf("cli.FmtSize(%d) = %q, want %q", n, got, want)
		}
		if back, err := cli.ParseSize(cli.FmtSize(n)); err != nil || back != n {
			t.Errorf("cli.FmtSize(%d) reads back as %d, %v", n, back, err)
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
