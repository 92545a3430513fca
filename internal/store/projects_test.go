package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// A database made before projects upgrades in place: its sandboxes and
// keys go to the default project, its keys as agent keys, nothing lost.
func TestProjectsMigrationKeepsEverything(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "airlock.db")
	old, err := open(path, migrations[:ProjectsVersion-1])
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	if err := old.PutSandbox(ctx, minimalSandbox("sb-old", t0)); err == nil {
		t.Fatal("an old schema took a project column it does not have")
	}
	if _, err := old.w.ExecContext(ctx, `INSERT INTO sandboxes (id, state, backend, template, template_version, created, stop_reason) VALUES ('sb-old', 'stopped', 'native', 'host', 'v', 1, 'destroyed')`); err != nil {
		t.Fatal(err)
	}
	if _, err := old.w.ExecContext(ctx, `INSERT INTO api_keys (id, name, hash, created) VALUES ('k-old', 'ci', ?, 1)`, hash64("a")); err != nil {
		t.Fatal(err)
	}
	old.Close()

	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.OpenedAt() != ProjectsVersion-1 {
		t.Fatalf("OpenedAt = %d, want %d", s.OpenedAt(), ProjectsVersion-1)
	}
	sb, err := s.GetSandbox(ctx, "sb-old")
	if err != nil || sb.Project != DefaultProject || sb.StopReason != "destroyed" {
		t.Fatalf("old sandbox after upgrade: %+v, %v", sb, err)
	}
	k, err := s.GetAPIKey(ctx, "k-old")
	if err != nil || k.Project != DefaultProject || k.Role != "agent" || k.Name != "ci" || k.Expires != nil {
		t.Fatalf("old key after upgrade: %+v, %v", k, err)
	}
	if p, err := s.GetProject(ctx, DefaultProject); err != nil || p.Removed != nil {
		t.Fatalf("default project: %+v, %v", p, err)
	}
}

func hash64(c string) string {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c[0]
	}
	return string(b)
}

// Attack: an object made for a project that does not exist (or was
// removed), or a sandbox moved to another project by an update.
func TestProjectOwnershipIsFixed(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	sb := minimalSandbox("sb-1", t0)
	sb.Project = "ghost"
	wantKind(t, s.PutSandbox(ctx, sb), errdefs.ErrNotFound)
	wantKind(t, s.PutAPIKey(ctx, &APIKey{ID: "k-1", Hash: hash64("b"), Created: t0, Project: "ghost"}), errdefs.ErrNotFound)

	if err := s.PutProject(ctx, &Project{ID: "blue", Created: t0}); err != nil {
		t.Fatal(err)
	}
	wantKind(t, s.PutProject(ctx, &Project{ID: "blue", Created: t0}), errdefs.ErrConflict)
	sb.Project = "blue"
	if err := s.PutSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	moved := *sb
	moved.Project = DefaultProject
	if err := s.UpdateSandbox(ctx, &moved); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetSandbox(ctx, "sb-1"); got.Project != "blue" {
		t.Fatalf("an update moved the sandbox to %q", got.Project)
	}
	if l, _ := s.ListProjectSandboxes(ctx, "", DefaultProject); len(l) != 0 {
		t.Fatalf("the default project lists another project's sandbox: %d", len(l))
	}
	if l, _ := s.ListProjectSandboxes(ctx, StateRunning, "blue"); len(l) != 1 {
		t.Fatalf("blue lists %d running sandboxes, want 1", len(l))
	}

	// A project with a sandbox not stopped is not removed; once it is,
	// its keys go, its records stay, and nothing new is made in it.
	if err := s.PutAPIKey(ctx, &APIKey{ID: "k-2", Hash: hash64("c"), Created: t0, Project: "blue", Role: "admin"}); err != nil {
		t.Fatal(err)
	}
	_, err := s.RemoveProject(ctx, "blue", t0)
	wantKind(t, err, errdefs.ErrConflict)
	sb.State = StateStopped
	if err := s.UpdateSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	gone, err := s.RemoveProject(ctx, "blue", t0)
	if err != nil || len(gone) != 1 || gone[0] != "k-2" {
		t.Fatalf("RemoveProject = %v, %v", gone, err)
	}
	if _, err := s.GetAPIKey(ctx, "k-2"); err == nil {
		t.Fatal("a removed project's key survived")
	}
	if _, err := s.GetSandbox(ctx, "sb-1"); err != nil {
		t.Fatalf("a removed project's record was lost: %v", err)
	}
	sb2 := minimalSandbox("sb-2", t0)
	sb2.Project = "blue"
	wantKind(t, s.PutSandbox(ctx, sb2), errdefs.ErrNotFound)
	wantKind(t, s.PutProject(ctx, &Project{ID: "blue", Created: t0}), errdefs.ErrConflict)
	_, err = s.RemoveProject(ctx, DefaultProject, t0)
	wantKind(t, err, errdefs.ErrConflict)
}
