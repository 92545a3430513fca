package hook

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/sandbox"
)

// mod is a module with every ability of the Set's loops; calls records
// the order they ran in.
type mod struct {
	name    string
	calls   *[]string
	fail    error // returned by Lift, SecretEnv, BrokeredSecrets, OnTaskEnd, Template
	env     []string
	vars    []string
	secrets []egress.Secret
	core    Core
}

func (m *mod) Name() string                                { return m.name }
func (m *mod) Attach(c Core) error                         { m.core = c; return nil }
func (m *mod) note(what string)                            { *m.calls = append(*m.calls, m.name+":"+what) }
func (m *mod) BeforeExec(context.Context, *ExecCall) error { return nil }
func (m *mod) Lift(_ context.Context, _ string, d *policy.Decision) error {
	m.note("lift")
	d.Reason += m.name
	return m.fail
}
func (m *mod) SecretEnv(context.Context, SandboxRef) ([]string, []map[string]any, error) {
	m.note("env")
	return m.env, []map[string]any{{"from": m.name}}, m.fail
}
func (m *mod) GrantedVars(context.Context, string) []string { return m.vars }
func (m *mod) BrokeredSecrets(context.Context, string) ([]egress.Secret, error) {
	m.note("broker")
	return m.secrets, m.fail
}
func (m *mod) OnTaskEnd(context.Context, SandboxRef) error { m.note("taskend"); return m.fail }
func (m *mod) Template(_ context.Context, name string) (*sandbox.Base, error) {
	if m.fail != nil || name != m.name+"-tpl" {
		return nil, errdefs.ErrNotFound
	}
	return &sandbox.Base{Name: name}, nil
}
func (m *mod) Templates(context.Context) ([]*sandbox.TemplateInfo, error) {
	return []*sandbox.TemplateInfo{{Name: m.name + "-tpl"}}, m.fail
}

type holder struct{ name string }

func (h holder) Name() string                                            { return h.name }
func (holder) Attach(Core) error                                         { return nil }
func (holder) Hold(context.Context, HeldExec) (string, error)            { return "", nil }
func (holder) WriteBundle(context.Context, *TaskBundle, io.Writer) error { return nil }

type netMod struct {
	name string
	n    Network
}

func (n netMod) Name() string     { return n.name }
func (netMod) Attach(Core) error  { return nil }
func (n netMod) Network() Network { return n.n }

type fakeNet struct{ Network }

type noter struct{ hosts []string }

func (n *noter) NoteEgress(h string) { n.hosts = append(n.hosts, h) }

func TestSetLoopsRunInModuleOrder(t *testing.T) {
	var calls []string
	a := &mod{name: "a", calls: &calls, env: []string{"A=1"}, vars: []string{"X_TOKEN", "A_TOKEN"}, secrets: []egress.Secret{{ID: "sa"}}}
	b := &mod{name: "b", calls: &calls, env: []string{"B=2"}, vars: []string{"X_TOKEN"}, secrets: []egress.Secret{{ID: "sb"}}}
	s := &Set{}
	if err := s.Attach([]Module{a, b}, nil); err != nil {
		t.Fatal(err)
	}
	if len(s.Exec) != 2 || s.Exec[0].Name != "a" || s.Exec[1].Name != "b" || len(s.Lifts) != 2 || len(s.Secrets) != 2 {
		t.Fatalf("abilities not sorted in module order: %+v", s)
	}
	ctx := context.Background()
	d := &policy.Decision{}
	if err := s.Lift(ctx, "sb1", d); err != nil || d.Reason != "ab" {
		t.Errorf("lift: %v %q", err, d.Reason)
	}
	env, uses, err := s.SecretEnv(ctx, SandboxRef{ID: "sb1"})
	if err != nil || !slices.Equal(env, []string{"A=1", "B=2"}) || len(uses) != 2 || uses[1]["from"] != "b" {
		t.Errorf("secret env: %v %v %v", env, uses, err)
	}
	if got := s.GrantedVars(ctx, "sb1"); !slices.Equal(got, []string{"X_TOKEN", "A_TOKEN"}) {
		t.Errorf("granted vars, each once: %v", got)
	}
	own := []egress.Secret{{ID: "policy"}}
	p, err := s.BrokeredSecrets(ctx, "sb1", egress.Policy{Secrets: own[:1:1]})
	if err != nil || len(p.Secrets) != 3 || p.Secrets[0].ID != "policy" || p.Secrets[2].ID != "sb" || own[0].ID != "policy" {
		t.Errorf("brokered: %+v %v", p.Secrets, err)
	}
	if err := s.TaskEnded(ctx, SandboxRef{ID: "sb1", TaskID: "t1"}); err != nil {
		t.Error(err)
	}
	if b, ok := s.Template(context.Background(), "b-tpl"); !ok || b.Name != "b-tpl" {
		t.Errorf("template of the second source: %v %v", b, ok)
	}
	if _, ok := s.Template(context.Background(), "nobody-tpl"); ok {
		t.Error("a name no source has was found")
	}
	if l, err := s.TemplateList(ctx); err != nil || len(l) != 2 || l[0].Name != "a-tpl" {
		t.Errorf("template list: %v %v", l, err)
	}
	want := []string{"a:lift", "b:lift", "a:env", "b:env", "a:broker", "b:broker", "a:taskend", "b:taskend"}
	if !slices.Equal(calls, want) {
		t.Errorf("calls %v, want %v", calls, want)
	}
}

// The first error stops each loop: what follows a failed lift, secret
// source, broker or task-end hook is not asked.
func TestSetLoopsStopAtTheFirstError(t *testing.T) {
	var calls []string
	boom := errors.New("boom")
	a := &mod{name: "a", calls: &calls, fail: boom}
	b := &mod{name: "b", calls: &calls}
	s := &Set{}
	if err := s.Attach([]Module{a, b}, nil); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Lift(ctx, "x", &policy.Decision{}); err != boom {
		t.Errorf("lift: %v", err)
	}
	if env, _, err := s.SecretEnv(ctx, SandboxRef{}); err != boom || env != nil {
		t.Errorf("secret env: %v %v", env, err)
	}
	if _, err := s.BrokeredSecrets(ctx, "x", egress.Policy{}); err != boom {
		t.Errorf("brokered: %v", err)
	}
	if err := s.TaskEnded(ctx, SandboxRef{}); err != boom {
		t.Errorf("task end: %v", err)
	}
	if _, err := s.TemplateList(ctx); err != boom {
		t.Errorf("template list: %v", err)
	}
	if !slices.Equal(calls, []string{"a:lift", "a:env", "a:broker", "a:taskend"}) {
		t.Errorf("went on after an error: %v", calls)
	}
}

func TestSetAttachRefuses(t *testing.T) {
	n := fakeNet{}
	for _, tc := range []struct {
		name string
		mods []Module
		want string
	}{
		{"no name", []Module{&mod{}}, `module ""`},
		{"duplicate", []Module{&mod{name: "x"}, &mod{name: "x"}}, `module "x"`},
		{"two holders", []Module{holder{"h1"}, holder{"h2"}}, "second approvals holder (h1 holds"},
		{"two networks", []Module{netMod{"n1", n}, netMod{"n2", n}}, "second network module"},
		{"two pools", []Module{warmMod{"p1"}, warmMod{"p2"}}, "second warm pool"},
	} {
		s := &Set{}
		if err := s.Attach(tc.mods, nil); !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	// A network module that runs no egress service is no second network.
	s := &Set{}
	if err := s.Attach([]Module{netMod{"n1", n}, netMod{"off", nil}}, nil); err != nil || s.Network != n {
		t.Errorf("a module without a network: %v %v", err, s.Network)
	}
}

func TestSetNoters(t *testing.T) {
	var calls []string
	s := &Set{}
	if err := s.Attach([]Module{&mod{name: "a", calls: &calls}, &mod{name: "b", calls: &calls}}, nil); err != nil {
		t.Fatal(err)
	}
	nb := &noter{}
	got := s.Noters(map[string]any{"b": nb, "a": "not a noter", "gone": &noter{}})
	if len(got) != 1 || got[0] != nb {
		t.Errorf("noters: %v", got)
	}
}

// warmMod is a WarmPool module that has nothing ready.
type warmMod struct{ name string }

func (w warmMod) Name() string             { return w.name }
func (warmMod) Attach(Core) error          { return nil }
func (warmMod) Take(WarmShape) Warm        { return nil }
func (warmMod) Drain(context.Context)      {}
func (warmMod) Evict(context.Context) bool { return false }

var _ WarmPool = warmMod{}
