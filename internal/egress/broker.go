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
	"runtime"
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
	ubr, ulim := upstreamReader(upc)
	for n := 0; ; n++ {
		pc.c.SetReadDeadline(time.Now().Add(s.cfg.HeaderTimeout))
		raw, err := peekHead(cbr, s.cfg.MaxHeaderBytes)
		pc.c.SetReadDeadline(time.Time{})
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, net.ErrClosed) {
				pc.refuseBrokered(cl, "", t, err)
			}
			return
		}
		if n > 0 && !pc.admitRequest(cl) {
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
		up, down, ok := pc.brokerOne(cl, cbr, upc, ubr, ulim, h, t, addr)
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
func (pc *proxyConn) brokerOne(cl net.Conn, cbr *bufio.Reader, upc net.Conn, ubr *bufio.Reader, ulim *headLimiter, h *head, t Target, addr netip.Addr) (int64, int64, bool) {
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
	ex := exchange{req: req, client: cl, up: upc, upBr: ubr, upLim: ulim}
	sc := newScrubber(secrets, t.Host)
	if sc != nil {
		// A compressed body could hide a value that the upstream echoes;
		// ask for it plain so it can be checked. A range of an echo could
		// hand the value over a few bytes at a time, each too short to
		// recognise: ask for whole answers.
		req.Header.Set("Accept-Encoding", "identity")
		req.Header.Del("Range")
		req.Header.Del("If-Range")
		ex.scrub = sc.response
		ex.scrubText = sc.text
	}
	keep := ex.run()
	res := pc.event(KindResponse)
	res.Method, res.Host, res.Port, res.Addr, res.Path = h.method, t.Host, t.Port, addr, ev.Path
	res.Status, res.BytesUp, res.BytesDown, res.Duration = ex.status, ex.upN, ex.downN, time.Since(start)
	if ex.err != nil {
		res.Error = clipError(ex.err.Error())
	}
	if sc != nil && sc.refusal != "" {
		res.Decision, res.Rule, res.Reason = "deny", RuleReflected, sc.refusal
		keep = false
	}
	s.record(context.WithoutCancel(pc.ctx), res)
	return ex.upN, ex.downN, keep
}

type secretUse struct{ id, header string }

// inject replaces placeholders with values in the header fields each
// secret names (Authorization unless it names others), and returns the
// uses. Any other header, the URL and the body go as they are: a
// placeholder the sandbox puts in a cookie or a query string reaches the
// upstream as the placeholder.
func inject(h http.Header, secrets []*csecret) []secretUse {
	var uses []secretUse
	for name, vals := range h {
		for _, sec := range secrets {
			if !sec.Headers[name] {
				continue
			}
			used := false
			for i, v := range vals {
				if strings.Contains(v, sec.Placeholder) {
					vals[i] = strings.ReplaceAll(v, sec.Placeholder, sec.Value)
					used = true
				}
			}
			if used {
				uses = append(uses, secretUse{sec.ID, name})
			}
		}
	}
	return uses
}

// scrubber keeps a brokered value from going back to the sandbox in a
// response: a response whose head or body shows a value in any form the
// reflector knows is refused (502) instead of relayed. A body is checked
// whole before any of it goes back when it fits in scanWhole; a longer one
// is checked as it streams, and the connection is cut at the first value
// found, before the window that holds it goes back. A gzip or zlib body
// (whatever its Content-Encoding says) is inflated and checked too.
type scrubber struct {
	rf   *reflector
	host string
	// refusal, once set, is why the response was refused or cut.
	refusal string
}

const (
	scanWhole      = 1 << 20  // bodies up to this are checked whole, then relayed
	scanCompressed = 8 << 20  // a compressed body is read whole up to this
	scanInflated   = 32 << 20 // and checked up to this size inflated
)

// inflateSlots bounds the compressed bodies being inflated and checked at
// once, daemon-wide: each takes up to three layers of scanInflated bytes
// (a few hundred bytes of nested gzip are enough to ask for them) and a
// core while it runs. Half the CPUs, 2 to 8.
var inflateSlots = make(chan struct{}, min(max(runtime.NumCPU()/2, 2), 8))

// errReflected cuts a streamed body that showed a value.
var errReflected = errors.New("the response showed a brokered secret; the rest is not relayed")

func newScrubber(secrets []*csecret, host string) *scrubber {
	rf := newReflector(secrets)
	if rf == nil {
		return nil
	}
	return &scrubber{rf: rf, host: host}
}

// text hides an error message that quotes a value.
func (sc *scrubber) text(msg string) string {
	if _, _, ok := sc.rf.find([]byte(msg)); ok {
		return "the upstream's answer showed a brokered secret (not quoted)"
	}
	return msg
}

func (sc *scrubber) response(resp *http.Response) {
	// The upstream's reason phrase and trailers are not relayed: the
	// standard phrase goes back, and no trailers.
	resp.Status = fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	resp.Trailer = nil
	if id, form, ok := sc.rf.find(headText(resp)); ok {
		sc.refuse(resp, id, form, "head")
		return
	}
	if resp.Body == nil || resp.Body == http.NoBody {
		return
	}
	if !identityOnly(resp.Header.Values("Content-Encoding")) {
		// The upstream compressed anyway although asked not to: refuse
		// rather than guess at its encoding.
		sc.refusal = "a compressed response (Content-Encoding) from a host with a brokered secret is not relayed"
		replaceWith502(resp, sc.refusal)
		return
	}
	buf, eof, err := readUpTo(resp.Body, scanWhole)
	if err == nil && !eof && compressed(buf) {
		var more []byte
		more, eof, err = readUpTo(resp.Body, scanCompressed-len(buf))
		buf = append(buf, more...)
		if err == nil && !eof {
			sc.refusal = fmt.Sprintf("a compressed body over %d bytes from a host with a brokered secret cannot be checked", scanCompressed)
			replaceWith502(resp, sc.refusal)
			return
		}
	}
	if err != nil {
		sc.refusal = "the response body could not be read: " + sc.text(err.Error())
		replaceWith502(resp, sc.refusal)
		return
	}
	if compressed(buf) {
		// Inflating takes up to three layers of scanInflated: at most
		// inflateSlots of them at once in the daemon, whatever the
		// number of connections and sandboxes asking.
		inflateSlots <- struct{}{}
		defer func() { <-inflateSlots }()
	}
	if id, form, ok := sc.checkBody(buf, 0); ok {
		sc.refuse(resp, id, form, "body")
		return
	} else if form != "" {
		sc.refusal = form
		replaceWith502(resp, form)
		return
	}
	orig := resp.Body
	resp.Header.Del("Content-Length")
	resp.TransferEncoding = nil
	if eof {
		resp.Body = readCloser{bytes.NewReader(buf), orig}
		resp.ContentLength = int64(len(buf))
		return
	}
	keep := min(len(buf), sc.rf.span)
	resp.Body = &reflectReader{sc: sc, r: orig, out: buf[:len(buf)-keep], carry: bytes.Clone(buf[len(buf)-keep:])}
	resp.ContentLength = -1
	if resp.ProtoAtLeast(1, 1) {
		resp.TransferEncoding = []string{"chunked"}
	} else {
		resp.Close = true
	}
}

// checkBody looks for a value in a whole body and, when it is compressed,
// in what it inflates to (up to three layers). A body that cannot be
// checked gives ok false and the reason in form.
func (sc *scrubber) checkBody(b []byte, depth int) (id, form string, ok bool) {
	if id, form, ok := sc.rf.findAll(b); ok {
		return id, form, true
	}
	if !compressed(b) {
		return "", "", false
	}
	if depth == 3 {
		return "", "a body compressed more than three times cannot be checked", false
	}
	plain, err := inflate(b, scanInflated)
	if errors.Is(err, errTooLarge) {
		return "", fmt.Sprintf("a compressed body inflating to over %d bytes cannot be checked", scanInflated), false
	}
	// A corrupt stream is checked as far as it inflates: a client cannot
	// read further either.
	id, form, ok = sc.checkBody(plain, depth+1)
	if ok {
		form = "gzip/zlib, " + form
	}
	return id, form, ok
}

func (sc *scrubber) refuse(resp *http.Response, id, form, where string) {
	sc.refusal = fmt.Sprintf("the response from %s showed brokered secret %s in its %s (%s); it is not relayed", sc.host, id, where, form)
	replaceWith502(resp, sc.refusal)
}

func replaceWith502(resp *http.Response, msg string) {
	if resp.Body != nil {
		resp.Body.Close()
	}
	body := "airlock egress: " + msg + " (rule " + RuleReflected + ")\n"
	resp.Body = io.NopCloser(strings.NewReader(body))
	resp.StatusCode, resp.Status = http.StatusBadGateway, "502 Bad Gateway"
	resp.Header = http.Header{"Content-Type": {"text/plain; charset=utf-8"}, "X-Airlock-Rule": {RuleReflected}}
	resp.ContentLength = int64(len(body))
	resp.TransferEncoding = nil
	resp.Close = true
}

// headText is the response head as the sandbox would see it.
func headText(resp *http.Response) []byte {
	var b bytes.Buffer
	b.WriteString(resp.Status)
	for name, vals := range resp.Header {
		for _, v := range vals {
			fmt.Fprintf(&b, "\n%s: %s", name, v)
		}
	}
	return b.Bytes()
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

// readUpTo reads r until EOF or n bytes; eof says whether r ended.
func readUpTo(r io.Reader, n int) (b []byte, eof bool, err error) {
	b, err = io.ReadAll(io.LimitReader(r, int64(n)+1))
	if err != nil {
		return nil, false, err
	}
	if len(b) > n {
		// one byte too many: r goes on; give the byte back as data
		return b, false, nil
	}
	return b, true, nil
}

type readCloser struct {
	io.Reader
	c io.Closer
}

func (r readCloser) Close() error { return r.c.Close() }

// reflectReader relays a long body, checking each window of it (with the
// last span bytes of the one before) before it goes back.
type reflectReader struct {
	sc    *scrubber
	r     io.ReadCloser
	carry []byte // checked, held back as the next window's overlap
	out   []byte // checked, not yet returned
	eof   bool
	rerr  error
}

func (s *reflectReader) Close() error { return s.r.Close() }

func (s *reflectReader) Read(p []byte) (int, error) {
	for len(s.out) == 0 {
		if s.eof {
			if len(s.carry) > 0 {
				s.out, s.carry = s.carry, nil
				continue
			}
			return 0, s.rerr
		}
		buf := make([]byte, 32<<10)
		n, err := s.r.Read(buf)
		win := append(s.carry, buf[:n]...)
		if id, form, ok := s.sc.rf.find(win); ok {
			s.sc.refusal = fmt.Sprintf("the response from %s showed brokered secret %s in its body (%s); the connection was cut there", s.sc.host, id, form)
			s.carry, s.eof, s.rerr = nil, true, errReflected
			return 0, errReflected
		}
		if err != nil {
			s.out, s.carry, s.eof, s.rerr = win, nil, true, err
			continue
		}
		keep := min(len(win), s.sc.rf.span)
		s.out, s.carry = win[:len(win)-keep], bytes.Clone(win[len(win)-keep:])
	}
	n := copy(p, s.out)
	s.out = s.out[n:]
	return n, nil
}
