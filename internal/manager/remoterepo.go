package manager

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"strings"

	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/errdefs"
)

// remoteClone checks a repository URL that a remote client (an API key)
// asked the daemon to clone, and returns the git options that hold the
// clone to what was checked. The daemon clones as root on the host's
// network, so a remote client may name only an https or http URL on its
// default port whose host resolves to public addresses (not loopback,
// private, link-local, metadata... as egress guards them); the clone
// connects only to those addresses (resolution pinned) and follows no
// redirect. Local paths, ssh and git:// are for the unix socket.
func remoteClone(ctx context.Context, resolver egress.Resolver, repo string) ([]string, error) {
	u, err := url.Parse(repo)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Opaque != "" {
		return nil, fmt.Errorf("over TCP, repo must be an https or http URL (local paths, ssh and git:// only on the unix socket): %w", errdefs.ErrDenied)
	}
	port := map[string]string{"https": "443", "http": "80"}[u.Scheme]
	if p := u.Port(); p != "" && p != port {
		return nil, fmt.Errorf("over TCP, repo URLs use the default port (%s for %s): %w", port, u.Scheme, errdefs.ErrDenied)
	}
	host := u.Hostname()
	var addrs []netip.Addr
	literal := false
	if a, err := netip.ParseAddr(host); err == nil {
		addrs, literal = []netip.Addr{a}, true
	} else {
		if addrs, err = resolver.LookupNetIP(ctx, "ip", host); err != nil || len(addrs) == 0 {
			return nil, fmt.Errorf("repo host %s does not resolve: %w", host, errdefs.ErrInvalid)
		}
	}
	var pinned []string
	for _, a := range addrs {
		if kind, bad := egress.Guarded(a); bad {
			return nil, fmt.Errorf("repo host %s resolves to %s, a %s address: over TCP the daemon clones only from public addresses: %w", host, a, kind, errdefs.ErrDenied)
		}
		s := a.Unmap().String()
		if a.Unmap().Is6() {
			s = "[" + s + "]"
		}
		pinned = append(pinned, s)
	}
	opts := []string{"-c", "http.followRedirects=false", "-c", "protocol.allow=never", "-c", "protocol." + u.Scheme + ".allow=always"}
	if !literal { // an address needs no resolving (and curl refuses a pin for one)
		opts = append(opts, "-c", "http.curloptResolve="+host+":"+port+":"+strings.Join(pinned, ","))
	}
	return opts, nil
}
