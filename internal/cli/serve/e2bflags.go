package serve

import (
	"flag"
	"fmt"

	"github.com/airlock-dev/airlock/internal/daemon"
	"github.com/airlock-dev/airlock/internal/e2b"
)

// e2bFlags are the E2B door's flags beyond --e2b-listen: host routing
// and TLS, which the SDKs need to reach a sandbox by its host
// (https://<port>-<id>.<domain>: the 1.x SDKs, and any SDK's file URLs
// when E2B_SANDBOX_URL is not set).
type e2bFlags struct {
	domain, cert, key *string
}

func addE2BFlags(fs *flag.FlagSet) e2bFlags {
	return e2bFlags{
		domain: fs.String("e2b-domain", "", "route E2B sandbox hosts <port>-<id>.`DOMAIN` (E2B_DOMAIN of the SDKs; api.DOMAIN is the control plane) on --e2b-listen; its DNS must point *.DOMAIN at this listener"),
		cert:   fs.String("e2b-tls-cert", "", "serve --e2b-listen over TLS with this certificate `FILE` (PEM; for *.DOMAIN and api.DOMAIN), as the SDKs reach sandbox hosts only by https"),
		key:    fs.String("e2b-tls-key", "", "the private key `FILE` (PEM) of --e2b-tls-cert"),
	}
}

// apply checks the flags against each other and sets them in cfg; the
// error is a usage error.
func (f e2bFlags) apply(cfg *daemon.Config) error {
	if *f.domain != "" && !e2b.ValidDomain(*f.domain) {
		return fmt.Errorf("--e2b-domain %q: a lower-case DNS name of two labels or more, such as sandbox.example.com", *f.domain)
	}
	if (*f.cert == "") != (*f.key == "") {
		return fmt.Errorf("--e2b-tls-cert and --e2b-tls-key go together")
	}
	if cfg.E2BListen == "" && (*f.domain != "" || *f.cert != "") {
		return fmt.Errorf("--e2b-domain and --e2b-tls-cert configure --e2b-listen, which is not set")
	}
	cfg.E2BDomain, cfg.E2BTLSCert, cfg.E2BTLSKey = *f.domain, *f.cert, *f.key
	return nil
}
