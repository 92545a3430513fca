package egress

import (
	"bufio"
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
	"time"

	"github.com/airlock-dev/airlock/internal/egress/broker"
	"github.com/airlock-dev/airlock/internal/egress/h1"
	"github.com/airlock-dev/airlock/internal/errdefs"
)

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
	return sb.ca.PEM(sandboxID, s.cfg.Now(), s.cfg.CALifetime)
}

// prefixConn reads from r (bytes already buffered, then the connection)
// and writes to the connection.
type prefixConn struct {
	net.Conn
	r io.Reader
}

func (c *prefixConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// serveBrokered serves a tunnel to a host with brokered secrets: it
// terminates the sandbox's TLS with a certificate from the sandbox's CA,
// opens real TLS to the checked address (verified against
// Config.UpstreamRoots), and forwards HTTP/1.1 requests one by one,
// putting the secrets' values in place of their placeholders in the
// headers (broker.Inject) and refusing a response that shows a value
// (broker.Scrubber).
func (pc *proxyConn) serveBrokered(t Target, up net.Conn, addr netip.Addr, src io.Reader, end *Event) {
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
			return sb.ca.Leaf(pc.who.SandboxID, t.Host, s.cfg.Now(), s.cfg.CALifetime)
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
		h1.WriteRefusal(cl, http.StatusBadGateway, RuleUpstream, fmt.Sprintf("TLS to %s failed (its certificate was not accepted?)", t.Host))
		return
	}
	cbr := bufio.NewReaderSize(cl, s.cfg.MaxHeaderBytes+4096)
	ubr, ulim := h1.UpstreamReader(upc)
	for n := 0; ; n++ {
		pc.c.SetReadDeadline(time.Now().Add(s.cfg.HeaderTimeout))
		raw, err := h1.PeekHead(cbr, s.cfg.MaxHeaderBytes)
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
		h, err := h1.ParseHead(raw)
		if err == nil {
			err = h1.CheckTunnelTarget(h, t)
		}
		if err != nil {
			method := ""
			if h != nil {
				method = h.Method
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
	if errors.Is(err, h1.ErrHeadTooLarge) {
		code = http.StatusRequestHeaderFieldsTooLarge
	}
	h1.WriteRefusal(cl, code, RuleParse, err.Error())
}

// brokerOne forwards one request of a brokered tunnel. It returns the
// bytes each way and whether the tunnel may carry another.
func (pc *proxyConn) brokerOne(cl net.Conn, cbr *bufio.Reader, upc net.Conn, ubr *bufio.Reader, ulim *h1.HeadLimiter, h *h1.Head, t Target, addr netip.Addr) (int64, int64, bool) {
	s := pc.s
	// The policy may have changed since the CONNECT: check again, and
	// take the secrets as they are now.
	pol := s.policy(pc.who.SandboxID)
	ev := pc.event(KindRequest)
	ev.Method, ev.Host, ev.Port, ev.Addr = h.Method, t.Host, t.Port, addr
	if u, err := url.ParseRequestURI(h.Target); err == nil {
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
	if allowed && s.cfg.Quota != nil {
		// each request of a kept-alive tunnel is a destination reached again
		if why := s.cfg.Quota.AdmitEgress(pc.who.SandboxID); why != "" {
			allowed = false
			ev.Decision, ev.Rule, ev.Reason = "deny", RuleQuota, why
		}
	}
	if err := s.record(pc.ctx, ev); err != nil {
		writeUnrecorded(cl, err)
		return 0, 0, false
	}
	if !allowed {
		h1.WriteRefusal(cl, refusalCode(ev.Rule), ev.Rule, ev.Reason)
		return 0, 0, false
	}
	req, err := http.ReadRequest(cbr)
	if err != nil {
		h1.WriteRefusal(cl, http.StatusBadRequest, RuleParse, err.Error())
		return 0, 0, false
	}
	secrets := pol.secretsFor(t.Host)
	for _, u := range broker.Inject(req.Header, secrets) {
		se := pc.event(KindSecret)
		se.Method, se.Host, se.Port, se.Addr, se.Path = h.Method, t.Host, t.Port, addr, ev.Path
		se.Secret, se.Header, se.Decision = u.Secret, u.Header, "allow"
		if err := s.record(pc.ctx, se); err != nil {
			writeUnrecorded(cl, err)
			return 0, 0, false
		}
	}
	start := time.Now()
	req.URL = &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery}
	if h.Target == "*" {
		req.URL = &url.URL{Path: "*"}
	}
	req.Host = h1.HostHeader(t, 443)
	ex := h1.Exchange{Req: req, Client: cl, Up: upc, UpBr: ubr, UpLim: ulim}
	sc := broker.NewScrubber(secrets, t.Host)
	if sc != nil {
		sc.Request(req.Header)
		ex.Scrub = sc.Response
		ex.ScrubText = sc.Text
	}
	keep := ex.Run()
	res := pc.event(KindResponse)
	res.Method, res.Host, res.Port, res.Addr, res.Path = h.Method, t.Host, t.Port, addr, ev.Path
	res.Status, res.BytesUp, res.BytesDown, res.Duration = ex.Status, ex.UpN, ex.DownN, time.Since(start)
	if ex.Err != nil {
		res.Error = h1.ClipError(ex.Err.Error())
	}
	if sc != nil && sc.Refusal() != "" {
		res.Decision, res.Rule, res.Reason = "deny", RuleReflected, sc.Refusal()
		keep = false
	}
	s.record(context.WithoutCancel(pc.ctx), res)
	s.moved(pc.who.SandboxID, ex.UpN, ex.DownN)
	pc.toldUp, pc.toldDown = pc.toldUp+ex.UpN, pc.toldDown+ex.DownN
	return ex.UpN, ex.DownN, keep
}
