package serve

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/daemon"
)

func TestE2BFlags(t *testing.T) {
	for _, c := range []struct {
		args   []string
		listen string
		err    string
	}{
		{[]string{"--e2b-domain", "sbx.example.com", "--e2b-tls-cert", "c.pem", "--e2b-tls-key", "k.pem"}, "127.0.0.1:1", ""},
		{nil, "", ""},
		{[]string{"--e2b-domain", "Sbx.Example.com"}, "127.0.0.1:1", "lower-case DNS name"},
		{[]string{"--e2b-domain", "localhost"}, "127.0.0.1:1", "two labels"},
		{[]string{"--e2b-tls-cert", "c.pem"}, "127.0.0.1:1", "go together"},
		{[]string{"--e2b-tls-key", "k.pem"}, "127.0.0.1:1", "go together"},
		{[]string{"--e2b-domain", "sbx.example.com"}, "", "not set"},
	} {
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f := addE2BFlags(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		cfg := daemon.Config{E2BListen: c.listen}
		err := f.apply(&cfg)
		if c.err == "" && (err != nil || cfg.E2BDomain != *f.domain || cfg.E2BTLSCert != *f.cert || cfg.E2BTLSKey != *f.key) {
			t.Errorf("%q: %v %+v", c.args, err, cfg)
		}
		if c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%q: %v, want %q", c.args, err, c.err)
		}
	}
}
