package manager

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/store"
)

// hookLog is what the test modules saw, in order.
type hookLog struct {
	mu  sync.Mutex
	got []string
}

func (l *hookLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, s)
}

func (l *hookLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.got
	l.got = nil
	return g
}

// probe is a module with every hook; refuse and failCreate make it say
// no, env it adds to every command.
type probe struct {
	name       string
	log        *hookLog
	core       hook.Core
	refuse     string // refuse a command whose argv holds this
	failCreate bool
	env        string
	stops      []hook.StopEvent
}

func (p *probe) Name() string             { return p.name }
func (p *probe) Attach(c hook.Core) error { p.core = c; return nil }

func (p *probe) OnCreate(ctx context.Context, sb hook.SandboxRef) error {
	p.log.add(p.name + ".create")
	if p.failCreate {
		return errors.New("no sandbox today")
	}
	if s, err := p.core.State(ctx, sb.ID); err != nil || s != sandbox.Running {
		return fmt.Errorf("state at create: %v %v", s, err)
	}
	return nil
}

func (p *probe) BeforeExec(_ context.Context, x *hook.ExecCall) error {
	p.log.add(p.name + ".exec")
	if p.refuse != "" && slices.ContainsFunc(x.Argv, func(a string) bool { return strings.Contains(a, p.refuse) }) {
		return errors.New("not this one")
	}
	if p.env != "" {
		x.Env = append(x.Env, p.env)
	}
	return nil
}

func (p *probe) AfterExec(_ context.Context, x hook.ExecDone) {
	p.log.add(fmt.Sprintf("%s.after:%d", p.name, x.Status.Code))
}

func (p *probe) OnStop(_ context.Context, ev hook.StopEvent) map[string]any {
	p.log.add(p.name + ".stop:" + ev.Reason)
	p.stops = append(p.stops, ev)
	return map[string]any{p.name + "_saw": ev.Reason}
}

// The hooks of Config.Modules run in their order at create, exec and
// stop; a hook's env reaches the command; a StopHook sees the reason and
// a sandbox it can still read, and its payload is on sandbox.stop.
func TestModuleHookOrder(t *testing.T) {
	ctx := context.Background()
	log := &hookLog{}
	a := &probe{name: "a", log: log, env: "FROM_A=1"}
	b := &probe{name: "b", log: log, env: "FROM_B=2"}
	m, alog := fakeTierManagerWith(t, func(c *Config) { c.Modules = []hook.Module{a, b} })
	sb, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := log.take(); !slices.Equal(got, []string{"a.create", "b.create"}) {
		t.Errorf("create hooks: %q", got)
	}
	var out bytes.Buffer
	if _, st, err := m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"sh", "-c", "echo $FROM_A$FROM_B"}}, nil, &out, nil); err != nil || st.Code != 0 || out.String() != "12\n" {
		t.Errorf("exec: %v %+v %q, want the modules' env", err, st, out.String())
	}
	if got := log.take(); !slices.Equal(got, []string{"a.exec", "b.exec", "a.after:0", "b.after:0"}) {
		t.Errorf("exec hooks: %q", got)
	}
	if err := m.Destroy(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if got := log.take(); !slices.Equal(got, []string{"a.stop:destroyed", "b.stop:destroyed"}) {
		t.Errorf("stop hooks: %q", got)
	}
	if len(a.stops) != 1 || a.stops[0].Sandbox == nil || a.stops[0].Prev != sandbox.Running || a.stops[0].SandboxID != sb.ID {
		t.Errorf("stop event: %+v", a.stops)
	}
	evs, err := alog.Query(ctx, store.AuditFilter{SandboxID: sb.ID, Kind: "sandbox.stop"})
	if err != nil || len(evs) != 1 || !bytes.Contains(evs[0].Payload, []byte(`"b_saw":"destroyed"`)) {
		t.Errorf("sandbox.stop: %v %v", evs, err)
	}
}

// A refusing ExecHook ends the exec before the backend sees it (the
// command's file is never made), the hooks after it are not asked, and
// the refusal is on the exec and audit record naming the module.
func TestModuleExecRefused(t *testing.T) {
	ctx := context.Background()
	log := &hookLog{}
	a := &probe{name: "a", log: log}
	guard := &probe{name: "guard", log: log, refuse: "marker"}
	c := &probe{name: "c", log: log}
	m, alog := fakeTierManagerWith(t, func(cfg *Config) { cfg.Modules = []hook.Module{a, guard, c} })
	sb, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	log.take()
	_, _, err = m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"sh", "-c", "echo x > marker"}}, nil, nil, nil)
	if !errors.Is(err, errdefs.ErrDenied) || !strings.Contains(err.Error(), "module guard") {
		t.Fatalf("refused exec: %v, want denied by module guard", err)
	}
	if got := log.take(); !slices.Equal(got, []string{"a.exec", "guard.exec"}) {
		t.Errorf("hooks asked: %q", got)
	}
	f, err := m.Files(ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Stat(ctx, "/workspace/marker"); err == nil {
		t.Error("the refused command ran: /workspace/marker exists")
	}
	evs, err := alog.Query(ctx, store.AuditFilter{SandboxID: sb.ID})
	if err != nil {
		t.Fatal(err)
	}
	var refused, started int
	for _, e := range evs {
		switch e.Kind {
		case "exec.refused":
			refused++
			if !bytes.Contains(e.Payload, []byte("refused by module guard")) {
				t.Errorf("exec.refused: %s", e.Payload)
			}
		case "exec.start":
			started++
		}
	}
	if refused != 1 || started != 0 {
		t.Errorf("audit: %d exec.refused, %d exec.start; want 1 and 0", refused, started)
	}
	execs, err := m.recs.Execs(ctx, sb.ID)
	if err != nil || len(execs) != 1 || !strings.Contains(execs[0].Error, "module guard") {
		t.Errorf("exec records: %+v %v", execs, err)
	}
}

// A failing CreateHook undoes the create: Create fails naming the
// module, nothing is left live, the record says failed, the hooks after
// it are not called, and the StopHooks see the undo.
func TestModuleCreateFails(t *testing.T) {
	ctx := context.Background()
	log := &hookLog{}
	a := &probe{name: "a", log: log}
	bad := &probe{name: "bad", log: log, failCreate: true}
	c := &probe{name: "c", log: log}
	m, _ := fakeTierManagerWith(t, func(cfg *Config) { cfg.Modules = []hook.Module{a, bad, c} })
	if _, err := m.Create(ctx, sandbox.CreateRequest{}); err == nil || !strings.Contains(err.Error(), "module bad") {
		t.Fatalf("create: %v, want the module's error", err)
	}
	if n := m.LiveCount(); n != 0 {
		t.Errorf("%d sandboxes live after a failed create", n)
	}
	if got := log.take(); !slices.Equal(got, []string{"a.create", "bad.create", "a.stop:failed", "bad.stop:failed", "c.stop:failed"}) {
		t.Errorf("hooks: %q", got)
	}
	all, err := m.List(ctx, "")
	if err != nil || len(all) != 1 || all[0].State != "stopped" || all[0].StopReason != sandbox.StopFailed {
		t.Errorf("records after a failed create: %+v %v", all, err)
	}
}

// Modules need names of their own: New refuses a duplicate or an empty
// one, and an Attach that fails.
func TestModuleAttach(t *testing.T) {
	for _, tc := range []struct {
		name string
		mods []hook.Module
		want string
	}{
		{"duplicate", []hook.Module{&probe{name: "x"}, &probe{name: "x"}}, `module "x"`},
		{"empty", []hook.Module{&probe{}}, `module ""`},
		{"attach fails", []hook.Module{failAttach{}}, "module broken: not today"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{}
			cfg.Modules = tc.mods
			m := &Manager{cfg: cfg}
			if err := (&hook.Set{}).Attach(cfg.Modules, &core{m: m}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("attach: %v, want %q", err, tc.want)
			}
		})
	}
}

type failAttach struct{}

func (failAttach) Name() string           { return "broken" }
func (failAttach) Attach(hook.Core) error { return errors.New("not today") }

// Pause, reset and finish go through the one transition table: each
// refusal is a conflict that says why, and the sandbox keeps its state.
func TestFakeTierStateRefusals(t *testing.T) {
	ctx := context.Background()
	m, _ := fakeTierManager(t)
	sb, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	c := &core{m: m}
	m.mu.Lock()
	_ = m.live[sb.ID].transition(sandbox.Finishing)
	m.mu.Unlock()
	if _, err := m.Pause(ctx, sb.ID); !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), "being finished") {
		t.Errorf("pause while finishing: %v", err)
	}
	if _, err := m.Reset(ctx, sb.ID); !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), "being finished") {
		t.Errorf("reset while finishing: %v", err)
	}
	if _, _, err := m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"true"}}, nil, nil, nil); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("exec while finishing: %v", err)
	}
	if s, err := c.State(ctx, sb.ID); err != nil || s != sandbox.Finishing {
		t.Errorf("state: %v %v", s, err)
	}
	m.mu.Lock()
	_ = m.live[sb.ID].transition(sandbox.Running)
	m.mu.Unlock()
	if _, err := m.Pause(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Resume(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Reset(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if err := m.Destroy(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if s, err := c.State(ctx, sb.ID); err != nil || s != sandbox.Stopped {
		t.Errorf("state after destroy: %v %v", s, err)
	}
	if _, err := c.State(ctx, "sb-nope"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("state of an unknown sandbox: %v", err)
	}
}
