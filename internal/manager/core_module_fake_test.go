package manager

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/hook"
	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/store"
)

// The core's surface for modules (Core), on the fake backend: what the
// tasks and snapshots modules rely on, shown without them.

// coreHandle is a module that only keeps its Core.
type coreHandle struct{ c hook.Core }

func (*coreHandle) Name() string { return "core-handle" }
func (h *coreHandle) Attach(c hook.Core) error {
	h.c = c
	return nil
}

// withCore is a fake-tier manager with a coreHandle attached.
func withCore(t *testing.T, configure func(*Config)) (*Manager, *audit.Log, hook.Core) {
	t.Helper()
	h := &coreHandle{}
	m, log := fakeTierManagerWith(t, func(c *Config) {
		c.Modules = append(c.Modules, h)
		if configure != nil {
			configure(c)
		}
	})
	return m, log, h.c
}

// A task's sandbox: its events name the task; while it is finishing
// only the task's test runs (past a policy that would refuse it, on the
// record as task:test) and nothing writes; then it runs again.
func TestCoreTaskSandbox(t *testing.T) {
	ctx := context.Background()
	m, log, c := withCore(t, nil)
	if _, err := c.CreateForTask(ctx, sandbox.CreateRequest{}, ""); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("a task sandbox without a task: %v", err)
	}
	sb, err := c.CreateForTask(ctx, sandbox.CreateRequest{Policy: &policy.Layer{Rules: []policy.Rule{{ID: "no-ls", Command: "ls *", Action: policy.Deny}}}}, "t-42")
	if err != nil {
		t.Fatal(err)
	}
	plain, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	li, ok := c.Live(sb.ID)
	if !ok || li.TaskID != "t-42" || li.State != sandbox.Running || li.Base.Name != "host" || li.View.ID != sb.ID || li.Policy == nil {
		t.Fatalf("live info %+v %v", li, ok)
	}
	if !slices.Contains(li.Policy.Sources, "task") {
		t.Errorf("policy sources %q: want the task's", li.Policy.Sources)
	}
	if _, ok := c.Live("sb-nope"); ok {
		t.Error("an unknown sandbox is live")
	}
	test := sandbox.ExecRequest{Argv: []string{"ls", "-a"}}
	if _, _, err := m.Exec(ctx, sb.ID, test, nil, nil, nil); !errors.Is(err, errdefs.ErrDenied) {
		t.Fatalf("ls under its deny rule: %v", err)
	}
	end, err := c.BeginFinishing(sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.BeginFinishing(sb.ID); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("finishing twice: %v", err)
	}
	if s, err := c.State(ctx, sb.ID); err != nil || s != sandbox.Finishing {
		t.Errorf("state %v %v", s, err)
	}
	if _, _, err := c.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"true"}}, nil, nil); !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), "t-42") {
		t.Errorf("exec while finishing: %v, want a conflict naming the task", err)
	}
	if _, _, err := c.ExecTaskTest(ctx, sb.ID, "t-other", test, nil, nil, nil); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("another task's test: %v", err)
	}
	if _, _, err := c.ExecTaskTest(ctx, plain.ID, "t-42", test, nil, nil, nil); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("a test in a sandbox of no task: %v", err)
	}
	var out bytes.Buffer
	execID, st, err := c.ExecTaskTest(ctx, sb.ID, "t-42", test, nil, &out, nil)
	if err != nil || st.Code != 0 || !strings.Contains(out.String(), "..") {
		t.Fatalf("the task's test: %+v %q %v", st, out.String(), err)
	}
	e, err := getExec(m, ctx, sb.ID, execID)
	if err != nil || e.Policy == nil || !slices.Contains(e.Policy.Rules, "task:test") || e.Policy.Action != policy.Allow {
		t.Errorf("its record: %+v %v, want allowed by task:test", e.Policy, err)
	}
	end()
	end() // a second call does nothing
	if s, _ := c.State(ctx, sb.ID); s != sandbox.Running {
		t.Errorf("after end: %v", s)
	}
	if _, _, err := c.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"true"}}, nil, nil); err != nil {
		t.Errorf("exec after finishing: %v", err)
	}
	evs, err := log.Query(ctx, store.AuditFilter{SandboxID: sb.ID})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.TaskID != "t-42" {
			t.Errorf("event %s names task %q, want t-42", ev.Kind, ev.TaskID)
		}
	}
	if err := c.Destroy(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if end, err := c.BeginFinishing(sb.ID); err != nil || end == nil {
		t.Errorf("finishing a stopped sandbox: %v, want a no-op", err)
	}
	if _, _, err := c.ExecTaskTest(ctx, sb.ID, "t-42", test, nil, nil, nil); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("a test in a stopped sandbox: %v", err)
	}
	if _, _, err := c.ExecTaskTest(ctx, "sb-nope", "t-42", test, nil, nil, nil); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("a test in an unknown sandbox: %v", err)
	}
}

// The rest of the handle: the store, redactor, record and views a module
// uses are the core's own; a write scope the backend cannot apply is an
// error and is not kept.
func TestCoreHandle(t *testing.T) {
	ctx := context.Background()
	var logged []string
	m, log, c := withCore(t, func(cfg *Config) {
		cfg.MaxLifetime = 2 * time.Hour
		cfg.Logf = func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }
	})
	sb, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Store() == nil || c.Redactor() == nil || c.MaxLifetime() != 2*time.Hour || c.AuditHealthy() != nil {
		t.Fatal("the handle does not show the core's own")
	}
	if _, err := c.Store().GetSandbox(ctx, sb.ID); err != nil {
		t.Errorf("the store through the handle: %v", err)
	}
	if b, err := c.Bundles(); b != nil || !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("bundles without a review module: %v %v", b, err)
	}
	c.Redactor().Add("handle-secret-5b1d")
	if got := c.Redactor().String("x handle-secret-5b1d"); strings.Contains(got, "handle-secret-5b1d") {
		t.Errorf("the handle's redactor is not the core's: %q", got)
	}
	c.Logf("from module %d", 7)
	if !slices.Contains(logged, "from module 7") {
		t.Errorf("logged %q", logged)
	}
	if err := c.Record(ctx, audit.Entry{SandboxID: sb.ID, Kind: "module.test"}); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(kindsOf(t, log, sb.ID), "module.test") {
		t.Error("the module's event is not on the record")
	}
	if v, err := c.Sandbox(ctx, sb.ID); err != nil || v.ID != sb.ID || v.State != "running" {
		t.Errorf("sandbox view %+v %v", v, err)
	}
	if rt, err := c.Runtime(ctx, sb.ID); err != nil || rt.ID() != sb.ID {
		t.Errorf("runtime %v %v", rt, err)
	}
	fs, err := c.Files(ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fs.WriteFile(ctx, "/workspace/own.txt", strings.NewReader("daemon"), 0o644, false); err != nil {
		t.Fatal(err)
	}
	if n := len(eventsOf(t, log, sb.ID, "file.write")); n != 0 {
		t.Errorf("the daemon's own file access wrote %d file.write events (it is not policed)", n)
	}
	if _, _, err := c.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"cat", "own.txt"}}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if execs, err := c.Execs(ctx, sb.ID); err != nil || len(execs) != 1 {
		t.Errorf("execs %v %v", execs, err)
	}
	if pol, _ := c.FetchPolicy(); pol != nil {
		t.Errorf("fetch policy %+v without a policy file, want none", pol)
	}
	if err := c.RestrictWrites(ctx, sb.ID, []string{"src/**"}); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("a write scope on a backend without one: %v, want unsupported", err)
	}
	if _, err := m.Reset(ctx, sb.ID); err != nil {
		t.Errorf("reset after a refused write scope: %v (the scope must not be kept)", err)
	}
	if err := c.RestrictWrites(ctx, "sb-nope", []string{"src/**"}); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("a write scope on an unknown sandbox: %v", err)
	}
}

// seedTar writes a tar of files (path -> content) and returns its path.
func seedTar(t *testing.T, files map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write([]byte(body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "seed.tar")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// snapSource is a TemplateSource of seeded templates over the host one.
type snapSource struct {
	coreHandle
	host  sandbox.Base
	seeds map[string]string
}

func (s *snapSource) Name() string { return "snaps" }
func (s *snapSource) Template(_ context.Context, name string) (*sandbox.Base, error) {
	seed, ok := s.seeds[name]
	if !ok {
		return nil, fmt.Errorf("no snapshot %s: %w", name, errdefs.ErrNotFound)
	}
	b := s.host
	b.Name, b.Version, b.Seed = name, "v-"+name, seed
	return &b, nil
}
func (s *snapSource) Templates(context.Context) ([]*sandbox.TemplateInfo, error) {
	var out []*sandbox.TemplateInfo
	for name := range s.seeds {
		out = append(out, &sandbox.TemplateInfo{Name: name, Kind: "snapshot", Base: "host"})
	}
	return out, nil
}

// A template of a TemplateSource: its seed is restored at create and
// again at every reset; a seed that cannot be restored fails the create
// and leaves nothing live.
func TestCoreSeededTemplate(t *testing.T) {
	ctx := context.Background()
	src := &snapSource{seeds: map[string]string{
		"snap":   seedTar(t, map[string]string{"workspace/seeded.txt": "from the seed\n"}),
		"broken": filepath.Join(t.TempDir(), "missing.tar"),
	}}
	m, _ := fakeTierManagerWith(t, func(c *Config) { c.Modules = append(c.Modules, src) })
	host, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	li, _ := src.c.Live(host.ID)
	src.host = li.Base
	if err := m.Destroy(ctx, host.ID); err != nil {
		t.Fatal(err)
	}
	tpls, err := m.Templates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tp := range tpls {
		names = append(names, tp.Name+":"+tp.Kind)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"broken:snapshot", "host:builtin", "snap:snapshot"}) {
		t.Errorf("templates %q", names)
	}
	sb, err := m.Create(ctx, sandbox.CreateRequest{Template: "snap"})
	if err != nil {
		t.Fatal(err)
	}
	if sb.Template != "snap" || sb.TemplateVersion != "v-snap" {
		t.Errorf("created %+v", sb)
	}
	cat := func() string {
		var out bytes.Buffer
		if _, _, err := m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"sh", "-c", "cat seeded.txt; ls"}}, nil, &out, nil); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	if got := cat(); got != "from the seed\nseeded.txt\n" {
		t.Errorf("after create: %q", got)
	}
	if _, _, err := m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"sh", "-c", "echo changed > seeded.txt; touch extra"}}, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Reset(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if got := cat(); got != "from the seed\nseeded.txt\n" {
		t.Errorf("after reset: %q, want the seed again and nothing else", got)
	}
	// its seed gone: the reset fails, and the sandbox stops as failed
	if err := os.Remove(src.seeds["snap"]); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Reset(ctx, sb.ID); err == nil {
		t.Error("a reset whose seed is gone succeeded")
	}
	if got, err := m.Get(ctx, sb.ID); err != nil || got.State != "stopped" || got.StopReason != sandbox.StopFailed {
		t.Errorf("after the failed reset: %+v %v, want stopped as failed", got, err)
	}
	if _, err := m.Create(ctx, sandbox.CreateRequest{Template: "broken"}); err == nil || !strings.Contains(err.Error(), "restore snapshot broken") {
		t.Errorf("a seed that cannot be restored: %v", err)
	}
	if n := m.LiveCount(); n != 0 {
		t.Errorf("live count %d, want 0", n)
	}
}
