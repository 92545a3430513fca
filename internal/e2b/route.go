package e2b

import (
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/airlock-dev/airlock/internal/runtime"
)

// Routing. A request reaches a sandbox's in-sandbox API in one of three
// ways, as the SDKs send it:
//
//   - the E2b-Sandbox-Id header (every SDK call on the shared
//     E2B_SANDBOX_URL);
//   - its Host, <port>-<id>.<domain> with the domain of
//     Config.Domain ('airlock serve --e2b-domain'): how E2B's own
//     sandboxes are reached, how the 1.x SDKs and the file URLs of any
//     SDK without E2B_SANDBOX_URL address one (over https);
//   - neither, for a signed /files URL on the shared sandbox URL: the
//     signature names the sandbox (signed.go).
//
// A request that names a sandbox both by header and by host must name
// the same one: a Host naming another sandbox is refused, never won over.

// hostRoute parses host as <port>-<id>.<domain>; ok false: host is not
// a sandbox host of domain (domain "": host routing is off).
func hostRoute(host, domain string) (port, id string, ok bool) {
	if domain == "" {
		return "", "", false
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	label, found := strings.CutSuffix(host, "."+domain)
	if !found || strings.Contains(label, ".") {
		return "", "", false
	}
	port, id, found = strings.Cut(label, "-")
	if !found || port == "" || len(port) > 5 || strings.Trim(port, "0123456789") != "" || !runtime.ValidID(id) {
		return "", "", false
	}
	return port, id, true
}

// ValidDomain says whether d may be the E2B domain: a lower-case DNS
// name of at least two labels, each of letters, digits and '-'.
func ValidDomain(d string) bool {
	if len(d) > 200 || !strings.Contains(d, ".") {
		return false
	}
	for _, l := range strings.Split(d, ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// route sends r to a sandbox's in-sandbox API or to the control plane;
// false: r is for the control plane.
func (s *Server) route(w http.ResponseWriter, r *http.Request) bool {
	hdr := r.Header.Get("E2b-Sandbox-Id")
	port, id, byHost := hostRoute(r.Host, s.cfg.Domain)
	switch {
	case byHost && hdr != "" && hdr != id:
		writeEnvdError(w, r, http.StatusBadRequest, codeInvalidArgument, fmt.Sprintf("the Host names sandbox %s and E2b-Sandbox-Id sandbox %s: one sandbox per request", id, hdr))
	case byHost && port != EnvdPort:
		writeEnvdError(w, r, http.StatusBadGateway, codeUnavailable, fmt.Sprintf("port %s of sandbox %s: only the in-sandbox API (port %s) is served; airlock has no preview ports yet (getHost)", port, id, EnvdPort))
	case byHost:
		s.serveEnvd(w, r, id)
	case hdr != "":
		s.serveEnvd(w, r, hdr)
	case r.URL.Path == "/files" && isSigned(r) && r.Header.Get("X-API-KEY") == "":
		s.serveSharedSigned(w, r)
	default:
		return false
	}
	return true
}

// authEnvd authorises a request to sandbox id's in-sandbox API: its
// access token, or for a /files request without one, a signature made
// with it; it returns the key the token was handed to (tokens.go). It
// answers the refusal itself; false: refused.
func (s *Server) authEnvd(w http.ResponseWriter, r *http.Request, id string) (string, bool) {
	tok := r.Header.Get("X-Access-Token")
	if tok == "" && isSigned(r) {
		return s.checkSigned(w, r, id)
	}
	if keyID, ok := s.keyOfToken(id, tokenIs(tok)); ok && tok != "" {
		return keyID, true
	}
	msg := "a valid X-Access-Token for this sandbox is required (the envdAccessToken of create or connect)"
	if tok == "" && r.URL.Path == "/files" {
		msg = "missing signature query parameter: a /files URL without X-Access-Token must be signed (files.downloadUrl, files.uploadUrl)"
	}
	writeEnvdError(w, r, http.StatusUnauthorized, codeUnauthenticated, msg)
	return "", false
}
