package tasks

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/hook"
	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/sandbox"
	"github.com/airlock-dev/airlock/internal/snapshots"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/tenant"
)

// Attack: project B starts a task from project A's snapshot (A's files
// in its workspace). The answer is the answer for a template that does
// not exist; A's own task starts from it.
func TestTaskFromAnotherProjectsSnapshot(t *testing.T) {
	var snaps *snapshots.Snapshots
	r := newRig(t, func(c *manager.Config) {
		snaps = snapshots.New(t.TempDir(), c.Templates)
		c.Modules = append(c.Modules, hook.Module(snaps))
	})
	ctx := context.Background()
	for _, p := range []string{"proj-a", "proj-b"} {
		if err := r.st.PutProject(ctx, &store.Project{ID: p, Created: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	as := func(p string) context.Context {
		return tenant.With(ctx, tenant.Principal{Project: p, Role: tenant.Agent, KeyID: "k-" + p})
	}
	sb, err := r.m.Create(as("proj-a"), sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := snaps.Snapshot(as("proj-a"), sb.ID, "a-snap", true); err != nil {
		t.Fatal(err)
	}
	repo := gitRepo(t, map[string]string{"README": "hi\n"})
	_, errTaken := r.tk.Start(as("proj-b"), TaskRequest{Repo: repo, Template: "a-snap"})
	_, errNone := r.tk.Start(as("proj-b"), TaskRequest{Repo: repo, Template: "z-snap"})
	if !errors.Is(errTaken, errdefs.ErrNotFound) || errNone == nil || strings.ReplaceAll(errTaken.Error(), "a-snap", "z-snap") != errNone.Error() {
		t.Errorf("b's task from a's snapshot: %v; from none: %v", errTaken, errNone)
	}
	tk, err := r.tk.Start(as("proj-a"), TaskRequest{Repo: repo, Template: "a-snap"})
	if err != nil {
		t.Fatalf("a's task from its snapshot: %v", err)
	}
	if got, err := r.m.Get(ctx, tk.SandboxID); err != nil || got.Template != "a-snap" || got.Project != "proj-a" {
		t.Errorf("a's task's sandbox: %+v %v", got, err)
	}
}
