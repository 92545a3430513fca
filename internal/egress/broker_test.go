package egress

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

const (
	placeholder = "AIRLOCK-PLACEHOLDER-gh-0001"
	secretValue = "s3cr3t-value-f00dcafe"
)

type brokerEnv struct {
	*env
	up        *upstream
	ca        *testCA
	sandboxCA *x509.CertPool
}

func newBrokerEnv(t *testing.T, roots bool) *brokerEnv { return newBrokerEnvH(t, roots, nil) }

// newBrokerEnvWith: an upstream that answers with h.
func newBrokerEnvWith(t *testing.T, h http.HandlerFunc) *brokerEnv { return newBrokerEnvH(t, true, h) }

func newBrokerEnvH(t *testing.T, roots bool, h http.HandlerFunc) *brokerEnv {
	return newBrokerEnvCfg(t, roots, h, Config{})
}

// newBrokerEnvCfg: with cfg's settings (its roots are the test's).
func newBrokerEnvCfg(t *testing.T, roots bool, h http.HandlerFunc, cfg Config) *brokerEnv {
	ca := newTestCA(t)
	cert := ca.cert(t, "api.secret.example.test")
	up := startUpstream(t, &cert, h)
	if roots {
		cfg.UpstreamRoots = ca.pool
	} else {
		cfg.UpstreamRoots = x509.NewCertPool() // trusts nothing
	}
	e := newEnv(t, newResolver("api.secret.example.test", "127.0.0.1", "other.example.test", "127.0.0.1", "denied.example.test", "127.0.0.1"), cfg)
	e.setPolicy(t, secretPolicy(up.port))
	pemBytes, err := e.svc.CACert("sb1")
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		t.Fatal("CA PEM does not parse")
	}
	return &brokerEnv{env: e, up: up, ca: ca, sandboxCA: pool}
}

func secretPolicy(port int) Policy {
	return Policy{
		Rules: []Rule{
			{ID: "api", Action: Allow, Hosts: []string{"api.secret.example.test", "other.example.test"}, Ports: []int{port}},
			loopbackRule(port),
		},
		Secrets: []Secret{
			{ID: "gh", Placeholder: placeholder, Hosts: []string{"api.secret.example.test"}, Value: secretValue},
			{ID: "denied-host", Placeholder: "AIRLOCK-PLACEHOLDER-dn-0002", Hosts: []string{"denied.example.test"}, Value: "other-secret-value"},
		},
	}
}

func (b *brokerEnv) get(t *testing.T, roots *x509.CertPool, url, auth string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", auth)
	c := b.client(roots)
	defer c.Transport.(*http.Transport).CloseIdleConnections()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body)
}

// Threat model, Secrets: a brokered secret never appears inside the
// sandbox; the upstream gets the value, the sandbox and the record only
// the placeholder and the secret's id. An answer that quotes the value is
// refused (502) and the refusal recorded.
func TestBrokeredSecret(t *testing.T) {
	b := newBrokerEnv(t, true)
	base := "https://api.secret.example.test:" + itoa(b.up.port)
	resp, body := b.get(t, b.sandboxCA, base+"/quiet", "Bearer "+placeholder)
	if resp.StatusCode != 200 || body != "host=api.secret.example.test:"+itoa(b.up.port)+" path=/quiet" {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	seen := b.up.requests()
	if len(seen) != 1 || seen[0].Header.Get("Authorization") != "Bearer "+secretValue {
		t.Fatalf("upstream saw %v", seen)
	}
	use := b.rec.find(t, KindSecret, 1)[0]
	if use.Secret != "gh" || use.Header != "Authorization" || use.Host != "api.secret.example.test" || use.ExecID != "exec1" {
		t.Errorf("secret event: %+v", use)
	}
	if r := b.rec.find(t, KindResponse, 1)[0]; r.Decision == "deny" {
		t.Errorf("a clean answer was refused: %+v", r)
	}
	// The upstream echoes the credential in a header and the body: the
	// sandbox gets a refusal, never the value.
	resp, body = b.get(t, b.sandboxCA, base+"/user", "Bearer "+placeholder)
	if resp.StatusCode != 502 || resp.Header.Get("X-Airlock-Rule") != RuleReflected {
		t.Errorf("an echoed secret: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	if strings.Contains(body, secretValue) || strings.Contains(resp.Header.Get("X-Seen-Authorization"), secretValue) {
		t.Errorf("the secret reached the sandbox: %q %v", body, resp.Header)
	}
	if r := b.rec.find(t, KindResponse, 2)[1]; r.Decision != "deny" || r.Rule != RuleReflected || !strings.Contains(r.Reason, "gh") {
		t.Errorf("refusal event: %+v", r)
	}
	if strings.Contains(b.rec.json(t), secretValue) {
		t.Errorf("the secret value is in the record")
	}
}

func TestPlaceholderNotReplacedElsewhere(t *testing.T) {
	b := newBrokerEnv(t, true)
	// An allowed host without the secret: the tunnel is not intercepted
	// (the sandbox talks TLS to the real host) and the placeholder goes as
	// it is.
	// The upstream's certificate is for api.secret.example.test only, so
	// skip verification: what matters is what the upstream receives.
	other := "https://other.example.test:" + itoa(b.up.port) + "/"
	c := b.client(nil)
	c.Transport.(*http.Transport).TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
	req, _ := http.NewRequest("GET", other, nil)
	req.Header.Set("Authorization", "Bearer "+placeholder)
	r, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	for _, s := range b.up.requests() {
		if strings.Contains(s.Header.Get("Authorization"), secretValue) {
			t.Errorf("the secret went to %s", s.Host)
		}
	}
	// A secret bound to a host no rule allows: the CONNECT is refused,
	// nothing is intercepted.
	resp2, _ := b.connect(t, "denied.example.test:"+itoa(b.up.port))
	if resp2.StatusCode != 403 {
		t.Errorf("secret host without an allow rule: %d", resp2.StatusCode)
	}
	// Plain HTTP to the secret's host: never replaced (only over TLS),
	// and refused, saying so (issue 19), even on a port a rule allows.
	plain := startUpstream(t, nil, nil)
	p := secretPolicy(b.up.port)
	p.Rules = append(p.Rules, Rule{ID: "plain", Action: Allow, Hosts: []string{"api.secret.example.test"}, Ports: []int{plain.port}}, Rule{ID: "lo2", Action: Allow, CIDRs: []string{"127.0.0.1/32"}, Ports: []int{plain.port}})
	b.setPolicy(t, p)
	rq, _ := http.NewRequest("GET", "http://api.secret.example.test:"+itoa(plain.port)+"/", nil)
	rq.Header.Set("Authorization", "Bearer "+placeholder)
	r, err = b.client(nil).Do(rq)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if got := plain.requests(); len(got) != 0 || r.StatusCode != 403 || ruleOf(r) != RuleBrokerPlain {
		t.Errorf("plain HTTP to the secret's host: %d %s, upstream saw %v", r.StatusCode, ruleOf(r), got)
	}
	for _, ev := range b.rec.all() {
		if ev.Kind == KindSecret {
			t.Errorf("a secret use was recorded: %+v", ev)
		}
	}
}

func TestSecretHeadersLimit(t *testing.T) {
	b := newBrokerEnv(t, true)
	p := secretPolicy(b.up.port)
	p.Secrets[0].Headers = []string{"x-api-key"}
	b.setPolicy(t, p)
	req, _ := http.NewRequest("GET", "https://api.secret.example.test:"+itoa(b.up.port)+"/", nil)
	req.Header.Set("Authorization", "Bearer "+placeholder)
	req.Header.Set("X-Api-Key", placeholder)
	c := b.client(b.sandboxCA)
	r, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	got := b.up.requests()[0]
	if got.Header.Get("Authorization") != "Bearer "+placeholder || got.Header.Get("X-Api-Key") != secretValue {
		t.Errorf("upstream headers %v", got.Header)
	}
}

// The real host's certificate is verified: with roots that do not trust
// it the secret is never sent.
func TestBrokerVerifiesUpstream(t *testing.T) {
	b := newBrokerEnv(t, false)
	resp, body := b.get(t, b.sandboxCA, "https://api.secret.example.test:"+itoa(b.up.port)+"/", "Bearer "+placeholder)
	if resp.StatusCode != 502 {
		t.Errorf("untrusted upstream: %d %s", resp.StatusCode, body)
	}
	if n := len(b.up.requests()); n != 0 {
		t.Errorf("the upstream got %d requests", n)
	}
}

func TestBrokerRefusesOtherHostInTunnel(t *testing.T) {
	b := newBrokerEnv(t, true)
	resp, c := b.connect(t, "api.secret.example.test:"+itoa(b.up.port))
	if resp.StatusCode != 200 {
		t.Fatal(resp.StatusCode)
	}
	tc := tls.Client(c, &tls.Config{ServerName: "api.secret.example.test", RootCAs: b.sandboxCA})
	tc.SetDeadline(time.Now().Add(3 * time.Second))
	io.WriteString(tc, "GET / HTTP/1.1\r\nHost: evil.test\r\nAuthorization: "+placeholder+"\r\n\r\n")
	out, _ := io.ReadAll(tc)
	if !strings.HasPrefix(string(out), "HTTP/1.1 400") {
		t.Errorf("got %q", out)
	}
	if n := len(b.up.requests()); n != 0 {
		t.Errorf("the upstream got %d requests", n)
	}
	// SNI for another host than the CONNECT target: refused.
	resp, c = b.connect(t, "api.secret.example.test:"+itoa(b.up.port))
	if resp.StatusCode != 200 {
		t.Fatal(resp.StatusCode)
	}
	tc = tls.Client(c, &tls.Config{ServerName: "other.example.test", RootCAs: b.sandboxCA})
	tc.SetDeadline(time.Now().Add(3 * time.Second))
	if err := tc.Handshake(); err == nil {
		t.Errorf("handshake for another name succeeded")
	}
}

func TestSetPolicyNeedsSecretValues(t *testing.T) {
	e := newEnv(t, newResolver(), Config{})
	p := secretPolicy(443)
	p.Secrets[0].Value = ""
	if err := e.svc.SetPolicy("sb1", p); err == nil {
		t.Errorf("a secret without a value was accepted")
	}
	p.Secrets[0].Value = "a\r\nX-Injected: 1"
	if err := e.svc.SetPolicy("sb1", p); err == nil {
		t.Errorf("a value with CR LF was accepted")
	}
}

// A plain request to a host with a brokered secret is refused, saying
// why: brokering happens only inside TLS, so the request would carry the
// placeholder and fail at the upstream with nothing to tell the agent
// what went wrong (issue 19).
func TestPlainHTTPToABrokeredHostIsRefused(t *testing.T) {
	b := newBrokerEnv(t, true)
	url := "http://api.secret.example.test:" + itoa(b.up.port) + "/plain"
	resp, _, _ := b.send(t, "GET "+url+" HTTP/1.1\r\nHost: api.secret.example.test:"+itoa(b.up.port)+"\r\nAuthorization: Bearer "+placeholder+"\r\nConnection: close\r\n\r\n")
	if resp.StatusCode != 403 || ruleOf(resp) != RuleBrokerPlain || !strings.Contains(resp.Status, "goes only over HTTPS") {
		t.Errorf("plain request to a brokered host: %d %q %q", resp.StatusCode, resp.Status, ruleOf(resp))
	}
	if n := len(b.up.requests()); n != 0 {
		t.Errorf("the upstream got %d requests", n)
	}
	if x, err := b.svc.Explain(context.Background(), "sb1", url); err != nil || x.Rule != RuleBrokerPlain {
		t.Errorf("explain: %+v %v", x, err)
	}
	// The same host over HTTPS, and another allowed host over plain
	// HTTP, still go.
	if resp, _ := b.get(t, b.sandboxCA, "https://api.secret.example.test:"+itoa(b.up.port)+"/quiet", "Bearer "+placeholder); resp.StatusCode != 200 {
		t.Errorf("over https: %d", resp.StatusCode)
	}
	if x, _ := b.svc.Explain(context.Background(), "sb1", "http://other.example.test:"+itoa(b.up.port)+"/"); x.Decision != "allow" {
		t.Errorf("a host without a secret, plain: %+v", x)
	}
}
