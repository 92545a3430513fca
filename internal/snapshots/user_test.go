package snapshots

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/sandbox"
)

var e2bUser = runtime.User{Name: "user", Home: "/home/user"}

// readAt reads path of sandbox id through the file API ("": missing).
func readAt(t *testing.T, m interface {
	Files(context.Context, string) (runtime.Files, error)
}, id, path string) string {
	t.Helper()
	f, err := m.Files(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if _, err := f.ReadFile(context.Background(), path, &b, 0); err != nil {
		return ""
	}
	return b.String()
}

// writeAt writes path through the file API.
func writeAt(t *testing.T, f runtime.Files, path, data string) {
	t.Helper()
	if _, err := f.WriteFile(context.Background(), path, strings.NewReader(data), 0o644, false); err != nil {
		t.Fatal(err)
	}
}

// A snapshot of a sandbox whose user's home is not /home/sandbox (the
// E2B door's /home/user) keeps that home: a sandbox of the same user
// made from it, and reset later, has the home's files and the
// workspace's. A sandbox of another home (the default user's) cannot
// start from it: its home's files would land where no one looks.
func TestSnapshotKeepsARenamedHome(t *testing.T) {
	ctx := context.Background()
	s, m, _ := onFake(t, t.TempDir())
	sb, err := m.Create(ctx, sandbox.CreateRequest{User: e2bUser})
	if err != nil {
		t.Fatal(err)
	}
	f, err := m.Files(ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	writeAt(t, f, "/home/user/a.txt", "home\n")
	writeAt(t, f, "/workspace/w.txt", "work\n")
	snap, err := s.Snapshot(ctx, sb.ID, "e2b-home", false)
	if err != nil {
		t.Fatalf("snapshot of a /home/user sandbox: %v", err)
	}
	tpl, err := s.Template(context.Background(), snap.Name)
	if err != nil || tpl.SeedHome != "/home/user" {
		t.Fatalf("template: %+v %v, want the seed's home /home/user", tpl, err)
	}
	from, err := m.Create(ctx, sandbox.CreateRequest{Template: "e2b-home", User: e2bUser})
	if err != nil {
		t.Fatalf("a /home/user sandbox from it: %v", err)
	}
	if h, w := readAt(t, m, from.ID, "/home/user/a.txt"), readAt(t, m, from.ID, "/workspace/w.txt"); h != "home\n" || w != "work\n" {
		t.Errorf("the new sandbox's files: %q %q", h, w)
	}
	if _, err := m.Reset(ctx, from.ID); err != nil {
		t.Fatal(err)
	}
	if got := readAt(t, m, from.ID, "/home/user/a.txt"); got != "home\n" {
		t.Errorf("after reset: %q", got)
	}
	_, err = m.Create(ctx, sandbox.CreateRequest{Template: "e2b-home"})
	if !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "/home/user") {
		t.Errorf("a default sandbox from a /home/user snapshot: %v, want invalid naming the home", err)
	}
}

// The other way: a snapshot of a default sandbox (/home/sandbox) cannot
// start a sandbox of user "user", whose home it does not hold.
func TestDefaultSnapshotRefusesARenamedHome(t *testing.T) {
	ctx := context.Background()
	s, m, _ := onFake(t, t.TempDir())
	def, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Snapshot(ctx, def.ID, "default-home", false); err != nil {
		t.Fatalf("snapshot of a default sandbox: %v", err)
	}
	if _, err := m.Create(ctx, sandbox.CreateRequest{Template: "default-home"}); err != nil {
		t.Errorf("a default sandbox from it: %v", err)
	}
	_, err = m.Create(ctx, sandbox.CreateRequest{Template: "default-home", User: e2bUser})
	if !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "/home/sandbox") {
		t.Errorf("a /home/user sandbox from a /home/sandbox snapshot: %v, want invalid naming the home", err)
	}
}
