package pool_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/hook"
	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/pool"
	"github.com/airlock-dev/airlock/internal/redact"
	"github.com/airlock-dev/airlock/internal/runtime"
	fakert "github.com/airlock-dev/airlock/internal/runtime/fake"
	"github.com/airlock-dev/airlock/internal/sandbox"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/template/templatetest"
)

func TestMain(m *testing.M) { templatetest.Main(m) }

// rig is a manager on the fake backend with the pool module (and a
// recording network module) attached, as the daemon's stack orders them.
type rig struct {
	m      *manager.Manager
	ps     *pool.Pools
	net    *recNet
	log    *audit.Log
	st     *store.Store
	beDir  string
	closed bool
}

func newRig(t *testing.T, min, max int, configure func(*manager.Config)) *rig {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	red := redact.New()
	log, err := audit.Open(context.Background(), audit.Config{Store: st, Redactor: red, KeyFile: filepath.Join(dir, "audit.key")})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{net: &recNet{}, log: log, st: st, beDir: t.TempDir()}
	r.ps, err = pool.New(pool.Config{Pools: []pool.Spec{{Template: "host", Backend: fakert.Name, Min: min, Max: max}},
		Retry: 20 * time.Millisecond, Idle: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	cfg := manager.Config{Backend: fakert.New(r.beDir), Templates: templatetest.Store(t), Store: st, Audit: log, Redactor: red, Logf: t.Logf,
		Modules: []hook.Module{netModule{r.net}, r.ps}}
	if configure != nil {
		configure(&cfg)
	}
	r.m, err = manager.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !r.closed {
			_ = r.m.Shutdown(context.Background())
		}
	})
	r.ps.Start()
	return r
}

// status is the one pool's status.
func (r *rig) status() pool.Status { return r.ps.List()[0] }

// waitReady waits until the pool has n ready and is not filling.
func (r *rig) waitReady(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := r.status()
		if st.Ready == n && st.Filling == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pool never had %d ready: %+v", n, st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sandboxDirs are the fake backend's sandboxes on disk (one per sandbox
// that exists, ready or live).
func (r *rig) sandboxDirs(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(r.beDir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// warmCreates are the sandbox.create events of claimed sandboxes.
func (r *rig) warmCreates(t *testing.T) map[string]bool {
	t.Helper()
	evs, err := r.log.Query(context.Background(), store.AuditFilter{Kind: "sandbox.create"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, e := range evs {
		if strings.Contains(string(e.Payload), `"warm":true`) {
			out[e.SandboxID] = true
		}
	}
	return out
}

// Many creates at once against a pool of 6: every sandbox is distinct,
// at least the 6 came from the pool (each handed out once; refills may
// be claimed too), the others were made for their create; run under the
// race detector in the e2e tier.
func TestConcurrentClaimsNeverShareASandbox(t *testing.T) {
	r := newRig(t, 6, 6, nil)
	r.waitReady(t, 6)
	const n = 16
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sb, err := r.m.Create(context.Background(), sandbox.CreateRequest{})
			if err == nil {
				ids[i] = sb.ID
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for i, id := range ids {
		if errs[i] != nil {
			t.Fatalf("create %d: %v", i, errs[i])
		}
		if seen[id] {
			t.Fatalf("sandbox %s handed out twice", id)
		}
		seen[id] = true
	}
	// the pool refills meanwhile: at least its 6 were claimed, maybe more
	warm := r.warmCreates(t)
	st := r.status()
	if len(warm) < 6 || int64(len(warm)) != st.Claimed || st.Claimed+st.Misses != n {
		t.Errorf("claimed from the pool: %d (%v), status %+v", len(warm), warm, st)
	}
	for id := range warm {
		if !seen[id] {
			t.Errorf("warm sandbox %s recorded but no create returned it", id)
		}
	}
}

// A claim is refilled in the background; the claimed sandbox is not the
// one that replaces it.
func TestClaimRefills(t *testing.T) {
	r := newRig(t, 2, 2, nil)
	r.waitReady(t, 2)
	sb, err := r.m.Create(context.Background(), sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.warmCreates(t)[sb.ID] {
		t.Fatalf("sandbox %s was not claimed from the pool", sb.ID)
	}
	r.waitReady(t, 2)
	if st := r.status(); st.Created != 3 || st.Claimed != 1 {
		t.Errorf("after one claim: %+v", st)
	}
	if got := len(r.sandboxDirs(t)); got != 3 {
		t.Errorf("sandboxes on the backend: %d, want 3 (2 ready, 1 live)", got)
	}
}

// A claimed sandbox is destroyed when it is, never put back: its
// directory goes, the pool has made a new one, and the next claim is not
// it.
func TestClaimedSandboxIsDestroyedNotReused(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, 1, 1, nil)
	r.waitReady(t, 1)
	sb, err := r.m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"true"}}, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := r.m.Destroy(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	for _, d := range r.sandboxDirs(t) {
		if strings.Contains(d, sb.ID) {
			t.Fatalf("the destroyed sandbox's directory is still there: %s", d)
		}
	}
	r.waitReady(t, 1)
	next, err := r.m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if next.ID == sb.ID || !r.warmCreates(t)[next.ID] {
		t.Errorf("second claim %s (first %s, warm %v)", next.ID, sb.ID, r.warmCreates(t))
	}
}

// What the request sets is applied at the claim: labels on the record,
// env in every command (after the template's, with the network's), its
// policy layer at the gate, its egress applied only then (never while it
// waited), its lifetime from the claim.
func TestClaimAppliesTheRequest(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, 1, 1, nil)
	r.waitReady(t, 1)
	if n := r.net.count("apply "); n != 0 {
		t.Fatalf("a ready sandbox's egress was applied before any claim (%d)", n)
	}
	req := sandbox.CreateRequest{Labels: map[string]string{"team": "blue"}, Env: []string{"CLAIM_VAR=claimed-7"},
		Policy: &policy.Layer{Rules: []policy.Rule{{ID: "no-ls", Command: "ls *", Action: policy.Deny}}},
		Limits: runtime.Limits{Lifetime: 1500 * time.Millisecond}}
	sb, err := r.m.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !r.warmCreates(t)[sb.ID] {
		t.Fatalf("sandbox %s was not claimed", sb.ID)
	}
	if sb.Labels["team"] != "blue" {
		t.Errorf("labels: %v", sb.Labels)
	}
	if got := r.net.seen(); !slices.Contains(got, "network "+sb.ID) || !slices.Contains(got, "apply "+sb.ID) {
		t.Errorf("network calls: %q", got)
	}
	var out bytes.Buffer
	if _, st, err := r.m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"sh", "-c", `echo "$CLAIM_VAR $HTTPS_PROXY"`}}, nil, &out, nil); err != nil || st.Code != 0 {
		t.Fatalf("exec: %v %+v", err, st)
	}
	if got := strings.TrimSpace(out.String()); got != "claimed-7 http://127.0.0.1:3128" {
		t.Errorf("env in the claimed sandbox: %q", got)
	}
	var pe *sandbox.PolicyError
	if _, _, err := r.m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"ls", "/"}}, nil, nil, nil); !errors.As(err, &pe) {
		t.Errorf("the request's policy layer: ls ran (%v)", err)
	}
	if sb.Limits.Lifetime != 1500*time.Millisecond {
		t.Errorf("limits on the record: %+v", sb.Limits)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, err := r.m.Get(ctx, sb.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State == "stopped" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the claimed sandbox outlived its lifetime")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A request the pool's sandboxes cannot be made into is created as if
// there were no pool, never cut down: a limit the backend sets only at
// create (pids: another shape, the pool untouched), a memory limit the
// fake cannot set (taken, destroyed, then the create the fake refuses).
func TestUnfitRequestFallsBackNeverDropsAField(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, 1, 1, nil)
	r.waitReady(t, 1)
	if _, err := r.m.Create(ctx, sandbox.CreateRequest{Limits: runtime.Limits{Pids: 64}}); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("pids on the fake: %v, want its unsupported", err)
	}
	if st := r.status(); st.Claimed != 0 || st.Ready != 1 {
		t.Errorf("a create of another shape touched the pool: %+v", st)
	}
	if _, err := r.m.Create(ctx, sandbox.CreateRequest{Limits: runtime.Limits{MemoryBytes: 64 << 20}}); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("memory on the fake: %v, want its unsupported", err)
	}
	if n := len(r.warmCreates(t)); n != 0 {
		t.Errorf("%d sandboxes recorded as claimed", n)
	}
	if _, err := r.m.Create(ctx, sandbox.CreateRequest{User: runtime.User{Name: "user", Home: "/home/user"}}); err != nil {
		t.Fatal(err)
	}
	if n := len(r.warmCreates(t)); n != 0 {
		t.Errorf("a create with its own command user claimed a warm sandbox")
	}
}

// Pools count against the daemon's cap on sandboxes: a pool of 5 under a
// cap of 3 keeps 3 and says why not more; live and ready sandboxes
// together never pass the cap; a claim still works at the cap.
func TestPoolsRespectTheCaps(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, 5, 5, func(c *manager.Config) { c.Caps = manager.Caps{Sandboxes: 3} })
	deadline := time.Now().Add(5 * time.Second)
	for r.status().Failed == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the pool never hit the cap: %+v", r.status())
		}
		time.Sleep(5 * time.Millisecond)
	}
	st := r.status()
	if st.Ready != 3 || !strings.Contains(st.LastError, "sandboxes") {
		t.Errorf("under a cap of 3: %+v", st)
	}
	if _, err := r.m.Create(ctx, sandbox.CreateRequest{Limits: runtime.Limits{Lifetime: time.Hour}, Labels: map[string]string{"a": "b"}}); err != nil {
		t.Fatalf("a claim at the cap: %v", err)
	}
	if n := len(r.sandboxDirs(t)); n > 3 {
		t.Errorf("%d sandboxes exist under a cap of 3", n)
	}
	time.Sleep(100 * time.Millisecond) // refills meanwhile are refused
	if n := r.m.LiveCount() + r.status().Ready; n > 3 {
		t.Errorf("live + ready = %d under a cap of 3", n)
	}
}

// Shutdown drains the pool before it stops the live sandboxes: nothing
// is left on the backend, and nothing is made after.
func TestShutdownLeavesNothingRunning(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, 3, 3, nil)
	r.waitReady(t, 3)
	if _, err := r.m.Create(ctx, sandbox.CreateRequest{}); err != nil {
		t.Fatal(err)
	}
	r.closed = true
	if err := r.m.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if d := r.sandboxDirs(t); len(d) != 0 {
		t.Errorf("left on the backend: %v", d)
	}
	time.Sleep(50 * time.Millisecond)
	if d := r.sandboxDirs(t); len(d) != 0 || r.status().Ready != 0 {
		t.Errorf("made after shutdown: %v %+v", d, r.status())
	}
	if r.ps.Take(hook.WarmShape{Template: "host", Backend: fakert.Name}) != nil {
		t.Error("a drained pool handed out a sandbox")
	}
}

// A ready sandbox that stops on its own leaves the pool, which makes
// another; none is claimed dead.
func TestDeadReadySandboxIsReplaced(t *testing.T) {
	r := newRig(t, 1, 1, nil)
	r.waitReady(t, 1)
	w := r.ps.Take(hook.WarmShape{Template: "host", Backend: fakert.Name})
	if w == nil {
		t.Fatal("no ready sandbox")
	}
	w.Discard(context.Background()) // as if it died: the pool forgets it
	r.waitReady(t, 1)
	if st := r.status(); st.Created != 2 {
		t.Errorf("after a discard: %+v", st)
	}
}

func TestParseSpec(t *testing.T) {
	for in, want := range map[string]pool.Spec{
		"host=2":            {Template: "host", Min: 2, Max: 2},
		"py@gvisor=1:8":     {Template: "py", Backend: "gvisor", Min: 1, Max: 8},
		"img@native=0:4":    {Template: "img", Backend: "native", Min: 0, Max: 4},
		"snap-1@native=3:3": {Template: "snap-1", Backend: "native", Min: 3, Max: 3},
	} {
		got, err := pool.ParseSpec(in)
		if err != nil || got != want {
			t.Errorf("ParseSpec(%q) = %+v, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "host", "=2", "host=", "host=x", "host=3:2", "host=0", "host=-1:2", "@native=1", "a@b@c=1", "host=1:99999"} {
		if _, err := pool.ParseSpec(in); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("ParseSpec(%q): %v, want invalid", in, err)
		}
	}
}

// recNet is a network module's egress service that records the core's
// calls; it gives sandboxes no runtime.Network (the fake has none), only
// the proxy env.
type recNet struct {
	mu    sync.Mutex
	calls []string
}

func (n *recNet) note(s string) {
	n.mu.Lock()
	n.calls = append(n.calls, s)
	n.mu.Unlock()
}

func (n *recNet) seen() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.calls)
}

func (n *recNet) count(prefix string) int {
	k := 0
	for _, c := range n.seen() {
		if strings.HasPrefix(c, prefix) {
			k++
		}
	}
	return k
}

func (n *recNet) SandboxNetwork(id string) (hook.SandboxNetwork, error) {
	n.note("network " + id)
	return hook.SandboxNetwork{Env: []string{"HTTPS_PROXY=http://127.0.0.1:3128"}}, nil
}
func (n *recNet) Apply(_ context.Context, id string) error { n.note("apply " + id); return nil }
func (n *recNet) RemoveSandbox(id string)                  { n.note("remove " + id) }
func (n *recNet) Usage(string) *egress.Usage               { return &egress.Usage{} }
func (n *recNet) FlushRefusals(context.Context, string)    {}
func (n *recNet) Presets() egress.Presets                  { return egress.Presets{} }
func (n *recNet) Close(context.Context)                    {}

type netModule struct{ n *recNet }

func (netModule) Name() string            { return "net" }
func (netModule) Attach(hook.Core) error  { return nil }
func (m netModule) Network() hook.Network { return m.n }

// A claimed sandbox reset starts over as a sandbox made for its request:
// its env is still there, from its spec now (no pool sandbox behind it).
func TestResetOfAClaimedSandboxKeepsItsRequest(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, 1, 1, nil)
	r.waitReady(t, 1)
	sb, err := r.m.Create(ctx, sandbox.CreateRequest{Env: []string{"CLAIM_VAR=again"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.m.Reset(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, st, err := r.m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"sh", "-c", `echo "$CLAIM_VAR"`}}, nil, &out, nil); err != nil || st.Code != 0 {
		t.Fatalf("exec: %v %+v", err, st)
	}
	if got := strings.TrimSpace(out.String()); got != "again" {
		t.Errorf("CLAIM_VAR after a reset: %q", got)
	}
}

// A create the pools' sandboxes would keep from the cap takes the place
// of a ready one: under a cap of 2, a pool holding both does not stop a
// create of another shape; the pool refills once there is room again.
func TestPoolGivesWayToACreateAtTheCap(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, 2, 2, func(c *manager.Config) { c.Caps = manager.Caps{Sandboxes: 2} })
	r.waitReady(t, 2)
	// a command user of its own: not the pool's shape
	sb, err := r.m.Create(ctx, sandbox.CreateRequest{User: runtime.User{Name: "user", Home: "/home/user"}})
	if err != nil {
		t.Fatalf("a create at the cap with the pool full: %v", err)
	}
	// a refill may take the room first and be evicted in turn
	if st := r.status(); st.Ready > 1 || st.Discarded < 1 || r.m.LiveCount()+st.Ready > 2 {
		t.Errorf("after the eviction: %+v, %d live", st, r.m.LiveCount())
	}
	if n := len(r.sandboxDirs(t)); n > 2 {
		t.Errorf("%d sandboxes under a cap of 2", n)
	}
	if err := r.m.Destroy(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	r.waitReady(t, 2)
}
