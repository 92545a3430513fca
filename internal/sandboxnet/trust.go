package sandboxnet

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/airlock-dev/airlock/internal/runtime"
)

// A sandbox trusts its own egress CA, so that brokered secrets over HTTPS
// work out of the box (issue 19: installing it by hand as a *.pem was
// refused as secret access). The trust store every common client reads,
// the system bundle, is bound read-only over the template's: the host's
// system bundle with the sandbox's CA appended. The runtimes that keep
// their own roots are pointed at it. The CA's key never leaves the
// daemon, and the proxy intercepts only brokered hosts: trusting it opens
// nothing else.
const sandboxBundle = "/etc/ssl/certs/ca-certificates.crt"

// hostBundle is the host's system bundle (a variable for tests).
var hostBundle = "/etc/ssl/certs/ca-certificates.crt"

// trustEnv points Node, Python (requests, pip) and OpenSSL-based clients
// (and Go, which reads SSL_CERT_FILE) at the bundle.
var trustEnv = []string{
	"SSL_CERT_FILE=" + sandboxBundle, "NODE_EXTRA_CA_CERTS=" + sandboxBundle,
	"REQUESTS_CA_BUNDLE=" + sandboxBundle, "PIP_CERT=" + sandboxBundle, "CURL_CA_BUNDLE=" + sandboxBundle,
}

// openTrust reads the host's bundle and empties the trust dir of bundles
// a daemon before this one left (a mounted bind keeps its file).
func (n *Net) openTrust() error {
	if n.cfg.TrustDir == "" {
		return nil
	}
	sys, err := os.ReadFile(hostBundle)
	if errors.Is(err, fs.ErrNotExist) {
		// No system bundle here, so none in the host template to bind
		// over: brokered HTTPS needs the CA installed by hand.
		n.core.Logf("egress: no %s on this host: sandboxes do not trust their egress CA by themselves", hostBundle)
		return nil
	}
	if err != nil {
		return fmt.Errorf("egress trust store: %w", err)
	}
	if err := os.RemoveAll(n.cfg.TrustDir); err != nil {
		return fmt.Errorf("egress trust store: %w", err)
	}
	if err := os.MkdirAll(n.cfg.TrustDir, 0o711); err != nil {
		return fmt.Errorf("egress trust store: %w", err)
	}
	n.sysBundle = append(bytes.TrimRight(sys, "\n"), '\n')
	return nil
}

// trust is sandbox id's bundle bind and environment; none without a
// trust dir or a host bundle.
func (n *Net) trust(id string) ([]runtime.Bind, []string, error) {
	if n.sysBundle == nil {
		return nil, nil, nil
	}
	ca, err := n.svc.CACert(id)
	if err != nil {
		return nil, nil, fmt.Errorf("egress CA: %w", err)
	}
	path := n.trustFile(id)
	tmp := path + ".new"
	if err := os.WriteFile(tmp, append(bytes.Clone(n.sysBundle), ca...), 0o644); err != nil {
		return nil, nil, fmt.Errorf("egress trust store: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, nil, fmt.Errorf("egress trust store: %w", err)
	}
	return []runtime.Bind{{Source: path, Target: sandboxBundle}}, trustEnv, nil
}

func (n *Net) trustFile(id string) string { return filepath.Join(n.cfg.TrustDir, id+".pem") }

// dropTrust removes sandbox id's bundle.
func (n *Net) dropTrust(id string) {
	if n.sysBundle != nil {
		_ = os.Remove(n.trustFile(id)) // absent when its create failed first
	}
}
