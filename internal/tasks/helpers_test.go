package tasks

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/redact"
	"github.com/airlock-dev/airlock/internal/review"
	"github.com/airlock-dev/airlock/internal/runtime"
	fakert "github.com/airlock-dev/airlock/internal/runtime/fake"
	"github.com/airlock-dev/airlock/internal/store"
)

// fakeBackend makes no sandboxes (tests of what happens before one).
type fakeBackend struct{}

func (fakeBackend) Name() string                       { return "fake" }
func (fakeBackend) Capabilities() runtime.Capabilities { return runtime.Capabilities{} }
func (fakeBackend) Create(context.Context, runtime.Spec) (runtime.Sandbox, error) {
	return nil, errors.New("the fake backend makes no sandboxes")
}

// fakeSandbox is what the fake backend's sandboxes can do.
type fakeSandbox interface {
	runtime.Sandbox
	runtime.Files
	runtime.Sweeper
	runtime.Pauser
}

// scoping is the fake backend with a write scope: it records the roots
// each sandbox was confined to (the fake confines nothing itself).
type scoping struct {
	*fakert.Backend
	mu    sync.Mutex
	roots map[string][][]string // sandbox id -> each RestrictWrites
}

type scopedSandbox struct {
	fakeSandbox
	b *scoping
}

func (b *scoping) Create(ctx context.Context, spec runtime.Spec) (runtime.Sandbox, error) {
	sb, err := b.Backend.Create(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &scopedSandbox{fakeSandbox: sb.(fakeSandbox), b: b}, nil
}

func (s *scopedSandbox) RestrictWrites(_ context.Context, roots []string) (runtime.ScopeInfo, error) {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	s.b.roots[s.ID()] = append(s.b.roots[s.ID()], slices.Clone(roots))
	return runtime.ScopeInfo{}, nil
}

var _ runtime.WriteScoper = (*scopedSandbox)(nil)

func (b *scoping) of(id string) [][]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.roots[id])
}

// rig is the tasks module on a manager on the fake backend (no root).
type rig struct {
	tk  *Tasks
	m   *manager.Manager
	log *audit.Log
	st  *store.Store
	be  *scoping
	dir string // the tasks' directory
}

// newRig makes a rig; configure (nil: as is) may change the manager's
// Config before New.
func newRig(t *testing.T, configure func(*manager.Config)) *rig {
	t.Helper()
	root := t.TempDir()
	st, err := store.Open(filepath.Join(root, "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tpls := testTemplates(t)
	red := redact.New()
	log, err := audit.Open(context.Background(), audit.Config{Store: st, Redactor: red, KeyFile: filepath.Join(root, "audit.key")})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{st: st, log: log, dir: filepath.Join(root, "tasks"), be: &scoping{Backend: fakert.New(t.TempDir()), roots: map[string][][]string{}}}
	r.tk = New(Config{Dir: r.dir})
	cfg := manager.Config{Backend: r.be, Templates: tpls, Store: st, Audit: log, Redactor: red, Logf: t.Logf,
		Modules: []hook.Module{r.tk, review.New(review.Config{TaskDir: r.dir})}}
	if configure != nil {
		configure(&cfg)
	}
	if r.m, err = manager.New(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.m.Shutdown(context.Background()) })
	return r
}

// events are the audit record's events of kind.
func (r *rig) events(t *testing.T, kind string) []*audit.Event {
	t.Helper()
	evs, err := r.log.Query(context.Background(), store.AuditFilter{Kind: kind})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// gitRepo makes a repository with files (path -> content) in one commit.
func gitRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		writeFile(t, filepath.Join(dir, p), c)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "-m", "base"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME=/nonexistent", "PATH=/usr/bin:/bin"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	return dir
}

// run runs argv in sandbox id as an agent would (no wait for approval).
func (r *rig) run(id string, argv ...string) (string, *runtime.ExitStatus, error) {
	var out bytes.Buffer
	_, st, err := r.m.Exec(context.Background(), id, sandbox.ExecRequest{Argv: argv, NoWait: true}, nil, &out, &out)
	return out.String(), st, err
}

func writeFile(t *testing.T, p, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}
