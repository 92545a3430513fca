package explain

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/policy"
	fakert "github.com/airlock-dev/airlock/internal/runtime/fake"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/template"
)

// lifter is a PolicyLift module: lift, when set, is what it does.
type lifter struct {
	lift func(*policy.Decision) error
}

func (*lifter) Name() string           { return "lifter" }
func (*lifter) Attach(hook.Core) error { return nil }
func (l *lifter) Lift(_ context.Context, _ string, d *policy.Decision) error {
	if l.lift == nil {
		return nil
	}
	return l.lift(d)
}

// newRig is a manager on the fake backend (no root) with the lifter and
// the module attached.
func newRig(t *testing.T) (*manager.Manager, *Explain, *lifter) {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tpls, err := template.Open(filepath.Join(dir, "templates"))
	if err != nil {
		t.Fatal(err)
	}
	e, l := New(), &lifter{}
	m, err := manager.New(context.Background(), manager.Config{Backend: fakert.New(t.TempDir()), Templates: tpls, Store: st,
		Logf: t.Logf, Modules: []hook.Module{l, e}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown(context.Background()) })
	return m, e, l
}

// A live sandbox's policy and what it would decide, lifted as an exec
// would be (a failing lift fails the check closed); a stopped sandbox is
// a conflict, an unknown one not found; unattached, unsupported.
func TestExplain(t *testing.T) {
	ctx := context.Background()
	m, e, l := newRig(t)
	sb, err := m.Create(ctx, sandbox.CreateRequest{Policy: &policy.Layer{Rules: []policy.Rule{{ID: "no-ls", Command: "ls *", Action: policy.Deny}}}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.Policy(ctx, sb.ID)
	if err != nil || p.Version() != sb.Policy {
		t.Fatalf("policy %+v %v, want version %s", p, err, sb.Policy)
	}
	d, err := e.Check(ctx, sb.ID, []string{"ls", "-a"}, "")
	if err != nil || d.Action != policy.Deny || d.Analysis == nil || d.Analysis.Cwd != policy.DefaultCwd {
		t.Fatalf("check of ls: %+v %v", d, err)
	}
	l.lift = func(d *policy.Decision) error { d.Action = policy.Allow; return nil }
	if d, err := e.Check(ctx, sb.ID, []string{"ls", "-a"}, "/tmp"); err != nil || d.Action != policy.Allow {
		t.Errorf("check past a lift: %+v %v", d, err)
	}
	l.lift = func(*policy.Decision) error { return errors.New("store down") }
	if _, err := e.Check(ctx, sb.ID, []string{"true"}, ""); err == nil || !strings.Contains(err.Error(), "store down") {
		t.Errorf("check past a failing lift: %v", err)
	}
	if _, err := e.Policy(ctx, "sb-nope"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("an unknown sandbox: %v", err)
	}
	if err := m.Destroy(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Check(ctx, sb.ID, []string{"true"}, ""); !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), "stopped") {
		t.Errorf("a stopped sandbox: %v", err)
	}
	if _, err := New().Policy(ctx, sb.ID); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("unattached: %v", err)
	}
}
