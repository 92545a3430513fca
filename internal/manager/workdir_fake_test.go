package manager

import (
	"bytes"
	"context"
	"testing"

	"github.com/airlock-dev/airlock/internal/sandbox"
)

// A template's working directory (an image's WorkingDir, a build's
// WORKDIR) is where an exec that names no cwd starts, on its record and
// for the policy too; an exec that names one starts there; a template
// without one starts in /workspace.
func TestCoreTemplateWorkDir(t *testing.T) {
	ctx := context.Background()
	src := &snapSource{seeds: map[string]string{
		"wd": seedTar(t, map[string]string{"workspace/app/inner.txt": "x\n", "workspace/top.txt": "y\n"}),
	}}
	m, _ := fakeTierManagerWith(t, func(c *Config) { c.Modules = append(c.Modules, src) })
	host, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	li, _ := src.c.Live(host.ID)
	src.host = li.Base
	if got := ls(t, m, host.ID, ""); got != "" {
		t.Errorf("host template, no cwd: ls %q, want the empty /workspace", got)
	}
	if err := m.Destroy(ctx, host.ID); err != nil {
		t.Fatal(err)
	}
	src.host.WorkDir = "/workspace/app"
	sb, err := m.Create(ctx, sandbox.CreateRequest{Template: "wd"})
	if err != nil {
		t.Fatal(err)
	}
	if got := ls(t, m, sb.ID, ""); got != "inner.txt\n" {
		t.Errorf("no cwd: ls %q, want the template's working directory's", got)
	}
	if got := ls(t, m, sb.ID, "/workspace"); got != "app\ntop.txt\n" {
		t.Errorf("cwd /workspace: ls %q", got)
	}
	execs, err := m.recs.Execs(ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(execs) != 2 || execs[0].Cwd != "/workspace/app" || execs[1].Cwd != "/workspace" {
		t.Errorf("recorded cwds: %+v", execs)
	}
	// A task's sandbox on the same template: its commands act on the
	// task's repository in /workspace, whatever the image's WorkingDir.
	task, err := src.c.CreateForTask(ctx, sandbox.CreateRequest{Template: "wd"}, "t-workdir")
	if err != nil {
		t.Fatal(err)
	}
	if got := ls(t, m, task.ID, ""); got != "app\ntop.txt\n" {
		t.Errorf("a task's sandbox, no cwd: ls %q, want /workspace's", got)
	}
}

func ls(t *testing.T, m *Manager, id, cwd string) string {
	t.Helper()
	var out bytes.Buffer
	_, st, err := m.Exec(context.Background(), id, sandbox.ExecRequest{Argv: []string{"ls"}, Cwd: cwd}, nil, &out, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Code != 0 {
		t.Fatalf("ls in %q: exit %d", cwd, st.Code)
	}
	return out.String()
}
