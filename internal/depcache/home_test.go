package depcache_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/sandbox"
	"github.com/airlock-dev/airlock/internal/tasks"
)

// A sandbox whose user's home is not the default one (the E2B door's
// /home/user) has its caches there: the seed writes them into that
// home, not /home/sandbox, and the collect reads them from it.
func TestCachesFollowTheSandboxHome(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	data := libZip(t)
	gosum := "example.test/lib v1.0.0 " + h1(t, data) + "\n"
	repo := repoWith(t, map[string]string{"go.mod": "module example.test/app\n", "go.sum": gosum})
	reached := func(id string) {
		t.Helper()
		if _, err := r.log.Record(ctx, audit.Entry{SandboxID: id, Kind: "egress.connect",
			Payload: map[string]any{"time": time.Now(), "host": "proxy.example.test", "port": 443, "decision": "allow"}}); err != nil {
			t.Fatal(err)
		}
	}
	// A task (the default user) fills the project's store.
	task, err := r.tk.Start(ctx, tasks.TaskRequest{Repo: repo})
	if err != nil {
		t.Fatal(err)
	}
	f, _ := r.m.Files(ctx, task.SandboxID)
	if _, err := f.WriteFile(ctx, zipPath, bytes.NewReader(data), 0o644, true); err != nil {
		t.Fatal(err)
	}
	reached(task.SandboxID)
	if _, err := r.tk.Finish(ctx, task.ID, false); err != nil {
		t.Fatal(err)
	}
	sb, err := r.m.Create(ctx, sandbox.CreateRequest{User: runtime.User{Name: "user", Home: "/home/user"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.caches.Seed(ctx, sb.ID, "", repo); err != nil {
		t.Fatal(err)
	}
	f, _ = r.m.Files(ctx, sb.ID)
	inHome := strings.Replace(zipPath, "/home/sandbox/", "/home/user/", 1)
	if _, err := f.Stat(ctx, inHome); err != nil {
		t.Errorf("the seeded zip in /home/user: %v", err)
	}
	if _, err := f.Stat(ctx, zipPath); err == nil {
		t.Errorf("the seed wrote the default user's home %s", zipPath)
	}
	// The collect reads that home: a cleared store is filled again from it.
	if _, err := r.caches.Clear(ctx, repo, ""); err != nil {
		t.Fatal(err)
	}
	reached(sb.ID)
	lock := func(name string) ([]byte, error) {
		if name == "go.sum" {
			return []byte(gosum), nil
		}
		return nil, os.ErrNotExist
	}
	if err := r.caches.Collect(ctx, sb.ID, "", repo, lock); err != nil {
		t.Fatal(err)
	}
	if l, err := r.caches.List(ctx); err != nil || len(l) != 1 || l[0].Ecosystem != "go" || l[0].Files != 3 {
		t.Errorf("collect from /home/user: %+v %v", l, err)
	}
}
