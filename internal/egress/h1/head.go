package h1

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/textproto"
	"strings"

	"github.com/airlock-dev/airlock/internal/netpolicy"
)

// Head is a request line and its header fields, parsed strictly.
type Head struct {
	Method, Target, Proto string
	Fields                []Field
}

// Field is one header field; Name is canonical (textproto).
type Field struct{ Name, Value string }

// Values are the values of the fields named name (canonical), in order.
func (h *Head) Values(name string) []string {
	var out []string
	for _, f := range h.Fields {
		if f.Name == name {
			out = append(out, f.Value)
		}
	}
	return out
}

var (
	ErrHeadTooLarge = errors.New("request head too large")
	errBadHead      = errors.New("malformed request")
)

// BadHead is an error for a malformed request.
func BadHead(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBadHead, fmt.Sprintf(format, args...))
}

// PeekHead returns the bytes of the next request head (through the empty
// line) without consuming them, reading as needed up to limit bytes (br's
// size must be more than limit).
func PeekHead(br *bufio.Reader, limit int) ([]byte, error) {
	searched := 0
	for {
		n := br.Buffered()
		if n > 0 {
			buf, _ := br.Peek(n)
			from := max(searched-3, 0)
			if i := bytes.Index(buf[from:], []byte("\r\n\r\n")); i >= 0 {
				if from+i+4 > limit {
					return nil, ErrHeadTooLarge
				}
				return buf[:from+i+4], nil
			}
			// A bare LF ends a head for lenient parsers; refuse it as soon
			// as it shows, instead of waiting for a CRLF that never comes.
			for k := from; k < n; k++ {
				if buf[k] == '\n' && (k == 0 || buf[k-1] != '\r') {
					return nil, BadHead("bare LF")
				}
			}
			searched = n
			if n >= limit {
				return nil, ErrHeadTooLarge
			}
		}
		if _, err := br.Peek(n + 1); err != nil {
			if n == 0 {
				return nil, err
			}
			return nil, BadHead("connection ended inside the request head: %v", err)
		}
	}
}

func tokenChar(c byte) bool {
	if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// ParseHead parses a request head (as returned by PeekHead). It refuses
// what lenient parsers would guess at: bare CR or LF, NUL and other
// control bytes, folded lines, spaces around the field name, more than one
// space in the request line, versions other than HTTP/1.0 and 1.1, and
// framing that two parsers could read differently (Content-Length with
// Transfer-Encoding, two Content-Lengths, a coding other than chunked).
func ParseHead(raw []byte) (*Head, error) {
	if !bytes.HasSuffix(raw, []byte("\r\n\r\n")) {
		return nil, BadHead("no end of head")
	}
	lines := strings.Split(string(raw[:len(raw)-4]), "\r\n")
	for i, l := range lines {
		for j := 0; j < len(l); j++ {
			c := l[j]
			if c == '\r' || c == '\n' || c == 0 || c == 0x7f || (c < ' ' && c != '\t') {
				return nil, BadHead("control byte %#02x on line %d", c, i+1)
			}
		}
	}
	h := &Head{}
	parts := strings.Split(lines[0], " ")
	if len(parts) != 3 {
		return nil, BadHead("request line must be METHOD SP TARGET SP VERSION")
	}
	h.Method, h.Target, h.Proto = parts[0], parts[1], parts[2]
	if h.Method == "" || h.Target == "" {
		return nil, BadHead("empty method or target")
	}
	for i := 0; i < len(h.Method); i++ {
		if !tokenChar(h.Method[i]) {
			return nil, BadHead("method %q", h.Method)
		}
	}
	for i := 0; i < len(h.Target); i++ {
		if c := h.Target[i]; c <= ' ' || c >= 0x7f {
			return nil, BadHead("byte %#02x in the request target", c)
		}
	}
	if h.Proto != "HTTP/1.1" && h.Proto != "HTTP/1.0" {
		return nil, BadHead("version %q (HTTP/1.0 and HTTP/1.1 only)", h.Proto)
	}
	if len(lines)-1 > 100 {
		return nil, BadHead("more than 100 header fields")
	}
	for _, l := range lines[1:] {
		if l == "" || l[0] == ' ' || l[0] == '\t' {
			return nil, BadHead("folded or empty header line")
		}
		colon := strings.IndexByte(l, ':')
		if colon <= 0 {
			return nil, BadHead("header line without a name")
		}
		name := l[:colon]
		for i := 0; i < len(name); i++ {
			if !tokenChar(name[i]) {
				return nil, BadHead("header name %q", name)
			}
		}
		h.Fields = append(h.Fields, Field{textproto.CanonicalMIMEHeaderKey(name), strings.Trim(l[colon+1:], " \t")})
	}
	cl, te := h.Values("Content-Length"), h.Values("Transfer-Encoding")
	switch {
	case len(cl) > 0 && len(te) > 0:
		return nil, BadHead("both Content-Length and Transfer-Encoding")
	case len(cl) > 1:
		return nil, BadHead("more than one Content-Length")
	case len(te) > 1 || len(te) == 1 && !strings.EqualFold(te[0], "chunked"):
		return nil, BadHead("Transfer-Encoding other than chunked")
	case len(te) == 1 && h.Proto == "HTTP/1.0":
		return nil, BadHead("Transfer-Encoding in HTTP/1.0")
	}
	if len(cl) == 1 {
		v := cl[0]
		if v == "" || len(v) > 18 || strings.Trim(v, "0123456789") != "" {
			return nil, BadHead("Content-Length %q", v)
		}
	}
	if len(h.Values("Host")) > 1 {
		return nil, BadHead("more than one Host")
	}
	return h, nil
}

// RequestTarget is where a proxy request goes.
type RequestTarget struct {
	Target netpolicy.Target
	Path   string // origin-form path and query, for forwarding
}

// ParseProxyTarget checks the request target and Host of a request to the
// proxy: CONNECT takes host:port; every other method an absolute http://
// URI without userinfo or fragment. A Host field that names anything else
// than the target is refused.
func ParseProxyTarget(h *Head) (RequestTarget, error) {
	var rt RequestTarget
	var err error
	if h.Method == "CONNECT" {
		rt.Target, err = netpolicy.ParseTarget(h.Target, 0)
		if err != nil {
			return rt, err
		}
		return rt, checkHost(h, rt.Target, rt.Target.Port)
	}
	rest, ok := cutPrefixFold(h.Target, "http://")
	if !ok {
		if _, https := cutPrefixFold(h.Target, "https://"); https {
			return rt, BadHead("an https:// URI sent to the proxy: use CONNECT")
		}
		if strings.HasPrefix(h.Target, "/") {
			return rt, BadHead("a proxy request needs an absolute http:// URI")
		}
		return rt, BadHead("request target %q: only http:// URIs", h.Target)
	}
	if strings.IndexByte(rest, '#') >= 0 {
		return rt, BadHead("a fragment in the request target")
	}
	end := strings.IndexAny(rest, "/?")
	if end < 0 {
		end = len(rest)
	}
	rt.Target, err = netpolicy.ParseTarget(rest[:end], 80)
	if err != nil {
		return rt, err
	}
	rt.Path = rest[end:]
	if rt.Path == "" || rt.Path[0] == '?' {
		rt.Path = "/" + rt.Path
	}
	if h.Proto == "HTTP/1.1" && len(h.Values("Host")) == 0 {
		return rt, BadHead("HTTP/1.1 request without Host")
	}
	return rt, checkHost(h, rt.Target, 80)
}

// checkHost refuses a Host field that does not name t (a port left out
// means defPort).
func checkHost(h *Head, t netpolicy.Target, defPort int) error {
	hosts := h.Values("Host")
	if len(hosts) == 0 {
		return nil
	}
	ht, err := netpolicy.ParseTarget(hosts[0], defPort)
	if err != nil {
		return BadHead("Host %q: %v", hosts[0], err)
	}
	if ht.Host != t.Host || ht.Port != t.Port {
		return BadHead("Host %q does not match the request target %s", hosts[0], t)
	}
	return nil
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}
