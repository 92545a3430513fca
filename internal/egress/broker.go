package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// caHolder is a sandbox's CA, made on first use, and the leaf
// certificates it signed. The key never leaves the host.
type caHolder struct {
	mu     sync.Mutex
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	pem    []byte
	leaves map[string]*tls.Certificate
}

func (h *caHolder) made() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cert != nil
}

// CACert returns the PEM certificate of the sandbox's egress CA, making
// the CA on first call. Install it in the sandbox's trust store (for
// example under /usr/local/share/ca-certificates, and in SSL_CERT_FILE,
// NODE_EXTRA_CA_CERTS, REQUESTS_CA_BUNDLE) so that clients accept the
// proxy's certificates for hosts with brokered secrets. The CA is
// forgotten by RemoveSandbox.
func (s *Service) CACert(sandboxID string) ([]byte, error) {
	if sandboxID == "" {
		return nil, errdefs.Wrap(errdefs.ErrInvalid, "egress: empty sandbox id")
	}
	s.mu.Lock()
	sb := s.sandboxLocked(sandboxID)
	s.mu.Unlock()
	sb.ca.mu.Lock()
	defer sb.ca.mu.Unlock()
	if err := sb.ca.ensureLocked(sandboxID, s.cfg.Now(), s.cfg.CALifetime); err != nil {
		return nil, err
	}
	return bytes.Clone(sb.ca.pem), nil
}

func (h *caHolder) ensureLocked(sandboxID string, now time.Time, life time.Duration) error {
	if h.cert != nil && now.Before(h.cert.NotAfter) {
		return nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("egress CA for %s: %w", sandboxID, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "airlock egress CA for sandbox " + sandboxID, Organization: []string{"airlock"}},
		NotBefore:             now.Add(-5 * time.Minute),
		NotAfter:              now.Add(life),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("egress CA for %s: %w", sandboxID, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return fmt.Errorf("egress CA for %s: %w", sandboxID, err)
	}
	h.cert, h.key, h.leaves = cert, key, map[string]*tls.Certificate{}
	h.pem = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
}

// leaf returns a certificate for host signed by the sandbox's CA.
func (h *caHolder) leaf(sandboxID, host string, now time.Time, life time.Duration) (*tls.Certificate, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.ensureLocked(sandboxID, now, life); err != nil {
		return nil, err
	}
	if c := h.leaves[host]; c != nil && now.Add(time.Hour).Before(c.Leaf.NotAfter) {
		return c, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	notAfter := now.Add(24 * time.Hour)
	if notAfter.After(h.cert.NotAfter) {
		notAfter = h.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: host},
		DNSNames:     []string{host},
		NotBefore:    now.Add(-5 * time.Minute),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, h.cert, &key.PublicKey, h.key)
	if err != nil {
		return nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
	if len(h.leaves) > 1000 {
		clear(h.leaves)
	}
	h.leaves[host] = c
	return c, nil
}

// prefixConn reads from r (bytes already buffered, then the connection)
// and writes to the connection.
type prefixConn struct {
	net.Conn
	r io.Reader
}

func (c *prefixConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// broker serves a tunnel to a host with brokered secrets: it terminates
// the sandbox's TLS with a certificate from the sandbox's CA, opens real
// TLS to the checked address (verified against Config.UpstreamRoots), and
// forwards HTTP/1.1 requests one by one, putting the secrets' values in
// place of their placeholders in the headers, and their placeholders back
// in place of the values in responses.
func (pc *proxyConn) broker(t Target, up net.Conn, addr netip.Addr, src io.Reader, end *Event) {
	s := pc.s
	s.mu.Lock()
	sb := s.sandboxLocked(pc.who.SandboxID)
	s.mu.Unlock()
	var sniErr error
	cl := tls.Server(&prefixConn{Conn: pc.c, r: src}, &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) {
			end.SNI = h.ServerName
			if h.ServerName != "" {
				if st, err := ParseTarget(h.ServerName, t.Port); err != nil || st.Host != t.Host {
					sniErr = fmt.Errorf("the TLS server name %q differs from the CONNECT target %s", h.ServerName, t.Host)
					return nil, sniErr
				}
			}
			return sb.ca.leaf(pc.who.SandboxID, t.Host, s.cfg.Now(), s.cfg.CALifetime)
		},
	})
	pc.c.SetDeadline(time.Now().Add(s.cfg.HelloTimeout))
	err := cl.HandshakeContext(pc.ctx)
	pc.c.SetDeadline(time.Time{})
	if err != nil {
		if sniErr != nil {
			end.Decision, end.Rule, end.Reason = "deny", RuleSNI, sniErr.Error()
		} else {
			end.Error = "TLS from the sandbox: " + err.Error()
		}
		return
	}
	upc := tls.Client(up, &tls.Config{
		ServerName: t.Host,
		RootCAs:    s.cfg.UpstreamRoots,
		NextProtos: []string{"http/1.1"},
		MinVersion: tls.VersionTLS12,
	})
	up.SetDeadline(time.Now().Add(s.cfg.DialTimeout))
	err = upc.HandshakeContext(pc.ctx)
	up.SetDeadline(time.Time{})
	if err != nil {
		end.Error = "TLS to the upstream: " + err.Error()
		writeRefusal(cl, http.StatusBadGateway, RuleUpstream, fmt.Sprintf("TLS to %s failed (its certificate was not accepted?)", t.Host))
		return
	}
	cbr := bufio.NewReaderSize(cl, s.cfg.MaxHeaderBytes+4096)
	ubr := bufio.NewReader(upc)
	for {
		pc.c.SetReadDeadline(time.Now().Add(s.cfg.HeaderTimeout))
		raw, err := peekHead(cbr, s.cfg.MaxHeaderBytes)
		pc.c.SetReadDeadline(time.Time{})
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, net.ErrClosed) {
				pc.refuseBrokered(cl, "", t, err)
			}
			return
		}
		h, err := parseHead(raw)
		if err == nil {
			err = checkBrokeredTarget(h, t)
		}
		if err != nil {
			method := ""
			if h != nil {
				method = h.method
			}
			pc.refuseBrokered(cl, method, t, err)
			return
		}
		up, down, ok := pc.brokerOne(cl, cbr, upc, ubr, h, t, addr)
		end.BytesUp += up
		end.BytesDown += down
		if !ok {
			return
		}
	}
}

func (pc *proxyConn) refuseBrokered(cl io.Writer, method string, t Target, err error) {
	ev := pc.event(KindRequest)
	ev.Method, ev.Host, ev.Port, ev.Decision, ev.Rule, ev.Reason = method, t.Host, t.Port, "deny", RuleParse, err.Error()
	pc.s.record(pc.ctx, ev)
	code := http.StatusBadRequest
	if errors.Is(err, errHeadTooLarge) {
		code = http.StatusRequestHeaderFieldsTooLarge
	}
	writeRefusal(cl, code, RuleParse, err.Error())
}

// checkBrokeredTarget accepts an origin-form target (or "*" for OPTIONS,
// or an absolute https URI for the same host) and a Host naming the
// tunnel's host: a request inside a tunnel may not address another host.
func checkBrokeredTarget(h *head, t Target) error {
	if h.method == "CONNECT" {
		return badHead("CONNECT inside a tunnel")
	}
	switch {
	case strings.HasPrefix(h.target, "/"), h.target == "*" && h.method == "OPTIONS":
	default:
		rest, ok := cutPrefixFold(h.target, "https://")
		if !ok {
			return badHead("request target %q", h.target)
		}
		end := strings.IndexAny(rest, "/?#")
		if end < 0 {
			end = len(rest)
		}
		at, err := ParseTarget(rest[:end], 443)
		if err != nil {
			return err
		}
		if at.Host != t.Host || at.Port != t.Port {
			return badHead("request for %s inside a tunnel to %s", at, t)
		}
	}
	if len(h.values("Host")) == 0 {
		if h.proto == "HTTP/1.1" {
			return badHead("HTTP/1.1 request without Host")
		}
		return nil
	}
	return checkHost(h, t, 443)
}

// brokerOne forwards one request of a brokered tunnel. It returns the
// bytes each way and whether the tunnel may carry another.
func (pc *proxyConn) brokerOne(cl net.Conn, cbr *bufio.Reader, upc net.Conn, ubr *bufio.Reader, h *head, t Target, addr netip.Addr) (int64, int64, bool) {
	s := pc.s
	// The policy may have changed since the CONNECT: check again, and
	// take the secrets as they are now.
	pol := s.policy(pc.who.SandboxID)
	ev := pc.event(KindRequest)
	ev.Method, ev.Host, ev.Port, ev.Addr = h.method, t.Host, t.Port, addr
	if u, err := url.ParseRequestURI(h.target); err == nil {
		ev.Path = u.Path
	}
	allowed := pol != nil && s.stillAllowed(pol, t, modeConnect, addr)
	if allowed {
		d, _ := pol.decideName(t, modeConnect)
		ev.Decision, ev.Rule = "allow", d.rule
	} else {
		ev.Decision, ev.Rule, ev.Reason = "deny", RuleDefaultDeny, fmt.Sprintf("%s is no longer allowed for this sandbox", t.Host)
		if s.cut.Load() {
			ev.Rule, ev.Reason = RuleCut, "egress is switched off for every sandbox"
		}
	}
	if err := s.record(pc.ctx, ev); err != nil {
		writeUnrecorded(cl, err)
		return 0, 0, false
	}
	if !allowed {
		writeRefusal(cl, http.StatusForbidden, ev.Rule, ev.Reason)
		return 0, 0, false
	}
	req, err := http.ReadRequest(cbr)
	if err != nil {
		writeRefusal(cl, http.StatusBadRequest, RuleParse, err.Error())
		return 0, 0, false
	}
	secrets := pol.secretsFor(t.Host)
	for _, u := range inject(req.Header, secrets) {
		se := pc.event(KindSecret)
		se.Method, se.Host, se.Port, se.Addr, se.Path = h.method, t.Host, t.Port, addr, ev.Path
		se.Secret, se.Header, se.Decision = u.id, u.header, "allow"
		if err := s.record(pc.ctx, se); err != nil {
			writeUnrecorded(cl, err)
			return 0, 0, false
		}
	}
	start := time.Now()
	req.URL = &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery}
	if h.target == "*" {
		req.URL = &url.URL{Path: "*"}
	}
	req.Host = hostHeader(t, 443)
	ex := exchange{req: req, client: cl, up: upc, upBr: ubr}
	if sc := newScrubber(secrets); sc != nil {
		// A compressed body could hide a value that the upstream echoes;
		// ask for it plain so it can be scrubbed.
		req.Header.Set("Accept-Encoding", "identity")
		ex.scrub = sc.response
		ex.scrubText = func(s string) string { return string(sc.replace([]byte(s))) }
	}
	keep := ex.run()
	res := pc.event(KindResponse)
	res.Method, res.Host, res.Port, res.Addr, res.Path = h.method, t.Host, t.Port, addr, ev.Path
	res.Status, res.BytesUp, res.BytesDown, res.Duration = ex.status, ex.upN, ex.downN, time.Since(start)
	if ex.err != nil {
		res.Error = ex.err.Error()
	}
	s.record(context.WithoutCancel(pc.ctx), res)
	return ex.upN, ex.downN, keep
}

type secretUse struct{ id, header string }

// inject replaces placeholders with values in the header fields each
// secret may go in, and returns the uses.
func inject(h http.Header, secrets []*csecret) []secretUse {
	var uses []secretUse
	for name, vals := range h {
		for _, sec := range secrets {
			if sec.headers != nil && !sec.headers[name] {
				continue
			}
			used := false
			for i, v := range vals {
				if strings.Contains(v, sec.placeholder) {
					vals[i] = strings.ReplaceAll(v, sec.placeholder, sec.value)
					used = true
				}
			}
			if used {
				uses = append(uses, secretUse{sec.id, name})
			}
		}
	}
	return uses
}

// scrubber puts placeholders back in place of secret values in a
// response, so that a value an upstream echoes never reaches the sandbox.
type scrubber struct {
	old, new [][]byte
	longest  int
}

func newScrubber(secrets []*csecret) *scrubber {
	sc := &scrubber{}
	for _, s := range secrets {
		if s.value == "" {
			continue
		}
		// The value as it is, and as an upstream that echoes a request
		// would likely quote it: each form goes back as the same form of
		// the placeholder.
		for _, enc := range echoForms {
			v := enc(s.value)
			if len(sc.old) > 0 && slices.ContainsFunc(sc.old, func(o []byte) bool { return string(o) == v }) {
				continue
			}
			sc.old = append(sc.old, []byte(v))
			sc.new = append(sc.new, []byte(enc(s.placeholder)))
			sc.longest = max(sc.longest, len(v))
		}
	}
	if len(sc.old) == 0 {
		return nil
	}
	return sc
}

// echoForms are the encodings a value echoed by an upstream is scrubbed
// in: as it is, JSON-escaped (with and without HTML escapes), URL-escaped
// (either case of hex digits), hex, and base64 (standard and URL
// alphabets, padded or not) of the value alone.
var echoForms = []func(string) string{
	func(s string) string { return s },
	func(s string) string { b, _ := json.Marshal(s); return string(b[1 : len(b)-1]) },
	func(s string) string {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(s)
		b := bytes.TrimSpace(buf.Bytes())
		return string(b[1 : len(b)-1])
	},
	url.QueryEscape, url.PathEscape,
	func(s string) string { return lowerHexEscapes(url.QueryEscape(s)) },
	func(s string) string { return lowerHexEscapes(url.PathEscape(s)) },
	func(s string) string { return hex.EncodeToString([]byte(s)) },
	func(s string) string { return strings.ToUpper(hex.EncodeToString([]byte(s))) },
	func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) },
	func(s string) string { return base64.RawStdEncoding.EncodeToString([]byte(s)) },
	func(s string) string { return base64.URLEncoding.EncodeToString([]byte(s)) },
	func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) },
}

// lowerHexEscapes writes %2F as %2f.
func lowerHexEscapes(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = lowerHex(b[i+1]), lowerHex(b[i+2])
		}
	}
	return string(b)
}

func lowerHex(c byte) byte {
	if c >= 'A' && c <= 'F' {
		return c + 'a' - 'A'
	}
	return c
}

func (sc *scrubber) response(resp *http.Response) {
	if sc == nil {
		return
	}
	for name, vals := range resp.Header {
		if sc.inName(name) {
			// a header named after the value goes, whatever it says
			delete(resp.Header, name)
			continue
		}
		for i, v := range vals {
			vals[i] = string(sc.replace([]byte(v)))
		}
		resp.Header[name] = vals
	}
	// The upstream's reason phrase and trailers are not relayed: the
	// standard phrase goes back, and no trailers.
	resp.Status = fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	resp.Trailer = nil
	if resp.Body == nil || resp.Body == http.NoBody {
		return
	}
	if !identityOnly(resp.Header.Values("Content-Encoding")) {
		// The upstream compressed anyway: the value cannot be seen in the
		// stream, so refuse to pass it rather than risk it.
		resp.Body.Close()
		resp.Body = io.NopCloser(strings.NewReader("airlock egress: a compressed response from a host with a brokered secret is not relayed\n"))
		resp.StatusCode, resp.Status = http.StatusBadGateway, "502 Bad Gateway"
		resp.Header = http.Header{"Content-Type": {"text/plain; charset=utf-8"}}
		resp.ContentLength = -1
		resp.TransferEncoding = nil
		resp.Close = true
		return
	}
	resp.Body = &scrubReader{sc: sc, r: resp.Body}
	resp.Header.Del("Content-Length")
	resp.ContentLength = -1
	if resp.ProtoAtLeast(1, 1) {
		resp.TransferEncoding = []string{"chunked"}
	} else {
		resp.Close = true
	}
}

// identityOnly: every Content-Encoding listed (header lines and their
// comma-separated values) is identity.
func identityOnly(vals []string) bool {
	for _, v := range vals {
		for _, e := range strings.Split(v, ",") {
			if e = strings.TrimSpace(e); e != "" && !strings.EqualFold(e, "identity") {
				return false
			}
		}
	}
	return true
}

// inName reports whether a header name holds a value in any of its forms
// (names are canonicalized, so case is ignored).
func (sc *scrubber) inName(name string) bool {
	n := bytes.ToLower([]byte(name))
	for _, o := range sc.old {
		if bytes.Contains(n, bytes.ToLower(o)) {
			return true
		}
	}
	return false
}

func (sc *scrubber) replace(b []byte) []byte {
	for i, o := range sc.old {
		b = bytes.ReplaceAll(b, o, sc.new[i])
	}
	return b
}

// scrubReader replaces values in a stream, holding back fewer bytes than
// the longest value so that a value split across reads is still found.
type scrubReader struct {
	sc   *scrubber
	r    io.ReadCloser
	in   []byte // read, not yet scrubbed
	out  []byte // scrubbed, not yet returned
	eof  bool
	rerr error
}

func (s *scrubReader) Close() error { return s.r.Close() }

func (s *scrubReader) Read(p []byte) (int, error) {
	for len(s.out) == 0 {
		if s.eof {
			if len(s.in) > 0 {
				s.out, s.in = s.sc.replace(s.in), nil
				continue
			}
			return 0, s.rerr
		}
		buf := make([]byte, 32<<10)
		n, err := s.r.Read(buf)
		s.in = append(s.in, buf[:n]...)
		if err != nil {
			s.eof, s.rerr = true, err
			continue
		}
		s.out, s.in = s.scrubSafe(s.in)
	}
	n := copy(p, s.out)
	s.out = s.out[n:]
	return n, nil
}

// scrubSafe scrubs the part of in that cannot be the start of a value cut
// by the end of the buffer, and returns it and the rest.
func (s *scrubReader) scrubSafe(in []byte) (out, rest []byte) {
	var b []byte
	for len(in) > 0 {
		at, which := -1, -1
		for i, o := range s.sc.old {
			if j := bytes.Index(in, o); j >= 0 && (at < 0 || j < at) {
				at, which = j, i
			}
		}
		if at < 0 {
			break
		}
		b = append(b, in[:at]...)
		b = append(b, s.sc.new[which]...)
		in = in[at+len(s.sc.old[which]):]
	}
	keep := min(len(in), s.sc.longest-1)
	b = append(b, in[:len(in)-keep]...)
	return b, bytes.Clone(in[len(in)-keep:])
}
