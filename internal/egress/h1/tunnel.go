package h1

import (
	"strings"

	"github.com/airlock-dev/airlock/internal/netpolicy"
)

// CheckTunnelTarget accepts an origin-form target (or "*" for OPTIONS,
// or an absolute https URI for the same host) and a Host naming the
// tunnel's host: a request inside a tunnel may not address another host.
func CheckTunnelTarget(h *Head, t netpolicy.Target) error {
	if h.Method == "CONNECT" {
		return BadHead("CONNECT inside a tunnel")
	}
	switch {
	case strings.HasPrefix(h.Target, "/"), h.Target == "*" && h.Method == "OPTIONS":
	default:
		rest, ok := cutPrefixFold(h.Target, "https://")
		if !ok {
			return BadHead("request target %q", h.Target)
		}
		end := strings.IndexAny(rest, "/?#")
		if end < 0 {
			end = len(rest)
		}
		at, err := netpolicy.ParseTarget(rest[:end], 443)
		if err != nil {
			return err
		}
		if at.Host != t.Host || at.Port != t.Port {
			return BadHead("request for %s inside a tunnel to %s", at, t)
		}
	}
	if len(h.Values("Host")) == 0 {
		if h.Proto == "HTTP/1.1" {
			return BadHead("HTTP/1.1 request without Host")
		}
		return nil
	}
	return checkHost(h, t, 443)
}
