package tasks

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// putP is put with parent directories made.
func (r *rig) putP(t *testing.T, id, p, data string) {
	t.Helper()
	f, err := r.m.Files(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteFile(context.Background(), "/workspace/"+p, strings.NewReader(data), 0o644, true); err != nil {
		t.Fatal(err)
	}
}

// What a repository would not commit stays out of the task's diff
// (issue 19: a node_modules made a 39.5 MB patch of 7,713 files), and is
// counted. As attacks: an agent that edits .gitignore to hide its change
// hides nothing (the base commit's rules decide), and a change to a file
// the base tracks inside a node_modules is shown.
func TestDiffLeavesOutWhatTheRepoIgnores(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, nil)
	repo := gitRepo(t, map[string]string{
		"README": "base\n", ".gitignore": "build/\n*.log\n!keep.log\n", "src/a.go": "package a\n",
		"vendored/node_modules/kept.js": "old\n",
	})
	task, err := r.tk.Start(ctx, TaskRequest{Repo: repo})
	if err != nil {
		t.Fatal(err)
	}
	id := task.SandboxID
	for p, data := range map[string]string{
		"node_modules/lib/index.js": "x\n", "node_modules/lib/package.json": "{}\n", "web/node_modules/y.js": "yy\n",
		"pkg/__pycache__/m.pyc": "c", "build/out.o": "obj", "a.log": "log\n", "keep.log": "keep\n",
		"src/b.go": "package a // the agent's\n", ".gitignore": "build/\n*.log\n!keep.log\nsrc/\n",
		"vendored/node_modules/kept.js": "new\n", "vendored/node_modules/added.js": "added\n",
	} {
		r.putP(t, id, p, data)
	}
	d, err := r.tk.Diff(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range d.Files {
		got = append(got, f.Status+" "+f.Path)
	}
	slices.Sort(got)
	want := []string{"added keep.log", "added src/b.go", "added vendored/node_modules/added.js", "modified .gitignore", "modified vendored/node_modules/kept.js"}
	if !slices.Equal(got, want) {
		t.Errorf("files %q, want %q", got, want)
	}
	if strings.Contains(d.Patch, "index.js") || strings.Contains(d.Patch, "out.o") || !strings.Contains(d.Patch, "the agent's") {
		t.Errorf("patch:\n%s", d.Patch)
	}
	ig := d.Ignored
	wantRoots := []string{"a.log", "build", "node_modules", "pkg/__pycache__", "web/node_modules"}
	if ig == nil || ig.Files != 6 || ig.Bytes != int64(len("x\n{}\nyy\ncobjlog\n")) {
		t.Fatalf("ignored %+v", ig)
	}
	roots := slices.Clone(ig.Roots)
	slices.Sort(roots)
	if !slices.Equal(roots, wantRoots) {
		t.Errorf("ignored roots %q, want %q", roots, wantRoots)
	}
}

// A big node_modules does not make a slow diff: it is never unpacked on
// the host.
func TestDiffOfALargeNodeModulesIsQuick(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, nil)
	task, err := r.tk.Start(ctx, TaskRequest{Repo: gitRepo(t, map[string]string{"README": "base\n", "package.json": "{}\n"})})
	if err != nil {
		t.Fatal(err)
	}
	f, err := r.m.Files(ctx, task.SandboxID)
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	for i := 0; i < n; i++ {
		p := fmt.Sprintf("/workspace/node_modules/pkg%d/index.js", i%300)
		if i >= 300 {
			p = fmt.Sprintf("/workspace/node_modules/pkg%d/f%d.js", i%300, i)
		}
		if _, err := f.WriteFile(ctx, p, strings.NewReader("module.exports = 1\n"), 0o644, true); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	d, err := r.tk.Diff(ctx, task.ID)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("diff with %d files in node_modules: %v", n, took)
	if len(d.Files) != 0 || d.Ignored == nil || d.Ignored.Files != n || !slices.Equal(d.Ignored.Roots, []string{"node_modules"}) {
		t.Fatalf("diff of %d files, ignored %+v", len(d.Files), d.Ignored)
	}
}
