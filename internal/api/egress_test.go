package api

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/bundle"
	"github.com/airlock-dev/airlock/internal/daemon/stack"
	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/redact"
	"github.com/airlock-dev/airlock/internal/secrets"
	"github.com/airlock-dev/airlock/internal/tasks"
	"github.com/airlock-dev/airlock/internal/testroot"
	"github.com/airlock-dev/airlock/sdk"
	"github.com/airlock-dev/airlock/wire"
	"golang.org/x/sys/unix"
)

// These tests run real sandboxes whose programs reach a fake upstream on
// the host's loopback only through the daemon's egress proxy. Names are
// resolved by a fake resolver (test names only); the dialer records every
// address dialed and refuses anything but the upstreams' loopback
// addresses, so that no test can send traffic anywhere else even if a
// guard were broken.

type fakeNet struct {
	t     *testing.T
	mu    sync.Mutex
	names map[string]netip.Addr
	ports map[int]bool // the upstreams' ports on 127.0.0.1
	dials []string
}

func (f *fakeNet) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if a, ok := f.names[host]; ok {
		return []netip.Addr{a}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (f *fakeNet) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	f.mu.Lock()
	f.dials = append(f.dials, address)
	f.mu.Unlock()
	ap, err := netip.ParseAddrPort(address)
	if err != nil || ap.Addr() != netip.MustParseAddr("127.0.0.1") || !f.ports[int(ap.Port())] {
		f.t.Errorf("the proxy dialed %s: only the test's upstreams may be dialed", address)
		return nil, fmt.Errorf("test dialer: %s is not a test upstream", address)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, address)
}

func (f *fakeNet) dialed() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.dials...)
}

type egressEnv struct {
	*daemon
	net     *fakeNet
	plain   *httptest.Server // http upstream, name plain.example.test
	secure  *httptest.Server // https upstream, name api.example.test
	gotAuth chan string      // Authorization headers the https upstream saw
	gotKey  chan string      // and X-Api-Key headers, when there was one
	log     *audit.Log
}

func egressDaemon(t *testing.T, pol string) *egressEnv {
	t.Helper()
	return egressDaemonAt(t, "", pol)
}

// egressDaemonAt keeps the daemon's database in dbDir (see newDaemonAt).
func egressDaemonAt(t *testing.T, dbDir, pol string) *egressEnv {
	t.Helper()
	var fo floodOpts
	if dbDir != "" {
		fo.reserve = 1 << 20 // a disk of its own: the daemon keeps a reserve, as serve does
	}
	return egressDaemonWith(t, dbDir, pol, fo)
}

// floodOpts are the bounds on one sandbox's share of the audit log that a
// test sets (zero: the defaults; no reserve).
type floodOpts struct {
	limits  egress.Limits
	reserve int64         // bytes of audit reserve next to the database
	retry   time.Duration // how often a stopped log is tried again
}

func egressDaemonWith(t *testing.T, dbDir, pol string, fo floodOpts) *egressEnv {
	t.Helper()
	e := &egressEnv{gotAuth: make(chan string, 16), gotKey: make(chan string, 16)}
	e.plain = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from upstream %s", r.URL.Path)
	}))
	t.Cleanup(e.plain.Close)
	e.secure = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.gotAuth <- r.Header.Get("Authorization")
		if k := r.Header.Get("X-Api-Key"); k != "" {
			e.gotKey <- k
		}
		fmt.Fprint(w, "secure ok")
	}))
	upCert, upPool := testCert(t, "api.example.test")
	e.secure.TLS = &tls.Config{Certificates: []tls.Certificate{upCert}}
	e.secure.StartTLS()
	t.Cleanup(e.secure.Close)
	port := func(s *httptest.Server) int {
		_, p, _ := net.SplitHostPort(s.Listener.Addr().String())
		n, _ := strconv.Atoi(p)
		return n
	}
	lo := netip.MustParseAddr("127.0.0.1")
	e.net = &fakeNet{t: t, names: map[string]netip.Addr{"plain.example.test": lo, "api.example.test": lo, "other.example.test": lo},
		ports: map[int]bool{port(e.plain): true, port(e.secure): true}}
	roots := upPool
	polFile := strings.NewReplacer("PLAIN", strconv.Itoa(port(e.plain)), "SECURE", strconv.Itoa(port(e.secure))).Replace(pol)
	e.daemon = newDaemonAt(t, dbDir, func(c *stack.Config) {
		red := redact.New()
		acfg := audit.Config{Store: c.Store, Redactor: red, KeyFile: filepath.Join(t.TempDir(), "audit.key")}
		if fo.reserve > 0 {
			dir := dbDir // the reserve is on the database's disk
			if dir == "" {
				dir = t.TempDir()
			}
			acfg.ReserveFile, acfg.ReserveBytes = filepath.Join(dir, "audit.reserve"), fo.reserve
		}
		log, err := audit.Open(context.Background(), acfg)
		if err != nil {
			t.Fatal(err)
		}
		f, err := policy.Parse([]byte(polFile))
		if err != nil {
			t.Fatal(err)
		}
		c.Policy, c.Audit, c.Redactor = f, log, red
		c.SecretsKey = filepath.Join(t.TempDir(), "secrets.key")
		e.log = log
		c.Egress = &egress.Config{Resolver: e.net, Dialer: e.net, UpstreamRoots: roots, Limits: fo.limits}
		c.TrustDir = filepath.Join(t.TempDir(), "trust")
		c.AuditRetry = fo.retry
	})
	return e
}

// The policy of these tests: plain.example.test and api.example.test on
// their upstreams' ports, and loopback opened for exactly those ports.
const egressTestPolicy = `
classes: {read: allow, verify: allow, build: allow, write: allow, dependency: allow, network: allow, destructive: allow, secret: deny, unknown: allow, persist: allow}
egress:
  rules:
    - {id: plain, action: allow, hosts: [plain.example.test], ports: [PLAIN]}
    - {id: api, action: allow, hosts: [api.example.test], ports: [SECURE]}
    - {id: test-upstreams, action: allow, cidrs: [127.0.0.1/32], ports: [PLAIN, SECURE]}
`

func (e *egressEnv) sandbox() string {
	var sb sandbox.Sandbox
	if code := e.do("POST", "/v1/sandboxes", "", &sb); code != 201 {
		e.t.Fatalf("create: %d", code)
	}
	return sb.ID
}

func (e *egressEnv) egressEvents(id string) []audit.Event {
	var out []audit.Event
	for _, ev := range e.events("sandbox=" + id) {
		if strings.HasPrefix(ev.Kind, "egress.") {
			out = append(out, ev)
		}
	}
	return out
}

func TestEgressThroughTheProxy(t *testing.T) {
	e := egressDaemon(t, egressTestPolicy)
	id := e.sandbox()
	plain := e.plain.Listener.Addr().(*net.TCPAddr).Port
	// An allowed name, through the proxy the environment names.
	_, out, _ := e.sh(id, fmt.Sprintf(`curl -sS --max-time 20 http://plain.example.test:%d/hi`, plain), nil)
	if out != "hello from upstream /hi" {
		t.Fatalf("allowed request: %q", out)
	}
	// A name the policy does not name: the proxy refuses it, nothing dialed.
	before := len(e.net.dialed())
	_, out, _ = e.sh(id, fmt.Sprintf(`curl -sS --max-time 20 -o /dev/null -w '%%{http_code}' http://other.example.test:%d/; echo " rc=$?"`, plain), nil)
	if !strings.HasPrefix(out, "403") {
		t.Fatalf("denied name: %q", out)
	}
	// The SDK's EgressTest, as an agent builder would call it.
	if c, err := sdk.New(sdk.WithSocket(e.sock)); err != nil {
		t.Fatal(err)
	} else if x, err := c.EgressTest(context.Background(), id, fmt.Sprintf("http://other.example.test:%d/", plain)); err != nil || x.Decision != "deny" || x.Rule != "default-deny" {
		t.Errorf("sdk EgressTest: %+v %v", x, err)
	}
	// egress test explains both without connecting: the same rule and
	// reason the proxy's refusal carries.
	for dest, want := range map[string]string{fmt.Sprintf("http://other.example.test:%d/", plain): "deny default-deny", fmt.Sprintf("http://plain.example.test:%d/", plain): "allow "} {
		var x wire.EgressTest
		if code := e.do("POST", "/v1/sandboxes/"+id+"/egress/test", wire.EgressTestRequest{Destination: dest}, &x); code != 200 || !strings.HasPrefix(x.Decision+" "+x.Rule, want) || x.Mode != "HTTP" {
			t.Errorf("egress test %s: %d %+v, want %s", dest, code, x, want)
		}
	}
	// The metadata address and host loopback, as literals: refused before
	// any dial (the test dialer would fail the test otherwise).
	// (127.0.0.1 is opened for the upstreams' ports only, for this test.)
	for _, target := range []string{"http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/", "http://127.0.0.1:1/", "http://localhost:1/", "http://2852039166/", "http://0xA9FEA9FE/"} {
		_, out, _ = e.sh(id, `curl -sS --max-time 20 -x http://127.0.0.1:3128 --noproxy '' -o /dev/null -w '%{http_code}' '`+target+`'; echo " rc=$?"`, nil)
		if !strings.HasPrefix(out, "403") {
			t.Errorf("%s: %q", target, out)
		}
	}
	if d := e.net.dialed(); len(d) != before {
		t.Fatalf("refused destinations were dialed: %v", d[before:])
	}
	// A program that ignores the proxy has no route at all.
	_, out, _ = e.sh(id, fmt.Sprintf(`curl -sS --noproxy '*' --max-time 5 http://127.0.0.1:%d/ 2>&1; echo " rc=$?"`, plain), nil)
	if !strings.Contains(out, "rc=7") {
		t.Fatalf("without the proxy: %q", out)
	}
	// DNS: allowed names resolve, others are NXDOMAIN; all recorded.
	_, out, _ = e.sh(id, `getent hosts plain.example.test; echo "rc=$?"; getent hosts other.example.test; echo "rc=$?"`, nil)
	if !strings.Contains(out, "127.0.0.1") || !strings.HasSuffix(out, "rc=2\n") {
		t.Fatalf("dns: %q", out)
	}
	// The record: each decision with the exec that made it.
	var sawAllow, sawDeny, sawDNS bool
	for _, ev := range e.egressEvents(id) {
		p := string(ev.Payload)
		if ev.ExecID == "" {
			t.Errorf("egress event without its exec: %s %s", ev.Kind, p)
		}
		switch {
		case ev.Kind == "egress.request" && strings.Contains(p, `"decision":"allow"`) && strings.Contains(p, "plain.example.test"):
			sawAllow = true
		case ev.Kind == "egress.request" && strings.Contains(p, `"decision":"deny"`) && strings.Contains(p, "other.example.test"):
			sawDeny = true
		case ev.Kind == "egress.dns" && strings.Contains(p, "other.example.test"):
			sawDNS = true
		}
	}
	if !sawAllow || !sawDeny || !sawDNS {
		t.Fatalf("egress record: allow %v deny %v dns %v", sawAllow, sawDeny, sawDNS)
	}
	// A double-forked process (its parent is the agent now) is still its
	// command's, by the command's session.
	_, execEvs, _ := e.exec(id, wire.ExecRequest{Argv: []string{"/bin/sh", "-c", fmt.Sprintf(`(sh -c 'curl -sS --max-time 20 http://plain.example.test:%d/orphan > /tmp/orphan' &); sleep 2; cat /tmp/orphan`, plain)}})
	orphanExec := ""
	for _, ev := range execEvs {
		if ev.ExecID != "" {
			orphanExec = ev.ExecID
		}
	}
	found := false
	for _, ev := range e.egressEvents(id) {
		if ev.Kind == "egress.request" && strings.Contains(string(ev.Payload), "/orphan") {
			found = true
			if ev.ExecID != orphanExec || orphanExec == "" {
				t.Errorf("the orphan's request: exec %q, want %q", ev.ExecID, orphanExec)
			}
		}
	}
	if !found {
		t.Error("no record of the orphan's request")
	}

	// The kill switch cuts every sandbox, and restoring it restores them.
	if code := e.do("POST", "/v1/egress/cut", map[string]bool{"on": true}, nil); code != 200 {
		t.Fatalf("cut: %d", code)
	}
	_, out, _ = e.sh(id, fmt.Sprintf(`curl -sS --max-time 20 -o /dev/null -w '%%{http_code}' http://plain.example.test:%d/`, plain), nil)
	if out != "403" {
		t.Fatalf("while cut: %q", out)
	}
	e.do("POST", "/v1/egress/cut", map[string]bool{"on": false}, nil)
	if _, out, _ = e.sh(id, fmt.Sprintf(`curl -sS --max-time 20 http://plain.example.test:%d/x`, plain), nil); out != "hello from upstream /x" {
		t.Fatalf("after restore: %q", out)
	}

	// A runtime layer changes a running sandbox's egress.
	if code := e.do("PUT", "/v1/sandboxes/"+id+"/egress", map[string]any{"rules": []map[string]any{{"id": "no-plain", "action": "deny", "hosts": []string{"plain.example.test"}}}}, nil); code != 200 {
		t.Fatalf("set egress: %d", code)
	}
	_, out, _ = e.sh(id, fmt.Sprintf(`curl -sS --max-time 20 -o /dev/null -w '%%{http_code}' http://plain.example.test:%d/`, plain), nil)
	if out != "403" {
		t.Fatalf("after the deny layer: %q", out)
	}
}

// A brokered secret: the sandbox holds a placeholder; the upstream gets
// the value; nothing inside or in the record ever shows it.
func TestEgressBrokeredSecret(t *testing.T) {
	e := egressDaemon(t, egressTestPolicy)
	id := e.sandbox()
	const value = "brokered-value-5f4e3d2c1b0a"
	e.do("PUT", "/v1/secrets/API_TOKEN", map[string]string{"value": value}, nil)
	var g secrets.Grant
	if code := e.do("POST", "/v1/secrets/API_TOKEN/grants", map[string]any{"sandbox_id": id, "mode": "broker", "hosts": []string{"api.example.test"}}, &g); code != 201 {
		t.Fatalf("broker grant: %d", code)
	}
	if !strings.HasPrefix(g.Placeholder, "airlock-brokered-") {
		t.Fatalf("grant: %+v", g)
	}
	// Install the sandbox's proxy CA where curl can use it.
	resp, err := e.client.Get("http://airlock/v1/sandboxes/" + id + "/egress/ca")
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(ca), "BEGIN CERTIFICATE") {
		t.Fatalf("ca: %q", ca)
	}
	if code, _, _ := e.exec(id, wire.ExecRequest{Argv: []string{"/bin/sh", "-c", "cat > /tmp/airlock-ca"}, Stdin: base64.StdEncoding.EncodeToString(ca)}); code != 200 {
		t.Fatalf("write ca: %d", code)
	}
	secure := e.secure.Listener.Addr().(*net.TCPAddr).Port
	code, out, eb := e.sh(id, `echo "token=$API_TOKEN"; grep -rs `+value+` /tmp /home /workspace | head -1; curl -sS --max-time 20 --cacert /tmp/airlock-ca -H "Authorization: Bearer $API_TOKEN" https://api.example.test:`+strconv.Itoa(secure)+`/`, nil)
	if !strings.HasPrefix(out, "token="+g.Placeholder+"\n") || !strings.HasSuffix(out, "secure ok") || strings.Contains(out, value) {
		t.Fatalf("inside: %d %q %+v", code, out, eb)
	}
	if got := <-e.gotAuth; got != "Bearer "+value {
		t.Fatalf("the upstream got %q", got)
	}
	raw := fmt.Sprint(e.events("sandbox=" + id))
	if strings.Contains(raw, value) {
		t.Fatal("the value is in the audit record")
	}
	var used bool
	for _, ev := range e.egressEvents(id) {
		if ev.Kind == "egress.secret" && strings.Contains(string(ev.Payload), g.ID) {
			used = true
		}
	}
	if !used {
		for _, ev := range e.egressEvents(id) {
			t.Logf("%s %s", ev.Kind, ev.Payload)
		}
		t.Fatal("the secret's use is not in the record")
	}
	// The placeholder sent to another host is not replaced (and that host
	// is not allowed here anyway); revoking the grant ends the brokering.
	e.do("DELETE", "/v1/secret-grants/"+g.ID, nil, nil)
	_, out, _ = e.sh(id, `curl -sS --max-time 20 --cacert /tmp/airlock-ca -H "Authorization: Bearer $API_TOKEN" https://api.example.test:`+strconv.Itoa(secure)+`/; echo " rc=$?"`, nil)
	if strings.Contains(out, "secure ok") {
		if got := <-e.gotAuth; got == "Bearer "+value {
			t.Fatalf("after revoke, the upstream still got the value")
		}
	}
}

// A brokered secret over HTTPS works out of the box: the sandbox's
// system bundle, and the variables Node and Python read, trust its
// egress CA (issue 19: a user had to install it, and installing it as a
// *.pem was refused as secret access). The bundle is read-only inside,
// and still trusts what the host does.
func TestEgressCATrustedOutOfTheBox(t *testing.T) {
	e := egressDaemon(t, egressTestPolicy)
	id := e.sandbox()
	const value = "brokered-value-trust-9a8b7c"
	e.do("PUT", "/v1/secrets/API_TOKEN", map[string]string{"value": value}, nil)
	if code := e.do("POST", "/v1/secrets/API_TOKEN/grants", map[string]any{"sandbox_id": id, "mode": "broker", "hosts": []string{"api.example.test"}}, nil); code != 201 {
		t.Fatalf("broker grant: %d", code)
	}
	url := "https://api.example.test:" + strconv.Itoa(e.secure.Listener.Addr().(*net.TCPAddr).Port) + "/"
	clients := map[string]string{
		"curl":   `curl -sS --max-time 20 -H "Authorization: Bearer $API_TOKEN" ` + url,
		"python": `python3 -c 'import os,urllib.request as u; print(u.urlopen(u.Request("` + url + `", headers={"Authorization": "Bearer "+os.environ["API_TOKEN"]}), timeout=20).read().decode())'`,
	}
	if _, err := os.Stat("/usr/bin/node"); err == nil {
		// Node's fetch ignores the proxy variables: a tunnel by hand,
		// with tls's default roots (which NODE_EXTRA_CA_CERTS adds to).
		if code, _, _ := e.exec(id, wire.ExecRequest{Argv: []string{"/bin/sh", "-c", "cat > /tmp/get.js"}, Stdin: base64.StdEncoding.EncodeToString([]byte(nodeTunnelGet))}); code != 200 {
			t.Fatalf("write get.js: %d", code)
		}
		clients["node"] = `node /tmp/get.js ` + url
	}
	for name, line := range clients {
		if code, out, eb := e.sh(id, line, nil); !strings.Contains(out, "secure ok") {
			t.Errorf("%s: %d %q %+v", name, code, out, eb)
			continue
		}
		if got := <-e.gotAuth; got != "Bearer "+value {
			t.Errorf("%s: the upstream got %q", name, got)
		}
	}
	// A reset starts over from the same spec: the bundle is still bound.
	if code := e.do("POST", "/v1/sandboxes/"+id+"/reset", nil, nil); code != 200 {
		t.Fatalf("reset: %d", code)
	}
	if _, out, eb := e.sh(id, clients["curl"], nil); !strings.Contains(out, "secure ok") {
		t.Errorf("curl after a reset: %q %+v", out, eb)
	} else if got := <-e.gotAuth; got != "Bearer "+value {
		t.Errorf("after a reset the upstream got %q", got)
	}
	// (python: the policy would refuse a shell's write there first.)
	_, out, _ := e.sh(id, `python3 -c 'import sys; open(sys.argv[1], "a")' /etc/ssl/certs/ca-certificates.crt 2>/dev/null; echo "rc=$?"; grep -c 'BEGIN CERTIFICATE' /etc/ssl/certs/ca-certificates.crt`, nil)
	host, _ := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	if want := fmt.Sprintf("rc=1\n%d\n", strings.Count(string(host), "BEGIN CERTIFICATE")+1); out != want {
		t.Errorf("the bundle is writable or not the host's plus one: %q (want %s certificates)", out, want)
	}
}

// nodeTunnelGet GETs argv[2] through the sandbox's proxy with a CONNECT
// and tls.connect, and prints the body.
const nodeTunnelGet = `const http = require("http"), tls = require("tls");
const u = new URL(process.argv[2]);
http.request({host: "127.0.0.1", port: 3128, method: "CONNECT", path: u.host, headers: {host: u.host}}).on("connect", (res, sock) => {
  const s = tls.connect({socket: sock, servername: u.hostname}, () => {
    s.write("GET / HTTP/1.1\r\nHost: " + u.host + "\r\nAuthorization: Bearer " + process.env.API_TOKEN + "\r\nConnection: close\r\n\r\n");
  });
  let d = "";
  s.on("data", c => d += c);
  s.on("end", () => console.log(d.split("\r\n\r\n")[1]));
  s.on("error", e => console.log("error: " + e.message));
}).end();
`

// Over TCP (an agent's key) egress can only be tightened, and the kill
// switch is the operator's.
func TestEgressTightenOnlyOverTCP(t *testing.T) {
	e := egressDaemon(t, egressTestPolicy)
	id := e.sandbox()
	_, key, _ := e.keys.Create(context.Background(), "agent", "")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: New(e.m, e.mods, Health{OK: true}).TCP()}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	do := func(method, path, body string) int {
		req, _ := http.NewRequest(method, "http://"+ln.Addr().String()+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := do("PUT", "/v1/sandboxes/"+id+"/egress", `{"grant":["public_web"]}`); c != 403 {
		t.Errorf("granting public web over TCP: %d", c)
	}
	if c := do("PUT", "/v1/sandboxes/"+id+"/egress", `{"rules":[{"id":"x","action":"allow","hosts":["x.example.test"]}]}`); c != 403 {
		t.Errorf("an allow rule over TCP: %d", c)
	}
	if c := do("PUT", "/v1/sandboxes/"+id+"/egress", `{"rules":[{"id":"x","action":"deny","hosts":["plain.example.test"]}]}`); c != 200 {
		t.Errorf("a deny rule over TCP: %d", c)
	}
	if c := do("POST", "/v1/egress/cut", `{"on":false}`); c != 403 {
		t.Errorf("kill switch over TCP: %d", c)
	}
	// A layer replaces the last one; over TCP it may not drop a deny rule
	// (the operator's, here) or give back a grant the last layer revoked.
	if c := e.do("PUT", "/v1/sandboxes/"+id+"/egress", map[string]any{"grant": []string{}, "rules": []map[string]any{{"id": "incident", "action": "deny", "hosts": []string{"plain.example.test"}}}}, nil); c != 200 {
		t.Fatalf("operator's layer: %d", c)
	}
	for _, body := range []string{`{}`, `{"grant":[],"rules":[{"id":"incident","action":"deny","hosts":["other.example.test"]}]}`} {
		if c := do("PUT", "/v1/sandboxes/"+id+"/egress", body); c != 403 {
			t.Errorf("over TCP, replacing the operator's layer with %s: %d, want 403", body, c)
		}
	}
	plain := e.plain.Listener.Addr().(*net.TCPAddr).Port
	if _, out, _ := e.sh(id, fmt.Sprintf(`curl -sS --max-time 20 -o /dev/null -w '%%{http_code}' http://plain.example.test:%d/`, plain), nil); out != "403" {
		t.Errorf("the operator's deny rule: curl got %q, want 403", out)
	}
	// Keeping it is not loosening (the base grants nothing to give back),
	// and adding to it is tightening.
	if c := do("PUT", "/v1/sandboxes/"+id+"/egress", `{"rules":[{"id":"incident","action":"deny","hosts":["plain.example.test"]}]}`); c != 200 {
		t.Errorf("over TCP, the operator's layer again: %d, want 200", c)
	}
	if c := do("PUT", "/v1/sandboxes/"+id+"/egress", `{"grant":[],"rules":[{"id":"incident","action":"deny","hosts":["plain.example.test"]},{"id":"more","action":"deny","hosts":["x.example.test"]}]}`); c != 200 {
		t.Errorf("over TCP, adding a deny rule to the operator's layer: %d, want 200", c)
	}
}

// testCert is a self-signed certificate for name, and a pool that trusts
// it: the test upstream's, which the proxy verifies.
func testCert(t *testing.T, name string) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

// tmpfsDir mounts a tmpfs of size bytes on a new directory, unmounted at
// the end of the test (after anything registered later, such as a daemon
// keeping its database there).
func tmpfsDir(t *testing.T, size int64) string {
	t.Helper()
	testroot.Need(t, "to mount a tmpfs")
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0711", size)); err != nil {
		t.Fatalf("mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// fill writes to a file in dir until the filesystem is full.
func fill(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, unix.ENOSPC) {
				t.Fatalf("fill %s: %v", dir, err)
			}
			return
		}
	}
}

// The threat model's "fill the log disk": the daemon fails closed. Once
// the audit log cannot be written, a command that is already running loses
// its network and is told that its record is incomplete; nothing new
// starts; the task cannot be finished into a bundle with a gap; and the
// health endpoint says why.
func TestFullLogDiskFailsClosed(t *testing.T) {
	db := tmpfsDir(t, 16<<20)
	e := egressDaemonAt(t, db, egressTestPolicy)
	plain := e.plain.Listener.Addr().(*net.TCPAddr).Port
	repo, first := sampleRepo(t)
	var task tasks.Task
	if code := e.do("POST", "/v1/tasks", map[string]any{"repo": repo, "ref": first}, &task); code != 201 {
		t.Fatalf("create task: %d", code)
	}
	id := task.SandboxID
	if _, out, _ := e.sh(id, fmt.Sprintf(`curl -sS --max-time 20 http://plain.example.test:%d/before`, plain), nil); !strings.Contains(out, "hello from upstream /before") {
		t.Fatalf("egress before the disk is full: %q", out)
	}

	// A command that keeps reaching the upstream until it has been refused
	// five times in a row (or gives up after 400 tries).
	type result struct {
		events []wire.Event
		code   int
	}
	running := make(chan result, 1)
	go func() {
		code, events, _ := e.exec(id, wire.ExecRequest{Argv: []string{"/bin/sh", "-c", fmt.Sprintf(`n=0; i=0
while [ $n -lt 5 ] && [ $i -lt 400 ]; do
  c=$(curl -s --max-time 10 -o /dev/null -w '%%{http_code}' http://plain.example.test:%d/during)
  echo "$c"
  if [ "$c" = 200 ]; then n=0; else n=$((n+1)); fi
  i=$((i+1)); sleep 0.05
done`, plain)}})
		running <- result{events, code}
	}()
	for deadline := time.Now().Add(30 * time.Second); countDials(e, plain) < 3; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the looping command never reached the upstream")
		}
	}

	// Fill the log disk, then make the daemon write: commands whose output
	// (stored as audit blobs) cannot fit.
	fill(t, db)
	for i := 0; e.log.Err() == nil; i++ {
		if i == 30 {
			t.Fatal("the audit log never failed on a full disk")
		}
		e.sh(id, "head -c 3000000 /dev/urandom | base64", nil)
	}
	failedAt := countDials(e, plain)

	r := <-running
	out, _, last := collect(r.events)
	codes := strings.Fields(out)
	if r.code != 200 || len(codes) < 5 || slices.Contains(codes[len(codes)-5:], "200") {
		t.Errorf("the running command's network after the log failed: HTTP %d, codes %v", r.code, codes)
	}
	if n := countDials(e, plain); n > failedAt+1 { // one may have been decided just before
		t.Errorf("the proxy dialed the upstream %d times after the audit log failed", n-failedAt)
	}
	if last == nil || last.Type != "error" || last.Code != "limit_exceeded" || !strings.Contains(last.Message, "record is incomplete") {
		t.Errorf("the running command's end: %+v", last)
	}

	// Nothing new starts, and each refusal says why.
	var apiErr wire.Error
	if code := e.do("POST", "/v1/sandboxes", "", &apiErr); code != 429 || !strings.Contains(apiErr.Message, "audit log cannot be written") {
		t.Errorf("create with a broken audit log: %d %+v", code, apiErr)
	}
	if code, _, eb := e.exec(id, wire.ExecRequest{Argv: []string{"true"}}); code != 429 || !strings.Contains(eb.Message, "audit log cannot be written") {
		t.Errorf("exec with a broken audit log: %d %+v", code, eb)
	}
	apiErr = wire.Error{}
	if code := e.do("POST", "/v1/tasks/"+task.ID+"/finish", nil, &apiErr); code != 429 || !strings.Contains(apiErr.Message, "cannot be finished") {
		t.Errorf("finish with a broken audit log: %d %+v", code, apiErr)
	}
	var h Health // its error fields (code, message) are wire.Health's
	if code := e.do("GET", "/v1/health", nil, &h); code != 503 || h.OK || !strings.Contains(h.Problem, "audit log cannot be written") || h.Code != "limit_exceeded" || h.Message != h.Problem {
		t.Errorf("health with a broken audit log: %d %+v", code, h)
	}
	// Space freed, the task is still open, its sandbox still there (the
	// daemon recovers on its own: TestFullLogDiskRecoversWithoutRestart).
	os.Remove(filepath.Join(db, "filler"))
	var got tasks.Task
	if code := e.do("GET", "/v1/tasks/"+task.ID, nil, &got); code != 200 || got.State != "open" {
		t.Errorf("the task after the failure: %d %+v", code, got)
	}
}

// countDials counts the proxy's dials to the plain upstream.
func countDials(e *egressEnv, port int) int {
	n := 0
	for _, a := range e.net.dialed() {
		if strings.HasSuffix(a, ":"+strconv.Itoa(port)) {
			n++
		}
	}
	return n
}

// A task's bundle says where the network was contacted, from the egress
// record (found in a review-plane review: the report said egress recording
// was not available while the record held every request).
func TestBundleNetworkFromTheEgressRecord(t *testing.T) {
	e := egressDaemon(t, egressTestPolicy)
	plain := e.plain.Listener.Addr().(*net.TCPAddr).Port
	repo, first := sampleRepo(t)
	var task tasks.Task
	if code := e.do("POST", "/v1/tasks", map[string]any{"repo": repo, "ref": first}, &task); code != 201 {
		t.Fatalf("task: %d", code)
	}
	if _, out, _ := e.sh(task.SandboxID, fmt.Sprintf(`curl -sS --max-time 20 http://plain.example.test:%d/hi; curl -s --max-time 20 -o /dev/null -w ' %%{http_code}' http://other.example.test:%d/`, plain, plain), nil); !strings.Contains(out, "hello from upstream /hi") || !strings.Contains(out, " 403") {
		t.Fatalf("requests: %q", out)
	}
	files := untarAll(t, e.bundle(task.ID))
	var reqs []bundle.NetworkRequest
	for _, line := range strings.Split(strings.TrimSpace(string(files["network.jsonl"])), "\n") {
		var r bundle.NetworkRequest
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("network.jsonl: %v: %q", err, files["network.jsonl"])
		}
		reqs = append(reqs, r)
	}
	byHost := map[string]bundle.NetworkRequest{}
	for _, r := range reqs {
		byHost[r.Host] = r
	}
	if r := byHost["plain.example.test"]; len(reqs) != 2 || r.Decision != "allow" || r.Status != 200 || r.BytesIn == 0 || r.Method != "GET" || r.ExecID == "" {
		t.Errorf("requests: %+v", reqs)
	}
	if r := byHost["other.example.test"]; r.Decision != "deny" {
		t.Errorf("the refused request: %+v", r)
	}
	if page := html.UnescapeString(string(files["report.html"])); !strings.Contains(page, "2 request(s) to 2 host(s); 1 not allowed.") {
		t.Errorf("the report's network question does not say what happened")
	}
}

// A brokered grant names the headers its value goes in: only those get
// it (here X-Api-Key, so Authorization keeps the placeholder), and a
// grant for a cookie is refused.
func TestEgressBrokeredGrantHeaders(t *testing.T) {
	e := egressDaemon(t, egressTestPolicy)
	id := e.sandbox()
	e.do("PUT", "/v1/secrets/API_TOKEN", map[string]string{"value": "brokered-value-0a1b2c3d4e5f"}, nil)
	if code := e.do("POST", "/v1/secrets/API_TOKEN/grants", map[string]any{"sandbox_id": id, "mode": "broker", "hosts": []string{"api.example.test"}, "headers": []string{"Cookie"}}, nil); code != 400 {
		t.Errorf("a grant for Cookie: %d, want 400", code)
	}
	var g secrets.Grant
	if code := e.do("POST", "/v1/secrets/API_TOKEN/grants", map[string]any{"sandbox_id": id, "mode": "broker", "hosts": []string{"api.example.test"}, "headers": []string{"x-api-key"}}, &g); code != 201 {
		t.Fatalf("broker grant: %d", code)
	}
	if len(g.Headers) != 1 || g.Headers[0] != "X-Api-Key" {
		t.Fatalf("grant headers: %v", g.Headers)
	}
	resp, err := e.client.Get("http://airlock/v1/sandboxes/" + id + "/egress/ca")
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if code, _, _ := e.exec(id, wire.ExecRequest{Argv: []string{"/bin/sh", "-c", "cat > /tmp/airlock-ca"}, Stdin: base64.StdEncoding.EncodeToString(ca)}); code != 200 {
		t.Fatalf("write ca: %d", code)
	}
	secure := e.secure.Listener.Addr().(*net.TCPAddr).Port
	_, out, _ := e.sh(id, `curl -sS --max-time 20 --cacert /tmp/airlock-ca -H "X-Api-Key: $API_TOKEN" -H "Authorization: Bearer $API_TOKEN" https://api.example.test:`+strconv.Itoa(secure)+`/`, nil)
	if out != "secure ok" {
		t.Fatalf("inside: %q", out)
	}
	if got := <-e.gotAuth; got != "Bearer "+g.Placeholder {
		t.Errorf("Authorization at the upstream: %q, want the placeholder", got)
	}
	if got := <-e.gotKey; got != "brokered-value-0a1b2c3d4e5f" {
		t.Errorf("X-Api-Key at the upstream: %q, want the value", got)
	}
}
