package e2b

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// testDomain is the E2B domain of the test door (newDoor): sandbox hosts
// are <port>-<id>.e2b.test, reached by setting the Host of a request to
// the loopback listener.
const testDomain = "e2b.test"

// The signature is E2B's: these were made by node's crypto, as the SDK's
// signature.ts makes them (sha256, base64, padding cut).
func TestSignFileIsTheSDKsSignature(t *testing.T) {
	exp := int64(1700000000)
	if got := signFile("/workspace/x.txt", "read", "", "ea_tok", &exp); got != "v1_QAXHx/8Z7fDkWSKAmwAm+p8BWAM8jQXEPwTdtkuiAy0" {
		t.Errorf("read, expiring: %s", got)
	}
	if got := signFile("notes/a.txt", "write", "user", "ea_tok", nil); got != "v1_Yd74hx7pQH27uaAnN3MO65RozvSb0ZJherLJc/jRyGM" {
		t.Errorf("write, not expiring: %s", got)
	}
}

func TestHostRoute(t *testing.T) {
	for _, c := range []struct {
		host, port, id string
		ok             bool
	}{
		{"49983-abc123.e2b.test", "49983", "abc123", true},
		{"49983-abc123.e2b.test:8443", "49983", "abc123", true},
		{"49983-ABC123.E2B.TEST.", "49983", "abc123", true},
		{"3000-abc123.e2b.test", "3000", "abc123", true},
		{"api.e2b.test", "", "", false},
		{"e2b.test", "", "", false},
		{"49983-abc123.e2b.test.evil.example", "", "", false},
		{"49983-abc123.evil-e2b.test", "", "", false},
		{"x.49983-abc123.e2b.test", "", "", false},
		{"49983-.e2b.test", "", "", false},
		{"-abc123.e2b.test", "", "", false},
		{"4998x-abc123.e2b.test", "", "", false},
		{"4998300-abc123.e2b.test", "", "", false},
		{"49983-abc_123.e2b.test", "", "", false},
		{"127.0.0.1:49983", "", "", false},
	} {
		port, id, ok := hostRoute(c.host, testDomain)
		if port != c.port || id != c.id || ok != c.ok {
			t.Errorf("%q: %q %q %v, want %q %q %v", c.host, port, id, ok, c.port, c.id, c.ok)
		}
	}
	if _, _, ok := hostRoute("49983-abc123.e2b.test", ""); ok {
		t.Error("no domain: host routing must be off")
	}
}

func TestValidDomain(t *testing.T) {
	for d, want := range map[string]bool{"e2b.test": true, "sbx.example.com": true, "localhost": false, "": false, "E2B.test": false, "a..b": false, "-a.b": false, "a.b-": false, "a_b.c": false} {
		if ValidDomain(d) != want {
			t.Errorf("ValidDomain(%q) = %v", d, !want)
		}
	}
}

// signedCall sends a request with no API key or access token (a plain
// fetch of a signed URL); host "" keeps the listener's.
func (d *door) signedCall(method, host, pathQuery string, body []byte, hdr map[string]string) (int, string) {
	d.t.Helper()
	req, _ := http.NewRequest(method, d.url+pathQuery, bytes.NewReader(body))
	if host != "" {
		req.Host = host
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatalf("%s %s: %v", method, pathQuery, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// signedURL is the path and query of a signed /files URL as the SDK
// builds it (url.searchParams: the values encoded).
func signedURL(p, op, user, token string, exp *int64) string {
	q := url.Values{}
	if user != "" {
		q.Set("username", user)
	}
	if p != "" {
		q.Set("path", p)
	}
	q.Set("signature", signFile(p, op, user, token, exp))
	if exp != nil {
		q.Set("signature_expiration", strconv.FormatInt(*exp, 10))
	}
	return "/files?" + q.Encode()
}

func sandboxHost(id string) string { return EnvdPort + "-" + id + "." + testDomain }

// Signed URLs work on the shared sandbox URL (the signature names the
// sandbox) and on the sandbox's host, for download and upload.
func TestSignedURLsRoundTrip(t *testing.T) {
	d := newDoor(t)
	id, tok := d.create()
	if resp, b := d.call("POST", "/files?path=/workspace/x.txt", []byte("secret-x\n"), envdHeaders(id, tok, map[string]string{"Content-Type": "application/octet-stream"})); resp.StatusCode != 200 {
		t.Fatalf("write: %d %s", resp.StatusCode, b)
	}
	exp := time.Now().Add(time.Minute).Unix()
	for _, host := range []string{"", sandboxHost(id)} {
		if st, b := d.signedCall("GET", host, signedURL("/workspace/x.txt", "read", "", tok, nil), nil, nil); st != 200 || b != "secret-x\n" {
			t.Errorf("host %q: download: %d %s", host, st, b)
		}
		if st, b := d.signedCall("GET", host, signedURL("/workspace/x.txt", "read", "user", tok, &exp), nil, nil); st != 200 || b != "secret-x\n" {
			t.Errorf("host %q: download as user, expiring: %d %s", host, st, b)
		}
		up := "up-" + strconv.Itoa(len(host)) + ".txt"
		if st, b := d.signedCall("POST", host, signedURL(up, "write", "", tok, &exp), []byte("uploaded\n"), map[string]string{"Content-Type": "application/octet-stream"}); st != 200 || !strings.Contains(b, Home+"/"+up) {
			t.Errorf("host %q: upload: %d %s", host, st, b)
		}
		if resp, b := d.call("GET", "/files?path="+up, nil, envdHeaders(id, tok, nil)); resp.StatusCode != 200 || string(b) != "uploaded\n" {
			t.Errorf("host %q: uploaded file: %d %s", host, resp.StatusCode, b)
		}
	}
	// The sandbox's host takes the access token as the header route does.
	if st, b := d.signedCall("GET", sandboxHost(id), "/files?path=/workspace/x.txt", nil, map[string]string{"X-Access-Token": tok}); st != 200 || b != "secret-x\n" {
		t.Errorf("host route with the token: %d %s", st, b)
	}
	// Create answers the domain, so that SDKs without E2B_SANDBOX_URL
	// address the sandbox's host.
	resp, b := d.call("POST", "/sandboxes/"+id+"/connect", []byte(`{"timeout":300}`), map[string]string{"X-API-KEY": d.key, "Content-Type": "application/json"})
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"domain":"`+testDomain+`"`) {
		t.Errorf("connect: %d %s", resp.StatusCode, b)
	}
}

// Attacks on signed URLs: each is refused with E2B's error shape
// ({code,message}, a Connect error for an RPC).
func TestSignedURLAttacks(t *testing.T) {
	d := newDoor(t)
	a, tokA := d.create()
	b, tokB := d.create()
	for _, c := range []struct{ id, tok, p string }{{a, tokA, "/workspace/x"}, {a, tokA, "/workspace/y"}, {b, tokB, "/workspace/x"}, {a, tokA, "/workspace/dir/f"}} {
		if resp, body := d.call("POST", "/files?path="+c.p, []byte("of "+c.id+c.p), envdHeaders(c.id, c.tok, map[string]string{"Content-Type": "application/octet-stream"})); resp.StatusCode != 200 {
			t.Fatalf("write %s: %d %s", c.p, resp.StatusCode, body)
		}
	}
	readA := signedURL("/workspace/x", "read", "", tokA, nil)
	with := func(u string, set map[string]string) string {
		pu, _ := url.Parse(u)
		q := pu.Query()
		for k, v := range set {
			q.Set(k, v)
		}
		return "/files?" + q.Encode()
	}
	now := time.Now().Unix()
	soon, past := now+60, now-10
	refused := func(name string, status int, msg, method, host, pq string, hdr map[string]string) {
		t.Helper()
		st, body := d.signedCall(method, host, pq, []byte("overwritten"), hdr)
		if st != status || !strings.Contains(body, `"code":`) || !strings.Contains(body, msg) {
			t.Errorf("%s: %d %s, want %d %q", name, st, body, status, msg)
		}
		if strings.Contains(body, "of "+a) || strings.Contains(body, "of "+b) {
			t.Errorf("%s: served a file: %s", name, body)
		}
	}
	shared, hostA, hostB := "", sandboxHost(a), sandboxHost(b)
	for _, host := range []string{shared, hostA} {
		// Other paths than the one signed.
		for _, p := range []string{"/workspace/y", "/workspace/x/", "/workspace//x", "/workspace/./x", "/workspace/dir/../x", "/workspace/x/../y", "/workspace%2Fx", "x", "/workspace/x\x00"} {
			refused("path "+p+" on "+host, 401, "invalid signature", "GET", host, with(readA, map[string]string{"path": p}), nil)
		}
		// A read signature is no write signature.
		refused("write with a read signature", 401, "invalid signature", "POST", host, readA, map[string]string{"Content-Type": "application/octet-stream"})
		// Another user than the one signed.
		refused("username added", 401, "invalid signature", "GET", host, with(readA, map[string]string{"username": "user"}), nil)
		// Expiry: moved forward, dropped, passed.
		exp := signedURL("/workspace/x", "read", "", tokA, &soon)
		refused("expiry moved forward", 401, "invalid signature", "GET", host, with(exp, map[string]string{"signature_expiration": strconv.FormatInt(soon+3600, 10)}), nil)
		refused("expiry dropped", 401, "invalid signature", "GET", host, strings.Replace(exp, "signature_expiration=", "x=", 1), nil)
		refused("expired", 401, "signature is already expired", "GET", host, signedURL("/workspace/x", "read", "", tokA, &past), nil)
		refused("expiry not a number", 400, "signature_expiration", "GET", host, with(exp, map[string]string{"signature_expiration": "1e99"}), nil)
		// Malformed and huge signatures.
		for name, sig := range map[string]string{"empty": "", "v0": "v0_" + readA[len(readA)-43:], "short": "v1_abc", "not base64": "v1_" + strings.Repeat("!", 43), "huge": "v1_" + strings.Repeat("A", 64<<10)} {
			refused(name+" signature", 401, "invalid signature", "GET", host, with(readA, map[string]string{"signature": sig}), nil)
		}
		refused("signature twice", 400, "given 2 times", "GET", host, readA+"&signature="+url.QueryEscape(signFile("/workspace/y", "read", "", tokA, nil)), nil)
		refused("path twice", 400, "given 2 times", "GET", host, readA+"&path=/workspace/y", nil)
		// A signature grants /files, nothing else.
		rpcMsg := "only GET or POST /files"
		if host == shared { // (no sandbox named: the control plane's)
			rpcMsg = "API key"
		}
		refused("signed RPC", 401, rpcMsg, "POST", host, "/filesystem.Filesystem/Remove?"+readA[len("/files?"):], map[string]string{"Content-Type": "application/json"})
		refused("signed DELETE", 405, "GET (download) or POST (upload)", "DELETE", host, readA, nil)
	}
	// A's signature on B: by B's host, by B's header, by a Host naming
	// another sandbox than the header.
	refused("A's URL on B's host", 401, "invalid signature", "GET", hostB, readA, nil)
	refused("A's URL with B's header", 401, "invalid signature", "GET", shared, readA, map[string]string{"E2b-Sandbox-Id": b})
	refused("Host B, header A", 400, "one sandbox per request", "GET", hostB, readA, map[string]string{"E2b-Sandbox-Id": a})
	refused("Host B, header A, A's token", 400, "one sandbox per request", "GET", hostB, "/files?path=/workspace/x", map[string]string{"E2b-Sandbox-Id": a, "X-Access-Token": tokA})
	refused("A's token on B's host", 401, "X-Access-Token", "POST", hostB, "/filesystem.Filesystem/Remove", map[string]string{"X-Access-Token": tokA, "Content-Type": "application/json"})
	refused("another port", 502, "airlock has no preview ports yet (getHost)", "GET", "3000-"+a+"."+testDomain, readA, nil)
	// A forged signature names no sandbox on the shared URL, and an
	// unsigned URL is no way in.
	refused("forged", 401, "invalid signature", "GET", shared, signedURL("/workspace/x", "read", "", "ea_guess", nil), nil)
	refused("unsigned on the host", 401, "missing signature", "GET", hostA, "/files?path=/workspace/x", nil)
	refused("unsigned on the shared URL", 401, "API key", "GET", shared, "/files?path=/workspace/x", nil)
	// The files are untouched, and the signed URL still works...
	if st, body := d.signedCall("GET", shared, readA, nil, nil); st != 200 || body != "of "+a+"/workspace/x" {
		t.Fatalf("the signed URL: %d %s", st, body)
	}
	// ...until the sandbox is killed: no replay after.
	if resp, body := d.call("DELETE", "/sandboxes/"+a, nil, map[string]string{"X-API-KEY": d.key}); resp.StatusCode != 204 {
		t.Fatalf("kill: %d %s", resp.StatusCode, body)
	}
	refused("replay on the shared URL after kill", 401, "invalid signature", "GET", shared, readA, nil)
	refused("replay on the host after kill", 404, "not running", "GET", hostA, readA, nil)
	refused("replay by header after kill", 404, "not running", "GET", shared, readA, map[string]string{"E2b-Sandbox-Id": a})
}
