package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"time"
)

// Serve accepts connections on ln and serves each with ServeProxyConn as
// coming from who, until ctx ends or ln fails. It is for one-shot
// sandboxes and tests; the daemon passes connections in one by one.
func (s *Service) Serve(ctx context.Context, ln net.Listener, who Source) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		go s.ServeProxyConn(ctx, c, who)
	}
}

// ServeProxyConn serves one connection from a sandbox that speaks the HTTP
// proxy protocol (CONNECT, or plain HTTP with absolute http:// URIs and
// keep-alive), on behalf of who. It blocks until the connection is done
// and closes c. Call it in a goroutine per connection. Cancelling ctx, the
// kill switch, RemoveSandbox, or a policy change that no longer allows the
// destination cut the connection.
func (s *Service) ServeProxyConn(ctx context.Context, c net.Conn, who Source) {
	s.ServeProxyConnOf(ctx, c, who.SandboxID, func() Source { return who })
}

// ServeProxyConnOf is ServeProxyConn with the source found only once the
// connection is within the sandbox's rate and budget (finding the
// command a connection came from has a cost that a flood must not make
// the daemon pay); a refused connection is counted under the sandbox.
func (s *Service) ServeProxyConnOf(ctx context.Context, c net.Conn, sandboxID string, source func() Source) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	if ok, rule, reason := s.admit(sandboxID, false); !ok {
		s.refuse(ctx, Event{Kind: KindConnect, Source: Source{SandboxID: sandboxID}, Decision: "deny", Rule: rule, Reason: reason}, true)
		// Answer once the request has begun (a client takes an answer
		// before it wrote for a stale connection's), then read what else
		// came, so that closing does not reset the connection before the
		// client reads the answer. Both briefly and bounded.
		c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		c.Read(make([]byte, 4096))
		writeRefusal(c, http.StatusTooManyRequests, rule, reason)
		c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		io.CopyN(io.Discard, c, 16<<10)
		return
	}
	who := source()
	// Cutting closes the sandbox's side at once (AfterFunc's close runs in
	// a goroutine of its own): once RemoveSandbox, the kill switch or a
	// policy change returns, nothing more passes.
	tr, untrack := s.track(who.SandboxID, func() { cancel(); c.Close() })
	defer untrack()
	pc := &proxyConn{
		s: s, ctx: ctx, c: c, who: who, tr: tr, id: s.connSeq.Add(1),
		br: bufio.NewReaderSize(c, s.cfg.MaxHeaderBytes+4096),
	}
	defer pc.closeUpstream()
	pc.serve()
}

type proxyConn struct {
	s   *Service
	ctx context.Context
	c   net.Conn
	br  *bufio.Reader
	who Source
	tr  *tracked
	id  uint64

	// The upstream of plain HTTP requests, kept across keep-alive
	// requests to the same destination.
	up       net.Conn
	upBr     *bufio.Reader
	upLim    *headLimiter
	upTarget Target
	upAddr   netip.Addr
	upStop   func() bool
}

func (pc *proxyConn) event(kind EventKind) Event {
	return Event{Kind: kind, Source: pc.who, Conn: pc.id}
}

func (pc *proxyConn) serve() {
	for n := 0; ; n++ {
		pc.c.SetReadDeadline(time.Now().Add(pc.s.cfg.HeaderTimeout))
		raw, err := peekHead(pc.br, pc.s.cfg.MaxHeaderBytes)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, net.ErrClosed) {
				return // the client is done (or idle too long) between requests
			}
			pc.refuseMalformed("", err)
			return
		}
		if n > 0 && !pc.admitRequest(pc.c) {
			return
		}
		pc.c.SetReadDeadline(time.Time{})
		h, err := parseHead(raw)
		if err != nil {
			pc.refuseMalformed("", err)
			return
		}
		rt, err := parseProxyTarget(h)
		if err != nil {
			pc.refuseMalformed(h.method, err)
			return
		}
		if h.method == "CONNECT" {
			if len(h.values("Content-Length")) > 0 || len(h.values("Transfer-Encoding")) > 0 {
				pc.refuseMalformed(h.method, badHead("CONNECT with a body"))
				return
			}
			pc.br.Discard(len(raw))
			pc.connect(rt.t)
			return
		}
		if !pc.forward(h, rt) {
			return
		}
	}
}

// admitRequest takes a request token for a request after the
// connection's first (the connection's own token paid for that one); a
// refusal is counted like any other, answered 429 on w, and ends the
// connection.
func (pc *proxyConn) admitRequest(w io.Writer) bool {
	ok, rule, reason := pc.s.admitRequest(pc.who.SandboxID)
	if ok {
		return true
	}
	e := pc.event(KindRequest)
	e.Decision, e.Rule, e.Reason = "deny", rule, reason
	pc.s.refuse(pc.ctx, e, true)
	writeRefusal(w, http.StatusTooManyRequests, rule, reason)
	return false
}

// refuseMalformed answers and records a request that could not be parsed.
func (pc *proxyConn) refuseMalformed(method string, err error) {
	code := http.StatusBadRequest
	if errors.Is(err, errHeadTooLarge) {
		code = http.StatusRequestHeaderFieldsTooLarge
	}
	kind := KindRequest
	if method == "CONNECT" {
		kind = KindConnect
	}
	ev := pc.event(kind)
	ev.Method, ev.Decision, ev.Rule, ev.Reason = method, "deny", RuleParse, err.Error()
	pc.s.record(pc.ctx, ev)
	writeRefusal(pc.c, code, RuleParse, err.Error())
}

// writeRefusal answers a refused request. rule is an id (no spaces or
// line breaks); msg goes only in the body.
func writeRefusal(w io.Writer, code int, rule, msg string) {
	body := "airlock egress: " + msg + " (rule " + rule + ")\n"
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nX-Airlock-Rule: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		code, http.StatusText(code), rule, len(body), body)
}

// refusalCode is the status for a refused decision.
func refusalCode(rule string) int {
	switch rule {
	case RuleResolve:
		return http.StatusBadGateway
	case RuleAudit:
		return http.StatusServiceUnavailable
	}
	return http.StatusForbidden
}

func firstAddr(addrs []netip.Addr) netip.Addr {
	if len(addrs) > 0 {
		return addrs[0]
	}
	return netip.Addr{}
}

func decisionWord(allow bool) string {
	if allow {
		return "allow"
	}
	return "deny"
}

// connect serves a CONNECT to t: decide, record, dial the checked address,
// then relay (checking the TLS ClientHello first) or broker.
func (pc *proxyConn) connect(t Target) {
	s := pc.s
	pol := s.policy(pc.who.SandboxID)
	d := s.decide(pc.ctx, pol, t, modeConnect, "ip")
	var secrets []*csecret
	if d.allow && !t.IsIP() {
		secrets = pol.secretsFor(t.Host)
	}
	ev := pc.event(KindConnect)
	ev.Method, ev.Host, ev.Port, ev.Addr = "CONNECT", t.Host, t.Port, firstAddr(d.addrs)
	ev.Decision, ev.Rule, ev.Reason = decisionWord(d.allow), d.rule, d.reason
	if err := s.record(pc.ctx, ev); err != nil {
		writeUnrecorded(pc.c, err)
		return
	}
	if !d.allow {
		writeRefusal(pc.c, refusalCode(d.rule), d.rule, d.reason)
		return
	}
	start := time.Now()
	end := pc.event(KindClose)
	end.Method, end.Host, end.Port = "CONNECT", t.Host, t.Port
	defer func() {
		end.Duration = time.Since(start)
		s.record(context.WithoutCancel(pc.ctx), end)
	}()
	up, addr, err := s.dial(pc.ctx, d.addrs, t.Port)
	end.Addr = addr
	if err != nil {
		end.Error = err.Error()
		writeRefusal(pc.c, http.StatusBadGateway, d.rule, fmt.Sprintf("cannot connect to %s", t))
		return
	}
	defer up.Close()
	stop := context.AfterFunc(pc.ctx, func() { up.Close() })
	defer stop()
	if !pc.setLive(pol, t, modeConnect, addr) {
		end.Decision, end.Rule, end.Reason = "deny", RuleDefaultDeny, "the policy changed while connecting"
		writeRefusal(pc.c, http.StatusForbidden, RuleDefaultDeny, end.Reason)
		return
	}
	if _, err := io.WriteString(pc.c, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		end.Error = err.Error()
		return
	}
	// Bytes the client sent after the CONNECT head without waiting for
	// our answer are still in br; after them, read c directly so that the
	// copy can splice.
	buffered, _ := pc.br.Peek(pc.br.Buffered())
	pending := bytes.NewReader(bytes.Clone(buffered))
	src := io.MultiReader(pending, pc.c)

	if len(secrets) > 0 {
		pc.broker(t, up, addr, src, &end)
		return
	}
	var hello []byte
	if !d.opaque {
		pc.c.SetReadDeadline(time.Now().Add(s.cfg.HelloTimeout))
		sni, raw, err := peekHello(src)
		pc.c.SetReadDeadline(time.Time{})
		end.SNI = sni
		if err != nil {
			end.Decision, end.Rule = "deny", RuleSNI
			end.Reason = "the tunnel did not start with a TLS ClientHello (an opaque rule allows other protocols): " + err.Error()
			return
		}
		if sni != "" {
			if reason := sniRefusal(pol, t, sni); reason != "" {
				end.Decision, end.Rule, end.Reason = "deny", RuleSNI, reason
				return
			}
		}
		hello = raw
	}
	if len(hello) > 0 {
		if _, err := up.Write(hello); err != nil {
			end.Error = err.Error()
			return
		}
	}
	early, err := io.Copy(up, pending)
	if err != nil {
		end.Error = err.Error()
		return
	}
	end.BytesUp, end.BytesDown = relay(pc.c, up)
	end.BytesUp += int64(len(hello)) + early
}

// setLive marks the connection as connected to t at addr, so that policy
// changes re-check it, and re-checks it now if the policy changed since
// pol was decided on (SetPolicy only re-checks live connections). It
// reports whether the connection may go on.
func (pc *proxyConn) setLive(pol *compiled, t Target, m mode, addr netip.Addr) bool {
	pc.tr.set(t, m, addr)
	if cur := pc.s.policy(pc.who.SandboxID); cur != pol && !pc.s.stillAllowed(cur, t, m, addr) {
		return false
	}
	return true
}

// sniRefusal returns why a ClientHello's server name may not go through a
// tunnel to t, or "" when it may: it names t, or another host that the
// policy allows on this port.
func sniRefusal(pol *compiled, t Target, sni string) string {
	st, err := ParseTarget(sni, t.Port)
	if err != nil {
		return fmt.Sprintf("TLS server name %q: %v", sni, err)
	}
	if st.Host == t.Host {
		return ""
	}
	st.Port = t.Port
	if _, ok := pol.decideName(st, modeConnect); !ok {
		return fmt.Sprintf("the TLS server name %s differs from the CONNECT target %s and is not allowed", st.Host, t.Host)
	}
	return ""
}

// relay copies both ways until both directions end, and returns the
// bytes sent up and down. Between two *net.TCPConn, io.Copy splices.
func relay(client, up net.Conn) (upN, downN int64) {
	done := make(chan int64, 1)
	go func() {
		n, err := io.Copy(client, up)
		if err != nil {
			client.Close()
			up.Close()
		} else {
			closeWrite(client)
		}
		done <- n
	}()
	upN, err := io.Copy(up, client)
	if err != nil {
		client.Close()
		up.Close()
	} else {
		closeWrite(up)
	}
	return upN, <-done
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	c.Close()
}

// readOnlyConn lets crypto/tls parse a ClientHello from a reader without
// being able to answer.
type readOnlyConn struct {
	net.Conn // nil; only the methods below are used
	r        io.Reader
}

func (c readOnlyConn) Read(p []byte) (int, error)       { return c.r.Read(p) }
func (c readOnlyConn) Write(p []byte) (int, error)      { return 0, io.ErrClosedPipe }
func (c readOnlyConn) Close() error                     { return nil }
func (c readOnlyConn) SetDeadline(time.Time) error      { return nil }
func (c readOnlyConn) SetReadDeadline(time.Time) error  { return nil }
func (c readOnlyConn) SetWriteDeadline(time.Time) error { return nil }
func (c readOnlyConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c readOnlyConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }

var errPeeked = errors.New("peeked")

// peekHello reads a TLS ClientHello from r and returns its server name and
// every byte read, which the caller must forward.
func peekHello(r io.Reader) (sni string, raw []byte, err error) {
	var buf bytes.Buffer
	var hello *tls.ClientHelloInfo
	srv := tls.Server(readOnlyConn{r: io.TeeReader(r, &buf)}, &tls.Config{
		GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			hello = h
			return nil, errPeeked
		},
	})
	herr := srv.Handshake()
	if hello == nil {
		if herr == nil {
			herr = errors.New("no ClientHello")
		}
		return "", buf.Bytes(), herr
	}
	return hello.ServerName, buf.Bytes(), nil
}

// hostHeader is t as a Host field value: the port only when it is not
// defPort.
func hostHeader(t Target, defPort int) string {
	if t.Port == defPort {
		if strings.Contains(t.Host, ":") {
			return "[" + t.Host + "]"
		}
		return t.Host
	}
	return t.String()
}

// hopByHop are the fields a proxy must not forward (RFC 9110 7.6.1), and
// Proxy-Authorization, which is for us.
var hopByHop = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func removeHopByHop(h http.Header) {
	for _, v := range h.Values("Connection") {
		for name := range strings.SplitSeq(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopByHop {
		h.Del(name)
	}
}

func pathOnly(p string) string {
	if i := strings.IndexByte(p, '?'); i >= 0 {
		return p[:i]
	}
	return p
}

func (pc *proxyConn) closeUpstream() {
	if pc.up != nil {
		pc.upStop()
		pc.up.Close()
		pc.up, pc.upBr, pc.upLim = nil, nil, nil
	}
}

// forward serves one plain HTTP request; it reports whether the client
// connection may carry another.
func (pc *proxyConn) forward(h *head, rt requestTarget) bool {
	s, t := pc.s, rt.t
	pol := s.policy(pc.who.SandboxID)
	d := s.decide(pc.ctx, pol, t, modeHTTP, "ip")
	ev := pc.event(KindRequest)
	ev.Method, ev.Host, ev.Port, ev.Path, ev.Addr = h.method, t.Host, t.Port, pathOnly(rt.path), firstAddr(d.addrs)
	ev.Decision, ev.Rule, ev.Reason = decisionWord(d.allow), d.rule, d.reason
	if err := s.record(pc.ctx, ev); err != nil {
		writeUnrecorded(pc.c, err)
		return false
	}
	if !d.allow {
		writeRefusal(pc.c, refusalCode(d.rule), d.rule, d.reason)
		return false
	}
	req, err := http.ReadRequest(pc.br)
	if err != nil {
		writeRefusal(pc.c, http.StatusBadRequest, RuleParse, err.Error())
		return false
	}
	start := time.Now()
	res := pc.event(KindResponse)
	res.Method, res.Host, res.Port, res.Path = h.method, t.Host, t.Port, ev.Path
	defer func() {
		res.Duration = time.Since(start)
		s.record(context.WithoutCancel(pc.ctx), res)
	}()
	if pc.up == nil || pc.upTarget != t || !containsAddr(d.addrs, pc.upAddr) {
		pc.closeUpstream()
		up, addr, err := s.dial(pc.ctx, d.addrs, t.Port)
		res.Addr = addr
		if err != nil {
			res.Error = err.Error()
			writeRefusal(pc.c, http.StatusBadGateway, d.rule, fmt.Sprintf("cannot connect to %s", t))
			return false
		}
		pc.up, pc.upTarget, pc.upAddr = up, t, addr
		pc.upBr, pc.upLim = upstreamReader(up)
		pc.upStop = context.AfterFunc(pc.ctx, func() { up.Close() })
	}
	res.Addr = pc.upAddr
	if !pc.setLive(pol, t, modeHTTP, pc.upAddr) {
		res.Error = "the policy changed while connecting"
		writeRefusal(pc.c, http.StatusForbidden, RuleDefaultDeny, res.Error)
		return false
	}
	req.URL = &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery}
	req.Host = hostHeader(t, 80)
	ex := exchange{req: req, client: pc.c, up: pc.up, upBr: pc.upBr, upLim: pc.upLim}
	keep := ex.run()
	res.Status, res.BytesUp, res.BytesDown = ex.status, ex.upN, ex.downN
	if ex.err != nil {
		res.Error = clipError(ex.err.Error())
	}
	if !keep {
		pc.closeUpstream()
	}
	return keep
}

func containsAddr(addrs []netip.Addr, a netip.Addr) bool {
	for _, x := range addrs {
		if x == a {
			return true
		}
	}
	return false
}

// exchange forwards one parsed request upstream and its response back.
type exchange struct {
	req    *http.Request
	client io.Writer
	up     io.Writer
	upBr   *bufio.Reader
	upLim  *headLimiter // bounds what a response head may read of the upstream
	// scrub, when set, rewrites the response before it goes back, and
	// scrubText an error message that may quote the upstream.
	scrub     func(*http.Response)
	scrubText func(string) string

	status     int
	upN, downN int64
	err        error
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// run reports whether both connections may carry another request.
func (ex *exchange) run() bool {
	req := ex.req
	removeHopByHop(req.Header)
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""} // Write would add Go's own
	}
	if strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
		// Answer for the upstream so the client sends its body now: we
		// forward requests whole.
		req.Header.Del("Expect")
		if _, err := io.WriteString(ex.client, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
			ex.err = err
			return false
		}
	}
	upw := &countingWriter{w: ex.up}
	bw := bufio.NewWriterSize(upw, 32<<10)
	if err := req.Write(bw); err != nil {
		ex.err = fmt.Errorf("send request: %w", err)
		ex.fail()
		return false
	}
	if err := bw.Flush(); err != nil {
		ex.err = fmt.Errorf("send request: %w", err)
		ex.fail()
		return false
	}
	ex.upN = upw.n
	var resp *http.Response
	ex.upLim.arm() // the interim answers' heads count too
	for {
		var err error
		resp, err = http.ReadResponse(ex.upBr, req)
		if err != nil {
			ex.err = fmt.Errorf("read response: %w", err)
			ex.fail()
			return false
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		resp.Body.Close() // interim answers (100, 103) are not forwarded
	}
	ex.upLim.disarm()
	defer resp.Body.Close()
	ex.status = resp.StatusCode
	if resp.StatusCode == http.StatusSwitchingProtocols {
		ex.err = errors.New("upstream switched protocols, which the proxy does not relay")
		ex.fail()
		return false
	}
	removeHopByHop(resp.Header)
	if ex.scrub != nil {
		ex.scrub(resp)
	}
	cw := &countingWriter{w: ex.client}
	bw = bufio.NewWriterSize(cw, 32<<10)
	err := resp.Write(bw)
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	ex.downN = cw.n
	if err != nil {
		ex.err = fmt.Errorf("send response: %w", err)
		return false
	}
	return !req.Close && !resp.Close
}

// maxResponseHead bounds an upstream's response head (its status line
// and header fields, and any interim answers before them). Without it
// http.ReadResponse bounds neither a line nor the number of lines: an
// upstream of the sandbox's choosing could make the daemon hold an
// endless head in memory, and the error quoting it would be one event of
// that size.
const maxResponseHead = 1 << 20

var errResponseHeadTooLarge = fmt.Errorf("the upstream's response head is over %d bytes", maxResponseHead)

// headLimiter is the upstream connection under a bufio.Reader: while
// armed, reads past maxResponseHead fail.
type headLimiter struct {
	r    io.Reader
	left int64 // < 0: not armed
}

func upstreamReader(r io.Reader) (*bufio.Reader, *headLimiter) {
	l := &headLimiter{r: r, left: -1}
	return bufio.NewReader(l), l
}

func (l *headLimiter) Read(p []byte) (int, error) {
	if l.left < 0 {
		return l.r.Read(p)
	}
	if l.left == 0 {
		return 0, errResponseHeadTooLarge
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

func (l *headLimiter) arm() {
	if l != nil {
		l.left = maxResponseHead
	}
}

func (l *headLimiter) disarm() {
	if l != nil {
		l.left = -1
	}
}

// maxErrorText bounds an upstream error in the record (it may quote what
// the upstream sent).
const maxErrorText = 1024

func clipError(s string) string {
	if len(s) > maxErrorText {
		return s[:maxErrorText] + "... (cut)"
	}
	return s
}

// fail answers 502 when nothing has gone back yet.
func (ex *exchange) fail() {
	msg := ex.err.Error()
	if ex.scrubText != nil {
		msg = ex.scrubText(msg)
	}
	writeRefusal(ex.client, http.StatusBadGateway, RuleUpstream, msg)
}
