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

	"github.com/airlock-dev/airlock/internal/egress/h1"
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
		h1.WriteRefusal(c, http.StatusTooManyRequests, rule, reason)
		c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		io.CopyN(io.Discard, c, 16<<10)
		return
	}
	setSendBuffer(c, s.cfg.SandboxSendBuffer)
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
	upLim    *h1.HeadLimiter
	upTarget Target
	upAddr   netip.Addr
	upStop   func() bool

	// toldUp and toldDown are the bytes of the tunnel already told to
	// the quota (a brokered tunnel's exchanges, as each ends).
	toldUp, toldDown int64
}

func (pc *proxyConn) event(kind EventKind) Event {
	return Event{Kind: kind, Source: pc.who, Conn: pc.id}
}

func (pc *proxyConn) serve() {
	for n := 0; ; n++ {
		pc.c.SetReadDeadline(time.Now().Add(pc.s.cfg.HeaderTimeout))
		raw, err := h1.PeekHead(pc.br, pc.s.cfg.MaxHeaderBytes)
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
		h, err := h1.ParseHead(raw)
		if err != nil {
			pc.refuseMalformed("", err)
			return
		}
		rt, err := h1.ParseProxyTarget(h)
		if err != nil {
			pc.refuseMalformed(h.Method, err)
			return
		}
		if h.Method == "CONNECT" {
			if len(h.Values("Content-Length")) > 0 || len(h.Values("Transfer-Encoding")) > 0 {
				pc.refuseMalformed(h.Method, h1.BadHead("CONNECT with a body"))
				return
			}
			pc.br.Discard(len(raw))
			pc.connect(rt.Target)
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
	h1.WriteRefusal(w, http.StatusTooManyRequests, rule, reason)
	return false
}

// refuseMalformed answers and records a request that could not be parsed.
func (pc *proxyConn) refuseMalformed(method string, err error) {
	code := http.StatusBadRequest
	if errors.Is(err, h1.ErrHeadTooLarge) {
		code = http.StatusRequestHeaderFieldsTooLarge
	}
	kind := KindRequest
	if method == "CONNECT" {
		kind = KindConnect
	}
	ev := pc.event(kind)
	ev.Method, ev.Decision, ev.Rule, ev.Reason = method, "deny", RuleParse, err.Error()
	pc.s.record(pc.ctx, ev)
	h1.WriteRefusal(pc.c, code, RuleParse, err.Error())
}

// refusalCode is the status for a refused decision.
func refusalCode(rule string) int {
	switch rule {
	case RuleResolve:
		return http.StatusBadGateway
	case RuleAudit:
		return http.StatusServiceUnavailable
	case RuleQuota:
		return quotaStatus
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
	d := s.quotaDecision(pc.who.SandboxID, s.decide(pc.ctx, pol, t, modeConnect, "ip"))
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
		h1.WriteRefusal(pc.c, refusalCode(d.rule), d.rule, d.reason)
		return
	}
	start := time.Now()
	end := pc.event(KindClose)
	end.Method, end.Host, end.Port = "CONNECT", t.Host, t.Port
	var meter *tunnelMeter // the relay's, telling the quota as it goes
	defer func() {
		toldUp, toldDown := pc.toldUp, pc.toldDown
		if meter != nil {
			up, down, why := meter.end()
			toldUp, toldDown = toldUp+up, toldDown+down
			if why != "" {
				end.Decision, end.Rule, end.Reason = "deny", RuleQuota, why
			}
		}
		end.Duration = time.Since(start)
		s.record(context.WithoutCancel(pc.ctx), end)
		s.moved(pc.who.SandboxID, max(0, end.BytesUp-toldUp), max(0, end.BytesDown-toldDown))
	}()
	up, addr, err := s.dial(pc.ctx, d.addrs, t.Port)
	end.Addr = addr
	if err != nil {
		end.Error = err.Error()
		h1.WriteRefusal(pc.c, http.StatusBadGateway, d.rule, fmt.Sprintf("cannot connect to %s", t))
		return
	}
	defer up.Close()
	stop := context.AfterFunc(pc.ctx, func() { up.Close() })
	defer stop()
	if !pc.setLive(pol, t, modeConnect, addr) {
		end.Decision, end.Rule, end.Reason = "deny", RuleDefaultDeny, "the policy changed while connecting"
		h1.WriteRefusal(pc.c, http.StatusForbidden, RuleDefaultDeny, end.Reason)
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
		pc.serveBrokered(t, up, addr, src, &end)
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
			if reason := sniRefusal(pol, t, sni, addr); reason != "" {
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
	meter = pc.meterTunnel(up)
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
// tunnel to t at addr, or "" when it may: it names t, or another host that
// the policy allows on this port at addr (a deny rule's exceptions spare
// the name reached, so a name they spare cannot front for one they do
// not).
func sniRefusal(pol *compiled, t Target, sni string, addr netip.Addr) string {
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
	if _, reason, ok := pol.checkAddr(st, modeConnect, addr); !ok {
		return fmt.Sprintf("the TLS server name %s differs from the CONNECT target %s and is not allowed at %s: %s", st.Host, t.Host, addr, reason)
	}
	return ""
}

// relay copies both ways until both directions end, and returns the
// bytes sent up and down. The tunnel's bytes need no inspection here, so
// they never enter the daemon's memory: io.Copy takes TCPConn.ReadFrom
// or WriteTo, which splice(2) between the upstream's TCP socket and the
// sandbox's (TCP on the native backend, a unix stream socket on gVisor;
// the host's splice between them is sound, unlike gVisor's inside).
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

// setSendBuffer sets c's SO_SNDBUF to n (see Config.SandboxSendBuffer),
// when n > 0 and c is a socket (the sandbox's TCP connection on the
// native backend, the agent's unix socket on gVisor). A failure only
// leaves the kernel's default, which is correct, only dearer.
func setSendBuffer(c net.Conn, n int) {
	if sb, ok := c.(interface{ SetWriteBuffer(int) error }); ok && n > 0 {
		_ = sb.SetWriteBuffer(n)
	}
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
func (pc *proxyConn) forward(h *h1.Head, rt h1.RequestTarget) bool {
	s, t := pc.s, rt.Target
	pol := s.policy(pc.who.SandboxID)
	d := s.quotaDecision(pc.who.SandboxID, s.decide(pc.ctx, pol, t, modeHTTP, "ip"))
	ev := pc.event(KindRequest)
	ev.Method, ev.Host, ev.Port, ev.Path, ev.Addr = h.Method, t.Host, t.Port, pathOnly(rt.Path), firstAddr(d.addrs)
	ev.Decision, ev.Rule, ev.Reason = decisionWord(d.allow), d.rule, d.reason
	if err := s.record(pc.ctx, ev); err != nil {
		writeUnrecorded(pc.c, err)
		return false
	}
	if !d.allow {
		h1.WriteRefusal(pc.c, refusalCode(d.rule), d.rule, d.reason)
		return false
	}
	req, err := http.ReadRequest(pc.br)
	if err != nil {
		h1.WriteRefusal(pc.c, http.StatusBadRequest, RuleParse, err.Error())
		return false
	}
	start := time.Now()
	res := pc.event(KindResponse)
	res.Method, res.Host, res.Port, res.Path = h.Method, t.Host, t.Port, ev.Path
	defer func() {
		res.Duration = time.Since(start)
		s.record(context.WithoutCancel(pc.ctx), res)
		s.moved(pc.who.SandboxID, res.BytesUp, res.BytesDown)
	}()
	if pc.up == nil || pc.upTarget != t || !containsAddr(d.addrs, pc.upAddr) {
		pc.closeUpstream()
		up, addr, err := s.dial(pc.ctx, d.addrs, t.Port)
		res.Addr = addr
		if err != nil {
			res.Error = err.Error()
			h1.WriteRefusal(pc.c, http.StatusBadGateway, d.rule, fmt.Sprintf("cannot connect to %s", t))
			return false
		}
		pc.up, pc.upTarget, pc.upAddr = up, t, addr
		pc.upBr, pc.upLim = h1.UpstreamReader(up)
		pc.upStop = context.AfterFunc(pc.ctx, func() { up.Close() })
	}
	res.Addr = pc.upAddr
	if !pc.setLive(pol, t, modeHTTP, pc.upAddr) {
		res.Error = "the policy changed while connecting"
		h1.WriteRefusal(pc.c, http.StatusForbidden, RuleDefaultDeny, res.Error)
		return false
	}
	req.URL = &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery}
	req.Host = h1.HostHeader(t, 80)
	ex := h1.Exchange{Req: req, Client: pc.c, Up: pc.up, UpBr: pc.upBr, UpLim: pc.upLim}
	keep := ex.Run()
	res.Status, res.BytesUp, res.BytesDown = ex.Status, ex.UpN, ex.DownN
	if ex.Err != nil {
		res.Error = h1.ClipError(ex.Err.Error())
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
