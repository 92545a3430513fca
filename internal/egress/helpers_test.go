package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/egress/broker"
)

// Tests send traffic only to loopback and to addresses of network
// namespaces they create (allowDial): safeDialer refuses anything else
// and fails the test, so a bug in a guard can never reach a real host.

type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][]netip.Addr
	asked   []string
}

func newResolver(kv ...string) *fakeResolver {
	r := &fakeResolver{answers: map[string][]netip.Addr{}}
	for i := 0; i+1 < len(kv); i += 2 {
		for a := range strings.SplitSeq(kv[i+1], ",") {
			r.answers[kv[i]] = append(r.answers[kv[i]], netip.MustParseAddr(a))
		}
	}
	return r
}

func (r *fakeResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, host)
	var out []netip.Addr
	for _, a := range r.answers[host] {
		if network == "ip" || (network == "ip4") == a.Unmap().Is4() {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return out, nil
}

func (r *fakeResolver) lookups() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.asked...)
}

type safeDialer struct {
	t      testing.TB
	mu     sync.Mutex
	extra  map[netip.Addr]bool // netns addresses a test made
	dialed []string
	never  bool // any dial fails the test
}

func (d *safeDialer) allowDial(a netip.Addr) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.extra == nil {
		d.extra = map[netip.Addr]bool{}
	}
	d.extra[a] = true
}

func (d *safeDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		d.t.Errorf("dialer got %q, not a checked address", address)
		return nil, err
	}
	d.mu.Lock()
	d.dialed = append(d.dialed, address)
	ok := !d.never && (ap.Addr().IsLoopback() || d.extra[ap.Addr()])
	d.mu.Unlock()
	if !ok {
		d.t.Errorf("the proxy dialed %s, which the test never allows", address)
		return nil, errors.New("test dialer: refused")
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, address)
}

func (d *safeDialer) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.dialed)
}

type recorder struct {
	mu     sync.Mutex
	events []Event
	fail   bool
}

func (r *recorder) Record(_ context.Context, e Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail {
		return errors.New("audit disk full")
	}
	r.events = append(r.events, e)
	return nil
}

func (r *recorder) all() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// find returns the events of a kind, waiting a little for close and
// response events, which are recorded as connections end.
func (r *recorder) find(t testing.TB, kind EventKind, n int) []Event {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		var out []Event
		for _, e := range r.all() {
			if e.Kind == kind {
				out = append(out, e)
			}
		}
		if len(out) >= n || time.Now().After(deadline) {
			if len(out) < n {
				t.Fatalf("want %d %s events, have %d: %+v", n, kind, len(out), r.all())
			}
			return out
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (r *recorder) json(t testing.TB) string {
	b, err := json.Marshal(r.all())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type env struct {
	svc   *Service
	rec   *recorder
	res   *fakeResolver
	dial  *safeDialer
	proxy string // host:port of the proxy listener
	who   Source
}

// newEnv starts a service with a proxy listener on loopback serving the
// sandbox "sb1".
func newEnv(t testing.TB, res *fakeResolver, cfg Config) *env {
	t.Helper()
	e := &env{rec: &recorder{}, res: res, dial: &safeDialer{t: t}, who: Source{SandboxID: "sb1", TaskID: "task1", ExecID: "exec1"}}
	cfg.Recorder, cfg.Resolver, cfg.Dialer = e.rec, res, e.dial
	if cfg.HelloTimeout == 0 {
		cfg.HelloTimeout = 2 * time.Second
	}
	svc, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.svc = svc
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { svc.Serve(ctx, ln, e.who); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	e.proxy = ln.Addr().String()
	return e
}

func (e *env) setPolicy(t testing.TB, p Policy) {
	t.Helper()
	if err := e.svc.SetPolicy(e.who.SandboxID, p); err != nil {
		t.Fatal(err)
	}
}

// send writes a raw request to the proxy and returns the response.
func (e *env) send(t testing.TB, raw string) (*http.Response, net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", e.proxy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no response to %q: %v", raw, err)
	}
	c.SetDeadline(time.Time{})
	return resp, c, br
}

func (e *env) connect(t testing.TB, target string) (*http.Response, net.Conn) {
	t.Helper()
	resp, c, br := e.send(t, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
	if br.Buffered() > 0 && resp.StatusCode == 200 {
		t.Fatalf("proxy sent bytes after 200")
	}
	return resp, c
}

func ruleOf(resp *http.Response) string { return resp.Header.Get("X-Airlock-Rule") }

// client is an HTTP client going through the proxy, trusting roots.
func (e *env) client(roots *x509.CertPool) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:             func(*http.Request) (*url.URL, error) { return url.Parse("http://" + e.proxy) },
			TLSClientConfig:   &tls.Config{RootCAs: roots},
			DisableKeepAlives: false,
		},
		Timeout: 10 * time.Second,
	}
}

// testCA makes certificates for test names and the pool that trusts them.
type testCA struct {
	h    broker.CA
	pool *x509.CertPool
}

func newTestCA(t testing.TB) *testCA {
	ca := &testCA{}
	pem, err := ca.h.PEM("test-upstreams", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ca.pool = x509.NewCertPool()
	if !ca.pool.AppendCertsFromPEM(pem) {
		t.Fatal("test CA PEM does not parse")
	}
	return ca
}

func (ca *testCA) cert(t testing.TB, host string) tls.Certificate {
	c, err := ca.h.Leaf("test-upstreams", host, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return *c
}

// upstream is a loopback server, plain or TLS, answering every request
// with what it received.
type upstream struct {
	ln   net.Listener
	port int
	mu   sync.Mutex
	seen []*http.Request
}

func startUpstream(t testing.TB, tlsCert *tls.Certificate, h http.HandlerFunc) *upstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &upstream{ln: ln, port: ln.Addr().(*net.TCPAddr).Port}
	if h == nil {
		h = func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/quiet" { // an answer that quotes nothing
				fmt.Fprintf(w, "host=%s path=%s", r.Host, r.URL.Path)
				return
			}
			w.Header().Set("X-Seen-Authorization", r.Header.Get("Authorization"))
			fmt.Fprintf(w, "host=%s path=%s auth=%s", r.Host, r.URL.Path, r.Header.Get("Authorization"))
		}
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.seen = append(u.seen, r)
		u.mu.Unlock()
		h(w, r)
	}), ReadHeaderTimeout: 5 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	if tlsCert != nil {
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{*tlsCert}}
		go srv.ServeTLS(ln, "", "")
	} else {
		go srv.Serve(ln)
	}
	t.Cleanup(func() { srv.Close() })
	return u
}

func (u *upstream) requests() []*http.Request {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]*http.Request(nil), u.seen...)
}

// loopbackRule opens loopback on the given ports: the tests' upstreams
// live there, and loopback is guarded.
func loopbackRule(ports ...int) Rule {
	return Rule{ID: "test-loopback", Action: Allow, CIDRs: []string{"127.0.0.1/32"}, Ports: ports}
}

func itoa(n int) string { return strconv.Itoa(n) }
