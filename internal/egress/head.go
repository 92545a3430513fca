package egress

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/textproto"
	"strings"
)

// head is a request line and its header fields, parsed strictly.
type head struct {
	method, target, proto string
	fields                []field
}

type field struct{ name, value string } // name canonical

func (h *head) values(name string) []string {
	var out []string
	for _, f := range h.fields {
		if f.name == name {
			out = append(out, f.value)
		}
	}
	return out
}

var (
	errHeadTooLarge = errors.New("request head too large")
	errBadHead      = errors.New("malformed request")
)

func badHead(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBadHead, fmt.Sprintf(format, args...))
}

// peekHead returns the bytes of the next request head (through the empty
// line) without consuming them, reading as needed up to limit bytes (br's
// size must be more than limit).
func peekHead(br *bufio.Reader, limit int) ([]byte, error) {
	searched := 0
	for {
		n := br.Buffered()
		if n > 0 {
			buf, _ := br.Peek(n)
			from := max(searched-3, 0)
			if i := bytes.Index(buf[from:], []byte("\r\n\r\n")); i >= 0 {
				if from+i+4 > limit {
					return nil, errHeadTooLarge
				}
				return buf[:from+i+4], nil
			}
			// A bare LF ends a head for lenient parsers; refuse it as soon
			// as it shows, instead of waiting for a CRLF that never comes.
			for k := from; k < n; k++ {
				if buf[k] == '\n' && (k == 0 || buf[k-1] != '\r') {
					return nil, badHead("bare LF")
				}
			}
			searched = n
			if n >= limit {
				return nil, errHeadTooLarge
			}
		}
		if _, err := br.Peek(n + 1); err != nil {
			if n == 0 {
				return nil, err
			}
			return nil, badHead("connection ended inside the request head: %v", err)
		}
	}
}

func tokenChar(c byte) bool {
	if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// parseHead parses a request head (as returned by peekHead). It refuses
// what lenient parsers would guess at: bare CR or LF, NUL and other
// control bytes, folded lines, spaces around the field name, more than one
// space in the request line, versions other than HTTP/1.0 and 1.1, and
// framing that two parsers could read differently (Content-Length with
// Transfer-Encoding, two Content-Lengths, a coding other than chunked).
func parseHead(raw []byte) (*head, error) {
	if !bytes.HasSuffix(raw, []byte("\r\n\r\n")) {
		return nil, badHead("no end of head")
	}
	lines := strings.Split(string(raw[:len(raw)-4]), "\r\n")
	for i, l := range lines {
		for j := 0; j < len(l); j++ {
			c := l[j]
			if c == '\r' || c == '\n' || c == 0 || c == 0x7f || (c < ' ' && c != '\t') {
				return nil, badHead("control byte %#02x on line %d", c, i+1)
			}
		}
	}
	h := &head{}
	parts := strings.Split(lines[0], " ")
	if len(parts) != 3 {
		return nil, badHead("request line must be METHOD SP TARGET SP VERSION")
	}
	h.method, h.target, h.proto = parts[0], parts[1], parts[2]
	if h.method == "" || h.target == "" {
		return nil, badHead("empty method or target")
	}
	for i := 0; i < len(h.method); i++ {
		if !tokenChar(h.method[i]) {
			return nil, badHead("method %q", h.method)
		}
	}
	for i := 0; i < len(h.target); i++ {
		if c := h.target[i]; c <= ' ' || c >= 0x7f {
			return nil, badHead("byte %#02x in the request target", c)
		}
	}
	if h.proto != "HTTP/1.1" && h.proto != "HTTP/1.0" {
		return nil, badHead("version %q (HTTP/1.0 and HTTP/1.1 only)", h.proto)
	}
	if len(lines)-1 > 100 {
		return nil, badHead("more than 100 header fields")
	}
	for _, l := range lines[1:] {
		if l == "" || l[0] == ' ' || l[0] == '\t' {
			return nil, badHead("folded or empty header line")
		}
		colon := strings.IndexByte(l, ':')
		if colon <= 0 {
			return nil, badHead("header line without a name")
		}
		name := l[:colon]
		for i := 0; i < len(name); i++ {
			if !tokenChar(name[i]) {
				return nil, badHead("header name %q", name)
			}
		}
		h.fields = append(h.fields, field{textproto.CanonicalMIMEHeaderKey(name), strings.Trim(l[colon+1:], " \t")})
	}
	cl, te := h.values("Content-Length"), h.values("Transfer-Encoding")
	switch {
	case len(cl) > 0 && len(te) > 0:
		return nil, badHead("both Content-Length and Transfer-Encoding")
	case len(cl) > 1:
		return nil, badHead("more than one Content-Length")
	case len(te) > 1 || len(te) == 1 && !strings.EqualFold(te[0], "chunked"):
		return nil, badHead("Transfer-Encoding other than chunked")
	case len(te) == 1 && h.proto == "HTTP/1.0":
		return nil, badHead("Transfer-Encoding in HTTP/1.0")
	}
	if len(cl) == 1 {
		v := cl[0]
		if v == "" || len(v) > 18 || strings.Trim(v, "0123456789") != "" {
			return nil, badHead("Content-Length %q", v)
		}
	}
	if len(h.values("Host")) > 1 {
		return nil, badHead("more than one Host")
	}
	return h, nil
}

// requestTarget is where a proxy request goes.
type requestTarget struct {
	t    Target
	path string // origin-form path and query, for forwarding
}

// parseProxyTarget checks the request target and Host of a request to the
// proxy: CONNECT takes host:port; every other method an absolute http://
// URI without userinfo or fragment. A Host field that names anything else
// than the target is refused.
func parseProxyTarget(h *head) (requestTarget, error) {
	var rt requestTarget
	var err error
	if h.method == "CONNECT" {
		rt.t, err = ParseTarget(h.target, 0)
		if err != nil {
			return rt, err
		}
		return rt, checkHost(h, rt.t, rt.t.Port)
	}
	rest, ok := cutPrefixFold(h.target, "http://")
	if !ok {
		if _, https := cutPrefixFold(h.target, "https://"); https {
			return rt, badHead("an https:// URI sent to the proxy: use CONNECT")
		}
		if strings.HasPrefix(h.target, "/") {
			return rt, badHead("a proxy request needs an absolute http:// URI")
		}
		return rt, badHead("request target %q: only http:// URIs", h.target)
	}
	if strings.IndexByte(rest, '#') >= 0 {
		return rt, badHead("a fragment in the request target")
	}
	end := strings.IndexAny(rest, "/?")
	if end < 0 {
		end = len(rest)
	}
	rt.t, err = ParseTarget(rest[:end], 80)
	if err != nil {
		return rt, err
	}
	rt.path = rest[end:]
	if rt.path == "" || rt.path[0] == '?' {
		rt.path = "/" + rt.path
	}
	if h.proto == "HTTP/1.1" && len(h.values("Host")) == 0 {
		return rt, badHead("HTTP/1.1 request without Host")
	}
	return rt, checkHost(h, rt.t, 80)
}

// checkHost refuses a Host field that does not name t (a port left out
// means defPort).
func checkHost(h *head, t Target, defPort int) error {
	hosts := h.values("Host")
	if len(hosts) == 0 {
		return nil
	}
	ht, err := ParseTarget(hosts[0], defPort)
	if err != nil {
		return badHead("Host %q: %v", hosts[0], err)
	}
	if ht.Host != t.Host || ht.Port != t.Port {
		return badHead("Host %q does not match the request target %s", hosts[0], t)
	}
	return nil
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}
