package manager

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// hosts is kept state that hears of its exec's connections.
type hosts struct {
	mu   sync.Mutex
	seen []string
}

func (h *hosts) NoteEgress(host string) {
	h.mu.Lock()
	h.seen = append(h.seen, host)
	h.mu.Unlock()
}

// keeper keeps state per exec (ExecCall.Keep) and sets daemon env; it
// sees the policy's analysis and gets its state back after the command.
type keeper struct {
	name    string
	core    hook.Core
	env     string
	mu      sync.Mutex
	back    map[string]any // exec id -> its state, as AfterExec got it
	classes [][]string
}

func (k *keeper) Name() string             { return k.name }
func (k *keeper) Attach(c hook.Core) error { k.core = c; return nil }

func (k *keeper) BeforeExec(_ context.Context, x *hook.ExecCall) error {
	if x.Keep != nil {
		return errors.New("another module's state")
	}
	k.mu.Lock()
	var cl []string
	if x.Analysis != nil {
		for _, c := range x.Analysis.Classes {
			cl = append(cl, string(c))
		}
	}
	k.classes = append(k.classes, cl)
	k.mu.Unlock()
	x.Keep = &hosts{}
	if k.env != "" {
		x.DaemonEnv = append(x.DaemonEnv, k.env)
	}
	return nil
}

func (k *keeper) AfterExec(_ context.Context, x hook.ExecDone) {
	k.mu.Lock()
	if k.back == nil {
		k.back = map[string]any{}
	}
	k.back[x.ExecID] = x.Keep
	k.mu.Unlock()
}

// bundler is a TaskBundler that writes nothing.
type bundler struct{ name string }

func (b bundler) Name() string                                                   { return b.name }
func (b bundler) Attach(hook.Core) error                                         { return nil }
func (b bundler) WriteBundle(context.Context, *hook.TaskBundle, io.Writer) error { return nil }

// Each module's ExecHook state is its own, held while the command runs
// (an EgressNoter in it told of the exec's hosts) and given back to the
// same module's AfterExec; its daemon env reaches the command but not
// the record's env_names.
func TestModuleKeepAndDaemonEnv(t *testing.T) {
	ctx := context.Background()
	a, b := &keeper{name: "a", env: "A_SETTING=1"}, &keeper{name: "b", env: "B_SETTING=2"}
	m, _ := fakeTierManagerWith(t, func(c *Config) { c.Modules = []hook.Module{a, b} })
	sb, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	execID, _, err := m.Exec(ctx, sb.ID, sandbox.ExecRequest{Background: true, Argv: []string{"sleep", "0.3"}}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	a.core.NoteEgress(execID, "registry.example.test")
	a.core.NoteEgress("e-unknown", "x.example.test")
	var out bytes.Buffer
	fgID, _, err := m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"sh", "-c", "echo $A_SETTING$B_SETTING"}}, nil, &out, nil)
	if err != nil || out.String() != "12\n" {
		t.Fatalf("daemon env: %q %v", out.String(), err)
	}
	for _, k := range []*keeper{a, b} {
		waitFor(t, func() bool { k.mu.Lock(); defer k.mu.Unlock(); return len(k.back) == 2 })
	}
	for _, k := range []*keeper{a, b} {
		k.mu.Lock()
		if len(k.back) != 2 || k.back[execID] == k.back[fgID] || len(k.classes) != 2 || !slices.Contains(k.classes[1], "read") {
			t.Errorf("%s: back %v, classes %v", k.name, k.back, k.classes)
		}
		k.mu.Unlock()
	}
	for _, k := range []*keeper{a, b} {
		if h := k.back[execID].(*hosts); len(h.seen) != 1 || h.seen[0] != "registry.example.test" {
			t.Errorf("%s's hosts: %v", k.name, h.seen)
		}
		if h := k.back[fgID].(*hosts); len(h.seen) != 0 {
			t.Errorf("%s's other exec's hosts: %v", k.name, h.seen)
		}
	}
	execs, err := m.recs.Execs(ctx, sb.ID)
	if err != nil || len(execs) != 2 {
		t.Fatal(execs, err)
	}
	for _, e := range execs {
		if strings.Contains(strings.Join(e.EnvNames, ","), "SETTING") {
			t.Errorf("daemon env on the record: %v", e.EnvNames)
		}
	}
}

// Bundles: no audit log, no bundles (and no error); an audit log but no
// bundle writer, an error (a task must not go without its bundle); at
// most one writer.
func TestModuleBundler(t *testing.T) {
	k := &keeper{name: "k"}
	fakeTierManagerWith(t, func(c *Config) { c.Modules = []hook.Module{k} })
	if b, err := k.core.Bundles(); b != nil || !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("no bundler: %v %v", b, err)
	}
	if k.core.AuditLog() == nil {
		t.Error("no audit log")
	}
	k.core.FlushRefusals(context.Background(), "sb-none") // no egress service: nothing
	fakeTierManagerWith(t, func(c *Config) { c.Modules = []hook.Module{k, bundler{"b"}} })
	if b, err := k.core.Bundles(); err != nil || b == nil {
		t.Errorf("a bundler: %v %v", b, err)
	}
	fakeTierManagerWith(t, func(c *Config) { c.Modules = []hook.Module{k, bundler{"b"}}; c.Audit = nil })
	if b, err := k.core.Bundles(); err != nil || b != nil {
		t.Errorf("without an audit log: %v %v", b, err)
	}
	cfg := Config{Modules: []hook.Module{bundler{"b1"}, bundler{"b2"}}}
	m := &Manager{cfg: cfg}
	if err := (&hook.Set{}).Attach(cfg.Modules, &core{m: m}); !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "second bundle writer") {
		t.Errorf("two bundlers: %v", err)
	}
}

// waitFor waits (at most 10 s) until ok.
func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}
