package snapshots

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/redact"
	fakert "github.com/airlock-dev/airlock/internal/runtime/fake"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/template"
)

// onFake is the module (snapshots under dir; "": none) attached to a
// manager on the fake backend (no root).
func onFake(t *testing.T, dir string) (*Snapshots, *manager.Manager, *audit.Log) {
	t.Helper()
	return onFakeWith(t, dir, nil)
}

// onFakeWith is onFake with the daemon's policy file pol (nil: none).
func onFakeWith(t *testing.T, dir string, pol *policy.File) (*Snapshots, *manager.Manager, *audit.Log) {
	t.Helper()
	root := t.TempDir()
	st, err := store.Open(filepath.Join(root, "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, p := range []string{"proj-a", "proj-b"} { // tenancy_test.go's
		if err := st.PutProject(context.Background(), &store.Project{ID: p, Created: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	tpls, err := template.Open(filepath.Join(root, "templates"))
	if err != nil {
		t.Fatal(err)
	}
	red := redact.New()
	log, err := audit.Open(context.Background(), audit.Config{Store: st, Redactor: red, KeyFile: filepath.Join(root, "audit.key")})
	if err != nil {
		t.Fatal(err)
	}
	s := New(dir, tpls)
	m, err := manager.New(context.Background(), manager.Config{Backend: fakert.New(t.TempDir()), Templates: tpls, Store: st, Audit: log,
		Redactor: red, Logf: t.Logf, Modules: []hook.Module{s}, Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown(context.Background()) })
	return s, m, log
}

func run(t *testing.T, m *manager.Manager, id string, argv ...string) string {
	t.Helper()
	var out bytes.Buffer
	if _, st, err := m.Exec(context.Background(), id, sandbox.ExecRequest{Argv: argv, NoWait: true}, nil, &out, nil); err != nil || st.Code != 0 {
		t.Fatalf("%q: %v %+v", argv, err, st)
	}
	return out.String()
}

// write writes /workspace/kept.txt through the file API.
func write(t *testing.T, m *manager.Manager, id, data string) {
	t.Helper()
	f, err := m.Files(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteFile(context.Background(), "/workspace/kept.txt", strings.NewReader(data), 0o644, false); err != nil {
		t.Fatal(err)
	}
}

// A snapshot keeps /workspace and the home: a sandbox made from it, and
// reset later, has the files; the template is listed with its base; a
// second version moves "current"; remote callers cannot replace it.
func TestSnapshotLife(t *testing.T) {
	ctx := context.Background()
	s, m, log := onFake(t, t.TempDir())
	sb, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	write(t, m, sb.ID, "one\n")
	snap, err := s.Snapshot(ctx, sb.ID, "mine", true)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Name != "mine" || snap.Base != sb.Template || snap.BaseVersion != sb.TemplateVersion || snap.FromSandbox != sb.ID || snap.SeedBytes == 0 {
		t.Errorf("snapshot %+v", snap)
	}
	from, err := m.Create(ctx, sandbox.CreateRequest{Template: "mine"})
	if err != nil {
		t.Fatal(err)
	}
	if from.Template != "mine" || from.TemplateVersion != snap.Version {
		t.Errorf("created from the snapshot: %+v", from)
	}
	if got := run(t, m, from.ID, "cat", "kept.txt"); got != "one\n" {
		t.Errorf("file in the new sandbox: %q", got)
	}
	f, err := m.Files(ctx, from.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Remove(ctx, "/workspace/kept.txt", false); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Reset(ctx, from.ID); err != nil {
		t.Fatal(err)
	}
	if got := run(t, m, from.ID, "cat", "kept.txt"); got != "one\n" {
		t.Errorf("file after a reset: %q", got)
	}
	if _, err := s.Snapshot(ctx, sb.ID, "mine", true); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("remote snapshot over an existing name: %v", err)
	}
	write(t, m, sb.ID, "two\n")
	snap2, err := s.Snapshot(ctx, sb.ID, "mine", false)
	if err != nil || snap2.Version == snap.Version {
		t.Fatalf("second version: %+v %v", snap2, err)
	}
	list, err := s.List(ctx)
	if err != nil || len(list) != 1 || list[0].Version != snap2.Version {
		t.Errorf("list: %+v %v", list, err)
	}
	tpls, err := m.Templates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ti := range tpls {
		if ti.Name == "mine" && ti.Kind == "snapshot" && ti.Version == snap2.Version && ti.Base == snap.Base+"@"+snap.BaseVersion {
			found = true
		}
	}
	if !found {
		t.Errorf("templates %+v lack the snapshot", tpls)
	}
	evs, err := log.Query(ctx, store.AuditFilter{SandboxID: sb.ID, Kind: "sandbox.snapshot"})
	if err != nil || len(evs) != 2 {
		t.Errorf("sandbox.snapshot events: %d %v, want 2", len(evs), err)
	}
}

// What may not be snapshotted is refused with the right kind of error,
// and a name no template has is not found at create.
func TestSnapshotRefusals(t *testing.T) {
	ctx := context.Background()
	s, m, _ := onFake(t, t.TempDir())
	sb, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Snapshot(ctx, sb.ID, "../up", false); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("bad name: %v", err)
	}
	if _, err := s.Snapshot(ctx, sb.ID, sb.Template, false); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("a built-in's name: %v", err)
	}
	if _, err := m.Pause(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Snapshot(ctx, sb.ID, "paused", false); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("a paused sandbox: %v", err)
	}
	if err := m.Destroy(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Snapshot(ctx, sb.ID, "gone", false); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("a stopped sandbox: %v", err)
	}
	if _, err := m.Create(ctx, sandbox.CreateRequest{Template: "never-made"}); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("create from an unknown template: %v", err)
	}
	if list, err := s.List(ctx); err != nil || len(list) != 0 {
		t.Errorf("list after refusals: %+v %v", list, err)
	}
}

// Without a directory the daemon has no snapshots: making one is
// unsupported, the list is empty, no name resolves.
func TestSnapshotsNotConfigured(t *testing.T) {
	ctx := context.Background()
	s, m, _ := onFake(t, "")
	sb, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Snapshot(ctx, sb.ID, "x", false); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("snapshot: %v", err)
	}
	if list, err := s.List(ctx); err != nil || len(list) != 0 {
		t.Errorf("list: %+v %v", list, err)
	}
	if _, err := s.Template(context.Background(), "x"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("template: %v", err)
	}
	if s.Name() != "snapshots" || !strings.Contains(New("", nil).Name(), "snap") {
		t.Errorf("name %q", s.Name())
	}
}
