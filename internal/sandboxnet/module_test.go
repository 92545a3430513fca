package sandboxnet

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/redact"
	"github.com/airlock-dev/airlock/internal/runtime"
	fakert "github.com/airlock-dev/airlock/internal/runtime/fake"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/template"
)

// netBackend is the fake backend (which refuses a Network) with the
// network taken off each spec and kept, so a test can play the backend's
// part: hand the sandbox's Network connections, queries and refusals.
type netBackend struct {
	*fakert.Backend
	mu    sync.Mutex
	nets  map[string]runtime.Network
	specs map[string]runtime.Spec
}

func (b *netBackend) Create(ctx context.Context, spec runtime.Spec) (runtime.Sandbox, error) {
	b.mu.Lock()
	b.nets[spec.ID], b.specs[spec.ID] = spec.Network, spec
	b.mu.Unlock()
	spec.Network = nil
	return b.Backend.Create(ctx, spec)
}

func (b *netBackend) net(t *testing.T, id string) runtime.Network {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.nets[id]
	if n == nil {
		t.Fatalf("sandbox %s was created without a network", id)
	}
	return n
}

type env struct {
	n   *Net
	m   *manager.Manager
	log *audit.Log
	st  *store.Store
	be  *netBackend
}

// onFake attaches the module (cfg) to a manager on the fake backend, with
// polFile as the daemon's policy ("": the defaults).
func onFake(t *testing.T, cfg Config, polFile string, more ...hook.Module) *env {
	t.Helper()
	root := t.TempDir()
	st, err := store.Open(filepath.Join(root, "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tpls, err := template.Open(filepath.Join(root, "templates"))
	if err != nil {
		t.Fatal(err)
	}
	red := redact.New()
	log, err := audit.Open(context.Background(), audit.Config{Store: st, Redactor: red, KeyFile: filepath.Join(root, "audit.key")})
	if err != nil {
		t.Fatal(err)
	}
	var pf *policy.File
	if polFile != "" {
		if pf, err = policy.Parse([]byte(polFile)); err != nil {
			t.Fatal(err)
		}
	}
	be := &netBackend{Backend: fakert.New(t.TempDir()), nets: map[string]runtime.Network{}, specs: map[string]runtime.Spec{}}
	n := New(cfg)
	m, err := manager.New(context.Background(), manager.Config{Backend: be, Templates: tpls, Store: st, Audit: log, Policy: pf,
		Redactor: red, Logf: t.Logf, Modules: append([]hook.Module{n}, more...)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown(context.Background()) })
	return &env{n: n, m: m, log: log, st: st, be: be}
}

func (e *env) events(t *testing.T, sandboxID, kind string) []*audit.Event {
	t.Helper()
	evs, err := e.log.Query(context.Background(), store.AuditFilter{SandboxID: sandboxID, Kind: kind})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

const allowPlain = `
egress:
  rules:
    - {id: plain, action: allow, hosts: [plain.example.test], ports: [80]}
`

// Without an egress service a sandbox has no network (no proxy env), the
// policy is still shown, and what needs the proxy is unsupported.
func TestWithoutProxy(t *testing.T) {
	ctx := context.Background()
	e := onFake(t, Config{}, allowPlain)
	if e.n.Network() != nil {
		t.Fatal("a module without an egress service gave the core a network")
	}
	sb, err := e.m.Create(ctx, sandbox.CreateRequest{Env: []string{"A=b"}})
	if err != nil {
		t.Fatal(err)
	}
	// The template's PATH, then the caller's; no proxy variable.
	if env := e.be.specs[sb.ID].Env; e.be.specs[sb.ID].Network != nil || len(env) != 2 || !strings.HasPrefix(env[0], "PATH=") || env[1] != "A=b" {
		t.Fatalf("spec without a proxy: %+v", e.be.specs[sb.ID])
	}
	p, err := e.n.EgressPolicy(ctx, sb.ID)
	if err != nil || len(p.Rules) != 1 || p.Rules[0].ID != "plain" {
		t.Fatalf("policy without a proxy: %+v %v", p, err)
	}
	if _, err := e.n.SetEgress(ctx, sb.ID, egress.Policy{}, false); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("SetEgress without a proxy: %v", err)
	}
	if err := e.n.CutEgress(ctx, true); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("CutEgress without a proxy: %v", err)
	}
	if _, err := e.n.EgressCA(sb.ID); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("EgressCA without a proxy: %v", err)
	}
	if on, cut := e.n.EgressStatus(); on || cut {
		t.Errorf("status without a proxy: %v %v", on, cut)
	}
	if u := e.n.EgressUsage(sb.ID); u != nil {
		t.Errorf("usage without a proxy: %+v", u)
	}
	if e.n.Presets() != nil {
		t.Error("presets without a proxy")
	}
}

// A sandbox gets its network and the proxy env before the caller's; the
// policy shown is its policy's, then the runtime layer's; a stopped
// sandbox's layer and policy go, and asking for it is a conflict.
func TestSandboxPolicyAndLayer(t *testing.T) {
	ctx := context.Background()
	e := onFake(t, Config{Egress: &egress.Config{Presets: egress.Presets{"npm": {"registry.example.test"}}}, MaxProxyConns: 7}, allowPlain)
	sb, err := e.m.Create(ctx, sandbox.CreateRequest{Env: []string{"HTTP_PROXY=mine"}})
	if err != nil {
		t.Fatal(err)
	}
	spec := e.be.specs[sb.ID]
	if spec.Network == nil || spec.MaxProxyConns != 7 {
		t.Fatalf("spec: network %v, max conns %d", spec.Network, spec.MaxProxyConns)
	}
	if i := slices.Index(spec.Env, "HTTP_PROXY=http://"+runtime.ProxyAddr); i < 0 || i > slices.Index(spec.Env, "HTTP_PROXY=mine") {
		t.Fatalf("proxy env not before the caller's: %q", spec.Env)
	}
	if on, cut := e.n.EgressStatus(); !on || cut {
		t.Fatalf("status: %v %v", on, cut)
	}
	if len(e.n.Presets()["npm"]) != 1 {
		t.Errorf("presets: %v", e.n.Presets())
	}
	if _, err := e.n.EgressCA(sb.ID); err != nil {
		t.Errorf("CA of a running sandbox: %v", err)
	}
	layer := egress.Policy{Rules: []egress.Rule{{ID: "no-plain", Action: "deny", Hosts: []string{"plain.example.test"}}}}
	p, err := e.n.SetEgress(ctx, sb.ID, layer, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Rules) != 2 {
		t.Fatalf("policy with a layer: %+v", p.Rules)
	}
	if evs := e.events(t, sb.ID, "egress.policy"); len(evs) != 1 {
		t.Errorf("%d egress.policy records, want 1", len(evs))
	}
	if _, err := e.n.SetEgress(ctx, sb.ID, egress.Policy{Rules: []egress.Rule{{ID: "bad", Action: "maybe"}}}, false); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("invalid layer: %v", err)
	}
	// Dropping the layer's deny rule relaxes the sandbox: refused to an
	// agent, the old layer stays.
	if _, err := e.n.SetEgress(ctx, sb.ID, egress.Policy{}, true); !errors.Is(err, errdefs.ErrDenied) {
		t.Errorf("a tighten-only caller dropped a deny rule: %v", err)
	}
	if p, _ := e.n.EgressPolicy(ctx, sb.ID); len(p.Rules) != 2 {
		t.Errorf("a refused layer changed the policy: %+v", p.Rules)
	}
	if err := e.m.Destroy(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.n.EgressPolicy(ctx, sb.ID); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("policy of a stopped sandbox: %v", err)
	}
	if _, err := e.n.SetEgress(ctx, sb.ID, layer, false); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("layer on a stopped sandbox: %v", err)
	}
	if _, err := e.n.EgressPolicy(ctx, "sb-none"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("policy of an unknown sandbox: %v", err)
	}
	if l := e.n.layer(sb.ID); l != nil {
		t.Errorf("a stopped sandbox's layer is kept: %+v", l)
	}
}

// The kill switch is recorded, and refuses every sandbox's connections.
func TestCutIsRecorded(t *testing.T) {
	ctx := context.Background()
	e := onFake(t, Config{Egress: &egress.Config{}}, "")
	if err := e.n.CutEgress(ctx, true); err != nil {
		t.Fatal(err)
	}
	if on, cut := e.n.EgressStatus(); !on || !cut {
		t.Fatalf("status after the cut: %v %v", on, cut)
	}
	if err := e.n.CutEgress(ctx, false); err != nil {
		t.Fatal(err)
	}
	evs := e.events(t, "", "egress.cut")
	if len(evs) != 2 || !strings.Contains(string(evs[0].Payload), `"on":true`) || !strings.Contains(string(evs[1].Payload), `"on":false`) {
		t.Fatalf("cut records: %d", len(evs))
	}
}

// A DNS query from a sandbox is decided by the egress service and on the
// audit record as the egress actor's, naming the exec whose process
// asked; the sandbox's usage counts it.
func TestDNSRecordedWithItsExec(t *testing.T) {
	ctx := context.Background()
	e := onFake(t, Config{Egress: &egress.Config{Limits: egress.Limits{DNSRate: -1}}}, "")
	sb, err := e.m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	type started struct {
		execID string
		pid    int
	}
	starts := make(chan started, 1)
	go func() {
		_, _, _ = e.m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"sleep", "30"}}, func(id string, pid int) { starts <- started{id, pid} }, nil, nil)
	}()
	var x started
	select {
	case x = <-starts:
	case <-time.After(10 * time.Second):
		t.Fatal("the exec did not start")
	}
	if _, err := e.be.net(t, sb.ID).DNS(ctx, rvQuery(t, "denied.example.test."), x.pid); err != nil {
		t.Fatal(err)
	}
	evs := e.events(t, sb.ID, "egress.dns")
	if len(evs) != 1 || evs[0].Actor != "egress" || evs[0].ExecID != x.execID || !strings.Contains(string(evs[0].Payload), `"deny"`) {
		t.Fatalf("dns records: %+v", evs)
	}
	if u := e.n.EgressUsage(sb.ID); u == nil || u.Events == 0 {
		t.Errorf("usage after a query: %+v", u)
	}
	if v, err := e.m.Get(ctx, sb.ID); err != nil || v.Egress == nil {
		t.Errorf("the core's view has no egress usage: %+v %v", v, err)
	}
}

// Sandboxes have one network: a second module with an egress service is
// refused at New; one without a service is no network at all.
func TestOneNetworkModule(t *testing.T) {
	root := t.TempDir()
	st, err := store.Open(filepath.Join(root, "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tpls, err := template.Open(filepath.Join(root, "templates"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := manager.Config{Backend: fakert.New(t.TempDir()), Templates: tpls, Store: st}
	a, b := New(Config{Egress: &egress.Config{}}), New(Config{Egress: &egress.Config{}})
	b2 := &renamed{Net: b, name: "network-2"}
	cfg.Modules = []hook.Module{a, b2}
	if _, err := manager.New(context.Background(), cfg); !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "second network module") {
		t.Fatalf("two network modules: %v", err)
	}
	be := &netBackend{Backend: fakert.New(t.TempDir()), nets: map[string]runtime.Network{}, specs: map[string]runtime.Spec{}}
	cfg.Backend = be
	cfg.Modules = []hook.Module{New(Config{}), &renamed{Net: New(Config{Egress: &egress.Config{}, MaxProxyConns: 3}), name: "network-2"}}
	m, err := manager.New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("a module without a service and one with: %v", err)
	}
	t.Cleanup(func() { _ = m.Shutdown(context.Background()) })
	sb, err := m.Create(context.Background(), sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if spec := be.specs[sb.ID]; spec.Network == nil || spec.MaxProxyConns != 3 {
		t.Errorf("the sandbox's network is not the module with a service's: %+v", spec)
	}
}

// renamed is a network module under another name (module names are
// unique).
type renamed struct {
	*Net
	name string
}

func (r *renamed) Name() string { return r.name }

// broker is a Broker of fixed secrets, or of an error.
type broker struct {
	secs []egress.Secret
	err  error
}

func (b *broker) BrokeredSecrets(context.Context, string) ([]egress.Secret, error) {
	return b.secs, b.err
}

// Brokered secrets join the sandbox's policy (their values never shown);
// a broker that fails refuses the create, and the sandbox it started is
// stopped as failed.
func TestBrokeredSecrets(t *testing.T) {
	ctx := context.Background()
	br := &broker{secs: []egress.Secret{{ID: "g-1", Placeholder: "AIRLOCK_SECRET_X", Hosts: []string{"api.example.test"}, Value: "s3cret-value"}}}
	e := onFake(t, Config{Egress: &egress.Config{}, Broker: br}, "")
	sb, err := e.m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.n.EgressPolicy(ctx, sb.ID)
	if err != nil || len(p.Secrets) != 1 || p.Secrets[0].ID != "g-1" || p.Secrets[0].Value != "" {
		t.Fatalf("policy with a brokered secret: %+v %v", p, err)
	}
	br.secs, br.err = nil, errors.New("sealed with another key")
	if _, err := e.m.Create(ctx, sandbox.CreateRequest{}); err == nil || !strings.HasPrefix(err.Error(), "egress policy: ") {
		t.Fatalf("create with a failing broker: %v", err)
	}
	stopped, err := e.m.List(ctx, "stopped")
	if err != nil || len(stopped) != 1 || stopped[0].StopReason != sandbox.StopFailed {
		t.Fatalf("the sandbox of the refused create: %+v %v", stopped, err)
	}
}

// A sandbox's network layer (the E2B door's rules) is applied from
// create, replaced whole, and only ever narrows the sandbox's policy
// with the operator's runtime layer: a replacement that would allow,
// grant, name a preset or broker a secret is refused and changes
// nothing; dropping it leaves the operator's policy, and the
// operator's runtime layer is never the caller's to drop.
func TestNetworkLayerNarrowsOnly(t *testing.T) {
	ctx := context.Background()
	e := onFake(t, Config{Egress: &egress.Config{Presets: egress.Presets{"npm": {"registry.example.test"}}}}, allowPlain)
	denyPlain := &egress.Policy{Rules: []egress.Rule{{ID: "e2b-deny-out", Action: "deny", Hosts: []string{"plain.example.test"}}}}
	sb, err := e.m.Create(ctx, sandbox.CreateRequest{TightenOnly: true, NetworkLayer: denyPlain})
	if err != nil {
		t.Fatal(err)
	}
	ids := func() []string {
		p, err := e.n.EgressPolicy(ctx, sb.ID)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range p.Rules {
			out = append(out, r.ID)
		}
		return out
	}
	if got := ids(); !slices.Equal(got, []string{"plain", "e2b-deny-out"}) {
		t.Fatalf("create-time layer: %v", got)
	}
	if _, err := e.n.SetEgress(ctx, sb.ID, egress.Policy{Rules: []egress.Rule{{ID: "op", Action: "deny", CIDRs: []string{"192.0.2.0/24"}}}}, false); err != nil {
		t.Fatal(err)
	}
	for name, l := range map[string]egress.Policy{
		"an allow rule":   {Rules: []egress.Rule{{ID: "e2b-deny-out", Action: "allow", Hosts: []string{"evil.example.test"}}}},
		"a grant":         {Grant: []egress.Category{egress.PublicWeb}},
		"a preset":        {Presets: []string{"npm"}},
		"a secret":        {Secrets: []egress.Secret{{ID: "s", Placeholder: "placeholder-0123", Hosts: []string{"plain.example.test"}}}},
		"a duplicate id":  {Rules: []egress.Rule{{ID: "op", Action: "deny", CIDRs: []string{"198.51.100.0/24"}}}},
		"an invalid rule": {Rules: []egress.Rule{{ID: "x", Action: "maybe"}}},
	} {
		if _, err := e.n.SetNetworkLayer(ctx, sb.ID, &l); err == nil {
			t.Errorf("%s: accepted", name)
		}
		if got := ids(); !slices.Equal(got, []string{"plain", "op", "e2b-deny-out"}) {
			t.Fatalf("%s: a refused layer changed the policy: %v", name, got)
		}
	}
	// A replacement widens back to the ceiling, never past it.
	if _, err := e.n.SetNetworkLayer(ctx, sb.ID, nil); err != nil {
		t.Fatal(err)
	}
	if got := ids(); !slices.Equal(got, []string{"plain", "op"}) {
		t.Errorf("no layer: %v", got)
	}
	if evs := e.events(t, sb.ID, "egress.network"); len(evs) != 1 {
		t.Errorf("%d egress.network records, want 1", len(evs))
	}
	if _, err := e.n.SetNetworkLayer(ctx, sb.ID, denyPlain); err != nil {
		t.Fatal(err)
	}
	if err := e.m.Destroy(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.n.SetNetworkLayer(ctx, sb.ID, nil); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("layer of a stopped sandbox: %v", err)
	}
	e.n.mu.Lock()
	_, kept := e.n.netLayers[sb.ID]
	e.n.mu.Unlock()
	if kept {
		t.Errorf("a stopped sandbox's network layer is kept")
	}
	// At create, too, the layer may only narrow.
	if _, err := e.m.Create(ctx, sandbox.CreateRequest{TightenOnly: true, NetworkLayer: &egress.Policy{Grant: []egress.Category{egress.PublicWeb}}}); !errors.Is(err, errdefs.ErrDenied) {
		t.Errorf("a create-time layer that grants: %v", err)
	}
}

// A new network layer holds at once: a tunnel it denies, already open,
// is closed when it is set; one it still allows goes on. Loopback only:
// the daemon's policy opens two loopback echo servers, opaque.
func TestNetworkLayerClosesWhatItDenies(t *testing.T) {
	ctx := context.Background()
	echo := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
			}
		}()
		return ln.Addr().String()
	}
	a, b := echo(), echo()
	_, pa, _ := net.SplitHostPort(a)
	_, pb, _ := net.SplitHostPort(b)
	pol := "egress:\n  rules:\n    - {id: lo, action: allow, cidrs: [127.0.0.1/32], ports: [" + pa + ", " + pb + "], opaque: true}\n"
	e := onFake(t, Config{Egress: &egress.Config{}}, pol)
	sb, err := e.m.Create(ctx, sandbox.CreateRequest{TightenOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	tunnel := func(dest string) net.Conn {
		t.Helper()
		in, out := net.Pipe()
		go e.be.net(t, sb.ID).ProxyConn(out, 0)
		_ = in.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(in, "CONNECT "+dest+" HTTP/1.1\r\nHost: "+dest+"\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(in), nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("CONNECT %s: %v %v", dest, resp, err)
		}
		return in
	}
	alive := func(c net.Conn) bool {
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, "ping"); err != nil {
			return false
		}
		buf := make([]byte, 4)
		_, err := io.ReadFull(c, buf)
		return err == nil && string(buf) == "ping"
	}
	ca, cb := tunnel(a), tunnel(b)
	if !alive(ca) || !alive(cb) {
		t.Fatal("the tunnels do not carry")
	}
	deny := &egress.Policy{Rules: []egress.Rule{{ID: "e2b-deny-out-" + pa, Action: "deny", CIDRs: []string{"127.0.0.1/32"}, Ports: []int{mustAtoi(t, pa)}}}}
	if _, err := e.n.SetNetworkLayer(ctx, sb.ID, deny); err != nil {
		t.Fatal(err)
	}
	if alive(ca) {
		t.Error("the tunnel the new layer denies is still open")
	}
	if !alive(cb) {
		t.Error("the tunnel the new layer allows was closed")
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
