package e2b

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/apikeys"
	"github.com/airlock-dev/airlock/internal/approvals"
	"github.com/airlock-dev/airlock/internal/daemon/stack"
	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/explain"
	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/redact"
	"github.com/airlock-dev/airlock/internal/runtime/native"
	"github.com/airlock-dev/airlock/internal/sandboxnet"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/template"
)

// These tests speak the wire protocol by hand, for what the published SDK
// never sends (bad tokens, bad framing, options airlock lacks); the SDK
// itself is driven end to end by cmd/airlock's TestE2BWithTheRealSDK.

func TestMain(m *testing.M) {
	native.MaybeInit()
	os.Exit(m.Run())
}

type door struct {
	t    *testing.T
	m    *manager.Manager
	appr *approvals.Approvals
	net  *sandboxnet.Net
	pol  *explain.Explain
	keys *apikeys.Keys
	url  string
	key  string
}

func newDoor(t *testing.T, configure ...func(*stack.Config)) *door {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("these tests need root under CI")
		}
		t.Skip("these tests need root (native sandboxes)")
	}
	dir := t.TempDir()
	_ = os.Chmod(dir, 0o711)
	_ = os.Chmod(filepath.Dir(dir), 0o711)
	var rb [4]byte
	_, _ = rand.Read(rb[:])
	be, err := native.New(native.Config{StateDir: filepath.Join(dir, "state"), CgroupParent: "airlock-e2btest-" + hex.EncodeToString(rb[:]), DieWithOwner: true})
	if err != nil {
		t.Fatal(err)
	}
	tpls, err := template.Open(filepath.Join(dir, "templates"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(dir, "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse([]byte("classes: {read: allow, verify: allow, build: allow, write: allow, dependency: allow, network: allow, destructive: allow, secret: deny, unknown: allow, persist: allow}\n"))
	if err != nil {
		t.Fatal(err)
	}
	// The daemon's modules, wired as the daemon wires them.
	cfg := stack.Config{Config: manager.Config{Backend: be, Templates: tpls, Store: st, Policy: pol},
		TaskDir: filepath.Join(dir, "tasks"), SnapshotDir: filepath.Join(dir, "snapshots")}
	for _, c := range configure {
		c(&cfg)
	}
	stk, err := stack.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	m, keys := stk.Manager, stk.Keys
	srv := httptest.NewServer(New(Config{Manager: m, Files: stk.Files, Usage: stk.Usage, Network: stk.Network, Snapshots: stk.Snapshots, Redactor: stk.Records, Keys: keys, Owners: stk.Projects, Domain: testDomain}))
	t.Cleanup(func() {
		srv.Close()
		_ = m.Shutdown(context.Background())
		_ = st.Close()
		_ = be.RemoveCgroupParent()
	})
	_, key, err := keys.Create(context.Background(), "t", "e2b")
	if err != nil {
		t.Fatal(err)
	}
	return &door{t: t, m: m, appr: stk.Approvals, net: stk.Network, pol: stk.Explain, keys: keys, url: srv.URL, key: key}
}

// withEgress gives the door's daemon an egress service (nothing is
// dialed: the tests read the policy it would apply).
func withEgress(c *stack.Config) { c.Egress = &egress.Config{} }

// call sends a request; hdr adds headers.
func (d *door) call(method, path string, body []byte, hdr map[string]string) (*http.Response, []byte) {
	d.t.Helper()
	req, _ := http.NewRequest(method, d.url+path, bytes.NewReader(body))
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func (d *door) create() (id, token string) {
	d.t.Helper()
	resp, b := d.call("POST", "/v2/sandboxes", []byte(`{"templateID":"base","timeout":300}`), map[string]string{"X-API-KEY": d.key, "Content-Type": "application/json"})
	if resp.StatusCode != 201 {
		d.t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	var c struct {
		SandboxID, EnvdAccessToken, EnvdVersion, TemplateID string
	}
	_ = json.Unmarshal(b, &c)
	if c.EnvdVersion != EnvdVersion || c.TemplateID != "host" || !strings.HasPrefix(c.EnvdAccessToken, "ea_") {
		d.t.Fatalf("create answer: %s", b)
	}
	return c.SandboxID, c.EnvdAccessToken
}

func envdHeaders(id, token string, extra map[string]string) map[string]string {
	h := map[string]string{"E2b-Sandbox-Id": id, "E2b-Sandbox-Port": EnvdPort, "X-Access-Token": token}
	for k, v := range extra {
		h[k] = v
	}
	return h
}

func envelope(flags byte, msg string) []byte {
	b := make([]byte, 5+len(msg))
	b[0] = flags
	binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	copy(b[5:], msg)
	return b
}

// frames splits a stream answer into its envelopes.
func frames(t *testing.T, b []byte) (msgs []string, end string) {
	t.Helper()
	for len(b) > 0 {
		if len(b) < 5 {
			t.Fatalf("short envelope: %q", b)
		}
		n := binary.BigEndian.Uint32(b[1:5])
		if int(n) > len(b)-5 {
			t.Fatalf("envelope length %d over %d bytes", n, len(b)-5)
		}
		if b[0]&flagEndStream != 0 {
			if len(b) != int(5+n) {
				t.Fatalf("bytes after the end of the stream: %q", b[5+n:])
			}
			return msgs, string(b[5 : 5+n])
		}
		msgs = append(msgs, string(b[5:5+n]))
		b = b[5+n:]
	}
	t.Fatal("stream without an end")
	return nil, ""
}

func TestAuth(t *testing.T) {
	d := newDoor(t)
	resp, b := d.call("GET", "/v2/sandboxes", nil, nil)
	if resp.StatusCode != 401 || !strings.Contains(string(b), `"code":401`) {
		t.Errorf("no key: %d %s", resp.StatusCode, b)
	}
	resp, _ = d.call("GET", "/v2/sandboxes", nil, map[string]string{"X-API-KEY": "e2b_" + strings.Repeat("0", 40)})
	if resp.StatusCode != 401 {
		t.Errorf("unknown key: %d", resp.StatusCode)
	}
	_, ak, _ := d.keys.Create(context.Background(), "native", "")
	if resp, b := d.call("GET", "/v2/sandboxes", nil, map[string]string{"X-API-KEY": ak}); resp.StatusCode != 200 {
		t.Errorf("an airlock key on the E2B door: %d %s", resp.StatusCode, b)
	}
	a, tokA := d.create()
	b2, tokB := d.create()
	list := []byte(`{}`)
	ct := map[string]string{"Content-Type": "application/json"}
	for name, h := range map[string]map[string]string{
		"no token":            envdHeaders(a, "", ct),
		"B's token for A":     envdHeaders(a, tokB, ct),
		"A's token for B":     envdHeaders(b2, tokA, ct),
		"a made-up sandbox":   envdHeaders("nosuch", tokA, ct),
		"token with a suffix": envdHeaders(a, tokA+"0", ct),
	} {
		resp, body := d.call("POST", "/process.Process/List", list, h)
		if resp.StatusCode != 401 || !strings.Contains(string(body), `"unauthenticated"`) {
			t.Errorf("%s: %d %s", name, resp.StatusCode, body)
		}
	}
	if resp, body := d.call("POST", "/process.Process/List", list, envdHeaders(a, tokA, ct)); resp.StatusCode != 200 || string(bytes.TrimSpace(body)) != `{"processes":[]}` {
		t.Errorf("A's token for A: %d %s", resp.StatusCode, body)
	}
	// Only the in-sandbox API's port is served: no door to other ports.
	h := envdHeaders(a, tokA, ct)
	h["E2b-Sandbox-Port"] = "8080"
	if resp, body := d.call("POST", "/process.Process/List", list, h); resp.StatusCode < 500 || !strings.Contains(string(body), "no preview ports yet (getHost)") {
		t.Errorf("port 8080: %d %s", resp.StatusCode, body)
	}
	// Only the sandbox user.
	h = envdHeaders(a, tokA, ct)
	req, _ := http.NewRequest("GET", "/", nil)
	req.SetBasicAuth("root", "")
	h["Authorization"] = req.Header.Get("Authorization")
	if resp, body := d.call("POST", "/process.Process/List", list, h); resp.StatusCode != 403 || !strings.Contains(string(body), "unprivileged user") {
		t.Errorf("as root: %d %s", resp.StatusCode, body)
	}
	if resp, body := d.call("GET", "/files?path=/etc/hostname&username=root", nil, envdHeaders(a, tokA, nil)); resp.StatusCode != 403 {
		t.Errorf("files as root: %d %s", resp.StatusCode, body)
	}
}

func TestStartStream(t *testing.T) {
	d := newDoor(t)
	id, tok := d.create()
	h := envdHeaders(id, tok, map[string]string{"Content-Type": "application/connect+json", "Connect-Protocol-Version": "1"})
	req := `{"process":{"cmd":"/bin/bash","args":["-l","-c","printf out; printf err >&2; exit 7"],"envs":{"A":"1"}},"stdin":false}`
	resp, b := d.call("POST", "/process.Process/Start", envelope(0, req), h)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/connect+json" {
		t.Fatalf("start: %d %s %q", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	msgs, end := frames(t, b)
	if end != "{}" {
		t.Errorf("end of stream: %s", end)
	}
	if len(msgs) < 3 || !strings.HasPrefix(msgs[0], `{"event":{"start":{"pid":`) {
		t.Fatalf("the first event must be start: %q", msgs)
	}
	var out, errOut []byte
	for _, m := range msgs[1 : len(msgs)-1] {
		var ev eventMessage
		if err := json.Unmarshal([]byte(m), &ev); err != nil || ev.Event.Data == nil {
			t.Fatalf("event %s: %v", m, err)
		}
		out = append(out, ev.Event.Data.Stdout...)
		errOut = append(errOut, ev.Event.Data.Stderr...)
	}
	if string(out) != "out" || string(errOut) != "err" {
		t.Errorf("output %q %q", out, errOut)
	}
	if last := msgs[len(msgs)-1]; last != `{"event":{"end":{"exitCode":7,"exited":true,"status":"exit status 7","error":"exit status 7"}}}` {
		t.Errorf("end event %s", last)
	}

	// A denied command ends the stream with permission_denied, no start.
	resp, b = d.call("POST", "/process.Process/Start", envelope(0, `{"process":{"cmd":"cat","args":["/workspace/.env"]}}`), h)
	msgs, end = frames(t, b)
	if resp.StatusCode != 200 || len(msgs) != 0 || !strings.Contains(end, `"code":"permission_denied"`) || !strings.Contains(end, "airlock policy") {
		t.Errorf("denied: %d %q %s", resp.StatusCode, msgs, end)
	}
	// Bad requests: each a Connect error, nothing run.
	for name, c := range map[string]struct {
		body []byte
		hdr  map[string]string
		code string
	}{
		"no cmd":          {envelope(0, `{"process":{}}`), nil, "invalid_argument"},
		"not JSON":        {envelope(0, `{"process":`), nil, "invalid_argument"},
		"short envelope":  {[]byte{0, 0, 0}, nil, "invalid_argument"},
		"huge envelope":   {[]byte{0, 0x7f, 0, 0, 0}, nil, "resource_exhausted"},
		"compressed":      {envelope(1, `{}`), nil, "unimplemented"},
		"gzip":            {envelope(0, `{}`), map[string]string{"Connect-Content-Encoding": "gzip"}, "unimplemented"},
		"bad timeout":     {envelope(0, `{"process":{"cmd":"true"}}`), map[string]string{"Connect-Timeout-Ms": "soon"}, "invalid_argument"},
		"binary protobuf": {envelope(0, `{}`), map[string]string{"Content-Type": "application/connect+proto"}, "unimplemented"},
	} {
		hh := map[string]string{}
		for k, v := range h {
			hh[k] = v
		}
		for k, v := range c.hdr {
			hh[k] = v
		}
		_, b := d.call("POST", "/process.Process/Start", c.body, hh)
		if _, end := frames(t, b); !strings.Contains(end, `"code":"`+c.code+`"`) {
			t.Errorf("%s: %s, want %s", name, end, c.code)
		}
	}
	uh := envdHeaders(id, tok, map[string]string{"Content-Type": "application/json"})
	if resp, b := d.call("POST", "/process.Process/SendSignal", []byte(`{"process":{"pid":1},"signal":"SIGNAL_SIGHUP"}`), uh); resp.StatusCode != 400 || !strings.Contains(string(b), "invalid_argument") {
		t.Errorf("unknown signal: %d %s", resp.StatusCode, b)
	}
	if resp, b := d.call("POST", "/process.Process/SendSignal", []byte(`{"process":{"pid":4242},"signal":"SIGNAL_SIGKILL"}`), uh); resp.StatusCode != 404 || !strings.Contains(string(b), "not_found") {
		t.Errorf("unknown pid: %d %s", resp.StatusCode, b)
	}
	if resp, b := d.call("POST", "/filesystem.Filesystem/Nope", []byte(`{"path":"/workspace"}`), uh); resp.StatusCode != 501 || !strings.Contains(string(b), "unsupported") {
		t.Errorf("an unknown filesystem method: %d %s", resp.StatusCode, b)
	}
	if resp, b := d.call("POST", "/nosuch.Service/Call", []byte(`{}`), uh); resp.StatusCode != 501 || !strings.Contains(string(b), "unimplemented") {
		t.Errorf("unknown procedure: %d %s", resp.StatusCode, b)
	}
}

func TestControlPlane(t *testing.T) {
	d := newDoor(t)
	key := map[string]string{"X-API-KEY": d.key, "Content-Type": "application/json"}
	for body, want := range map[string]string{
		`{"templateID":"base","network":{"allowPublicTraffic":true}}`:     "unsupported by airlock: network.allowPublicTraffic",
		`{"templateID":"base","network":{"denyOut":["0.0.0.0/0:1-99"]}}`:  "a port range",
		`{"templateID":"base","autoPause":true,"autoPauseMemory":false}`:  "unsupported by airlock: lifecycle",
		`{"templateID":"base","autoResume":{"enabled":true}}`:             "autoResume can only be true",
		`{"templateID":"base","volumeMounts":[{"name":"v","path":"/v"}]}`: "unsupported by airlock: volumeMounts",
		`{"templateID":"nosuch"}`:                                         "nosuch",
		`{"templateID":"base","timeout":-1}`:                              "negative",
		`{"templateID":"base","envVars":{"":"x"}}`:                        "K=V",
		`{"templateID":`: "request body",
	} {
		resp, b := d.call("POST", "/v2/sandboxes", []byte(body), key)
		if resp.StatusCode < 400 || !strings.Contains(string(b), want) {
			t.Errorf("create %s: %d %s, want an error with %q", body, resp.StatusCode, b, want)
		}
	}
	if n, _ := d.m.List(context.Background(), ""); len(n) != 0 {
		t.Errorf("refused creates left %d sandboxes", len(n))
	}
	var ids []string
	for i := 0; i < 3; i++ {
		id, _ := d.create()
		ids = append(ids, id)
	}
	resp, b := d.call("GET", "/v2/sandboxes?limit=2", nil, key)
	var page []sandboxDetail
	_ = json.Unmarshal(b, &page)
	next := resp.Header.Get("X-Next-Token")
	// (newest first, as E2B lists)
	if len(page) != 2 || next == "" || page[0].SandboxID != ids[2] || page[0].EnvdAccessToken != "" {
		t.Fatalf("page 1: %s next %q", b, next)
	}
	_, b = d.call("GET", "/v2/sandboxes?limit=2&nextToken="+next, nil, key)
	_ = json.Unmarshal(b, &page)
	if len(page) != 1 || page[0].SandboxID != ids[0] {
		t.Errorf("page 2: %s", b)
	}
	if resp, _ := d.call("GET", "/v2/sandboxes?state=sleeping", nil, key); resp.StatusCode != 400 {
		t.Errorf("bad state: %d", resp.StatusCode)
	}
	if resp, b := d.call("GET", "/sandboxes/metrics?sandbox_ids="+ids[0], nil, key); resp.StatusCode != 501 || !strings.Contains(string(b), "unsupported by airlock: the metrics of many") {
		t.Errorf("metrics: %d %s", resp.StatusCode, b)
	}
	// pause twice: 409 the second time; connect resumes (201), then 200.
	if resp, b := d.call("POST", "/sandboxes/"+ids[0]+"/pause", nil, key); resp.StatusCode != 204 {
		t.Fatalf("pause: %d %s", resp.StatusCode, b)
	}
	if resp, _ := d.call("POST", "/sandboxes/"+ids[0]+"/pause", nil, key); resp.StatusCode != 409 {
		t.Errorf("second pause: %d", resp.StatusCode)
	}
	if resp, b := d.call("POST", "/v2/sandboxes/"+ids[0]+"/connect", []byte(`{"timeout":60}`), key); resp.StatusCode != 201 {
		t.Errorf("connect to paused: %d %s", resp.StatusCode, b)
	}
	if resp, b := d.call("POST", "/v2/sandboxes/"+ids[0]+"/connect", []byte(`{}`), key); resp.StatusCode != 200 {
		t.Errorf("connect to running: %d %s", resp.StatusCode, b)
	}
	if resp, _ := d.call("DELETE", "/sandboxes/"+ids[0], nil, key); resp.StatusCode != 204 {
		t.Errorf("kill: %d", resp.StatusCode)
	}
	for _, c := range [][2]string{{"DELETE", ""}, {"GET", ""}, {"POST", "/connect"}, {"POST", "/timeout"}} {
		if resp, _ := d.call(c[0], "/sandboxes/"+ids[0]+c[1], []byte(`{"timeout":10}`), key); resp.StatusCode != 404 {
			t.Errorf("%s %s on a killed sandbox: %d, want 404", c[0], c[1], resp.StatusCode)
		}
	}
}

// The process list answers with the configs clients sent: a secret known
// to the daemon in a running command's environment or arguments is shown
// redacted there, as in every other record (found in a review: it was
// returned raw).
func TestProcessListRedactsSecrets(t *testing.T) {
	const secret = "e2b-list-secret-6f1c9a2b7d"
	d := newDoor(t, func(c *stack.Config) { c.Redactor = redact.New(secret) })
	id, tok := d.create()
	h := envdHeaders(id, tok, map[string]string{"Content-Type": "application/connect+json", "Connect-Protocol-Version": "1"})
	started := make(chan struct{})
	go func() {
		defer close(started)
		req := `{"process":{"cmd":"/bin/sh","args":["-c","sleep 3","` + secret + `"],"envs":{"TOKEN":"` + secret + `"}},"stdin":false}`
		d.call("POST", "/process.Process/Start", envelope(0, req), h)
	}()
	lh := envdHeaders(id, tok, map[string]string{"Content-Type": "application/json"})
	var body []byte
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		var resp *http.Response
		resp, body = d.call("POST", "/process.Process/List", []byte(`{}`), lh)
		if resp.StatusCode == 200 && strings.Contains(string(body), "sleep 3") {
			break
		}
	}
	if !strings.Contains(string(body), "sleep 3") {
		t.Fatalf("the running process is not listed: %s", body)
	}
	if strings.Contains(string(body), secret) || !strings.Contains(string(body), "[REDACTED") {
		t.Errorf("the process list shows the secret: %s", body)
	}
	<-started
}

// The daemon's manager is a Core.
var _ Core = (*manager.Manager)(nil)
