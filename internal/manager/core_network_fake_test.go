package manager

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/errdefs"
	fakert "github.com/airlock-dev/airlock/internal/runtime/fake"
	"github.com/airlock-dev/airlock/internal/store"
)

// recNet is a network module's egress service that records the core's
// calls; it gives sandboxes no runtime.Network (the fake has none), only
// the proxy env.
type recNet struct {
	mu        sync.Mutex
	calls     []string
	failApply bool
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

func (n *recNet) SandboxNetwork(id string) (hook.SandboxNetwork, error) {
	n.note("network " + id)
	return hook.SandboxNetwork{Env: []string{"HTTPS_PROXY=http://127.0.0.1:3128"}}, nil
}

func (n *recNet) Apply(_ context.Context, id string) error {
	n.note("apply " + id)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.failApply {
		return errors.New("no policy today")
	}
	return nil
}

func (n *recNet) RemoveSandbox(id string)               { n.note("remove " + id) }
func (n *recNet) Usage(string) *egress.Usage            { return &egress.Usage{} }
func (n *recNet) FlushRefusals(context.Context, string) {}
func (n *recNet) Presets() egress.Presets               { return egress.Presets{} }
func (n *recNet) Close(context.Context)                 { n.note("close") }

func (n *recNet) set(fail bool) {
	n.mu.Lock()
	n.failApply = fail
	n.mu.Unlock()
}

// count is how many calls began with prefix.
func (n *recNet) count(prefix string) int {
	k := 0
	for _, c := range n.seen() {
		if strings.HasPrefix(c, prefix) {
			k++
		}
	}
	return k
}

// netModule is a NetworkModule with a recNet; otherNet a second one.
type netModule struct {
	n    *recNet
	core *hook.Core
}

func (netModule) Name() string               { return "net" }
func (m netModule) Attach(c hook.Core) error { *m.core = c; return nil }
func (m netModule) Network() hook.Network    { return m.n }

type otherNet struct{}

func (otherNet) Name() string           { return "net2" }
func (otherNet) Attach(hook.Core) error { return nil }
func (otherNet) Network() hook.Network  { return &recNet{} }

// The core calls the network module where its contract says: the
// sandbox's network (and proxy env) before the backend creates it, its
// policy once it is live (an error stops it as failed), its removal as
// it leaves the live set, Close at shutdown; a connection's process is
// attributed to its exec.
func TestCoreNetworkModule(t *testing.T) {
	ctx := context.Background()
	n := &recNet{}
	var c hook.Core
	m, log := fakeTierManagerWith(t, func(cfg *Config) { cfg.Modules = []hook.Module{netModule{n: n, core: &c}} })
	if !c.HasEgress() {
		t.Fatal("HasEgress with a network module: false")
	}
	sb, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := n.seen(); !slices.Equal(got, []string{"network " + sb.ID, "apply " + sb.ID}) {
		t.Errorf("calls at create: %q", got)
	}
	var out bytes.Buffer
	if _, _, err := m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"sh", "-c", "echo $HTTPS_PROXY"}}, nil, &out, nil); err != nil || out.String() != "http://127.0.0.1:3128\n" {
		t.Errorf("the proxy env in a command: %q %v", out.String(), err)
	}
	if got, err := m.Get(ctx, sb.ID); err != nil || got.Egress == nil {
		t.Errorf("a live sandbox's egress usage: %+v %v", got, err)
	}
	var pid int
	execID, _, err := m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"sleep", "30"}, Background: true}, func(_ string, p int) { pid = p }, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, got := c.ExecOf(sb.ID, pid); got != execID {
		t.Errorf("ExecOf its pid: %q, want %q", got, execID)
	}
	if _, got := c.ExecOf(sb.ID, 0); got != "" {
		t.Errorf("ExecOf an unknown pid: %q", got)
	}
	if err := m.Running(sb.ID, execID).Signal(ctx, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	other, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	before := n.count("apply ")
	c.ReapplyEgress(ctx, "")
	if got := n.count("apply ") - before; got != 2 {
		t.Errorf("ReapplyEgress of all: %d applies, want 2", got)
	}
	c.ReapplyEgress(ctx, other.ID)
	if got := n.count("apply ") - before; got != 3 {
		t.Errorf("ReapplyEgress of one: %d applies in all, want 3", got)
	}
	if err := m.Destroy(ctx, other.ID); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(n.seen(), "remove "+other.ID) {
		t.Errorf("calls %q: the destroyed sandbox was not removed", n.seen())
	}
	n.set(true)
	if _, err := m.Create(ctx, sandbox.CreateRequest{}); err == nil || !strings.Contains(err.Error(), "egress policy") {
		t.Errorf("create whose egress policy fails: %v", err)
	}
	failed, err := m.List(ctx, "stopped")
	if err != nil || len(failed) != 2 || failed[0].StopReason != sandbox.StopFailed {
		t.Fatalf("stopped sandboxes %+v %v, want the newest failed", failed, err)
	}
	if !slices.Contains(n.seen(), "remove "+failed[0].ID) {
		t.Errorf("the failed sandbox was not removed from the network: %q", n.seen())
	}
	if err := c.RecordAs(ctx, audit.Entry{SandboxID: sb.ID, Kind: "egress.test", Actor: "proxy"}, true); err != nil {
		t.Fatal(err)
	}
	c.RecordAsync(ctx, audit.Entry{SandboxID: sb.ID, Kind: "egress.async", Actor: "proxy"})
	evs, err := log.Query(ctx, store.AuditFilter{SandboxID: sb.ID})
	if err != nil {
		t.Fatal(err)
	}
	var actors []string
	for _, e := range evs {
		if strings.HasPrefix(e.Kind, "egress.") {
			actors = append(actors, e.Kind+" "+e.Actor)
		}
	}
	if !slices.Equal(actors, []string{"egress.test proxy", "egress.async proxy"}) {
		t.Errorf("the module's events: %q", actors)
	}
	if err := m.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if got := n.seen(); got[len(got)-1] != "close" || !slices.Contains(got, "remove "+sb.ID) {
		t.Errorf("calls at shutdown: %q, want the sandbox removed, then close", got)
	}
}

// At most one module runs the network.
func TestCoreSecondNetworkModule(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var c hook.Core
	_, err = New(context.Background(), Config{Backend: fakert.New(t.TempDir()), Templates: testTemplates(t), Store: st,
		Modules: []hook.Module{netModule{n: &recNet{}, core: &c}, otherNet{}}})
	if !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "second network module") {
		t.Errorf("two network modules: %v", err)
	}
}
