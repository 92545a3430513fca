package snapshots

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/sandbox"
	"github.com/airlock-dev/airlock/internal/tenant"
)

func agentOf(project string) context.Context {
	return tenant.With(context.Background(), tenant.Principal{Project: project, Role: tenant.Agent, KeyID: "k-" + project})
}

// names are the template names m lists to ctx.
func names(t *testing.T, m *manager.Manager, ctx context.Context) []string {
	t.Helper()
	tpls, err := m.Templates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ti := range tpls {
		out = append(out, ti.Name+":"+ti.Project)
	}
	return out
}

// Attack: project B tries to reach project A's snapshot (which holds A's
// files) by listing, by starting a sandbox from it, by taking its name
// and by snapshotting A's sandbox itself. Each answer is the answer for
// a snapshot that does not exist (or a name merely taken), and A and the
// operator still see and use it.
func TestSnapshotIsItsProjectsAlone(t *testing.T) {
	s, m, _ := onFake(t, t.TempDir())
	a, b, op := agentOf("proj-a"), agentOf("proj-b"), context.Background()
	sbA, err := m.Create(a, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	write(t, m, sbA.ID, "a's secret plan\n")
	snap, err := s.Snapshot(a, sbA.ID, "a-snap", true)
	if err != nil || snap.Project != "proj-a" {
		t.Fatalf("a's snapshot: %+v %v", snap, err)
	}
	if l, err := s.List(b); err != nil || len(l) != 0 {
		t.Errorf("b lists %+v %v", l, err)
	}
	for _, n := range names(t, m, b) {
		if strings.HasPrefix(n, "a-snap") {
			t.Errorf("b's templates name a's snapshot: %v", names(t, m, b))
		}
	}
	_, errTaken := m.Create(b, sandbox.CreateRequest{Template: "a-snap"})
	_, errNone := m.Create(b, sandbox.CreateRequest{Template: "z-snap"})
	if !errors.Is(errTaken, errdefs.ErrNotFound) || strings.ReplaceAll(errTaken.Error(), "a-snap", "z-snap") != errNone.Error() {
		t.Errorf("b starts from a's snapshot: %v; from none: %v", errTaken, errNone)
	}
	if _, err := s.Template(b, "a-snap"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("b resolves a's snapshot: %v", err)
	}
	if _, err := s.Snapshot(b, sbA.ID, "b-snap", true); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("b snapshots a's sandbox: %v", err)
	}
	sbB, err := m.Create(b, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	_, byB := s.Snapshot(b, sbB.ID, "a-snap", true)
	_, byA := s.Snapshot(a, sbA.ID, "a-snap", true)
	if !errors.Is(byB, errdefs.ErrConflict) || byB == nil || byA == nil || byB.Error() != byA.Error() {
		t.Errorf("b takes a's name: %v; a's own retry: %v (must read alike)", byB, byA)
	}
	if _, err := s.Snapshot(op, sbB.ID, "a-snap", false); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("the operator makes a version of a's snapshot from b's sandbox: %v", err)
	}
	if err := s.Delete(b, "a-snap"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("b deletes a's snapshot: %v", err)
	}
	from, err := m.Create(a, sandbox.CreateRequest{Template: "a-snap"})
	if err != nil {
		t.Fatal(err)
	}
	if got := run(t, m, from.ID, "cat", "kept.txt"); got != "a's secret plan\n" {
		t.Errorf("a's sandbox from its snapshot reads %q", got)
	}
	if l, err := s.List(op); err != nil || len(l) != 1 || l[0].Project != "proj-a" {
		t.Errorf("the operator lists %+v %v", l, err)
	}
	if _, err := m.Create(op, sandbox.CreateRequest{Template: "a-snap", Project: "proj-a"}); err != nil {
		t.Errorf("the operator starts from a's snapshot: %v", err)
	}
	// shared templates stay every project's
	if _, err := m.Create(b, sandbox.CreateRequest{Template: "host"}); err != nil {
		t.Errorf("b starts from the built-in: %v", err)
	}
}

// A snapshot made before projects (no project in its metadata) is the
// default project's, like the rest of such a daemon's records.
func TestSnapshotBeforeProjectsIsDefaults(t *testing.T) {
	dir := t.TempDir()
	s, m, _ := onFake(t, dir)
	sb, err := m.Create(context.Background(), sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := s.Snapshot(context.Background(), sb.ID, "old", false)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "old", snap.Version, "snapshot.json")
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	delete(raw, "project")
	b, _ = json.Marshal(raw)
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Template(agentOf("proj-a"), "old"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("proj-a starts from default's old snapshot: %v", err)
	}
	l, err := s.List(agentOf(tenant.Default))
	if err != nil || len(l) != 1 || l[0].Project != tenant.Default {
		t.Errorf("default lists %+v %v", l, err)
	}
}

// Deleting a snapshot takes its name away at once, while a sandbox made
// from it keeps working, reset included; its version goes once no such
// sandbox runs.
func TestDeleteSnapshotKeepsItsSandboxes(t *testing.T) {
	dir := t.TempDir()
	s, m, _ := onFake(t, dir)
	a := agentOf("proj-a")
	sb, err := m.Create(a, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	write(t, m, sb.ID, "kept\n")
	snap, err := s.Snapshot(a, sb.ID, "gone-soon", true)
	if err != nil {
		t.Fatal(err)
	}
	from, err := m.Create(a, sandbox.CreateRequest{Template: "gone-soon"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(a, "gone-soon"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(a, "gone-soon"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
	if err := s.Delete(a, "host"); !errors.Is(err, errdefs.ErrDenied) {
		t.Errorf("delete of the built-in: %v", err)
	}
	if _, err := m.Create(a, sandbox.CreateRequest{Template: "gone-soon"}); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("create from a deleted snapshot: %v", err)
	}
	if l, _ := s.List(a); len(l) != 0 {
		t.Errorf("listed after delete: %+v", l)
	}
	if _, err := m.Reset(a, from.ID); err != nil {
		t.Fatal(err)
	}
	if got := run(t, m, from.ID, "cat", "kept.txt"); got != "kept\n" {
		t.Errorf("the sandbox from it after a reset reads %q", got)
	}
	vdir := filepath.Join(dir, "gone-soon", snap.Version)
	if _, err := os.Stat(vdir); err != nil {
		t.Errorf("the version in use went: %v", err)
	}
	if err := m.Destroy(a, from.ID); err != nil {
		t.Fatal(err)
	}
	// the name is free again, and its new delete prunes the old version
	if _, err := s.Snapshot(a, sb.ID, "gone-soon", true); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(a, "gone-soon"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "gone-soon")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after the last sandbox stopped and a delete, the template dir is %v", err)
	}
}

// A delete racing a new snapshot of the same name never leaves a name
// that is listed but cannot be started from: either the snapshot is
// whole afterwards or it is gone.
func TestDeleteRacingSnapshotLeavesNoHalfTemplate(t *testing.T) {
	s, m, _ := onFake(t, t.TempDir())
	a := agentOf("proj-a")
	sb, err := m.Create(a, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	write(t, m, sb.ID, "v\n")
	for i := range 15 {
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = s.Delete(a, "racy")
		}()
		_, snapErr := s.Snapshot(a, sb.ID, "racy", false)
		<-done
		if snapErr != nil && !errors.Is(snapErr, errdefs.ErrConflict) {
			t.Fatalf("round %d: snapshot: %v", i, snapErr)
		}
		b, err := s.Template(a, "racy")
		if errors.Is(err, errdefs.ErrNotFound) {
			continue
		}
		if err != nil {
			t.Fatalf("round %d: a listed snapshot does not resolve: %v", i, err)
		}
		if _, err := os.Stat(b.Seed); err != nil {
			t.Fatalf("round %d: the current version's seed is gone: %v", i, err)
		}
		if err := s.Delete(a, "racy"); err != nil {
			t.Fatalf("round %d: delete: %v", i, err)
		}
	}
}
