package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/policy"
)

// put writes /workspace/p in sandbox id with the daemon's own file access.
func (r *rig) put(t *testing.T, id, p, data string) {
	t.Helper()
	f, err := r.m.Files(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteFile(context.Background(), "/workspace/"+p, strings.NewReader(data), 0o644, false); err != nil {
		t.Fatal(err)
	}
}

// A task's life on the fake backend: the checkout in /workspace, its
// write scope applied (and again after a reset), the host's diff with
// what is in and out of scope, a test run, and the finish that writes the
// result files and the bundle, destroys the sandbox and records it all.
func TestTaskLifeOnFake(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, nil)
	repo := gitRepo(t, map[string]string{"README": "base\n", "src/a.go": "package a\n"})
	task, err := r.tk.Start(ctx, TaskRequest{Repo: repo, Scope: []string{"src/**"}, Test: "grep -q base README", Prompt: "do it"})
	if err != nil {
		t.Fatal(err)
	}
	if task.State != "open" || task.Repo != repo || len(task.Commit) != 40 || task.Ref != "HEAD" || !strings.HasPrefix(task.ID, "t-") {
		t.Fatalf("started %+v", task)
	}
	if out, _, err := r.run(task.SandboxID, "cat", "README"); err != nil || out != "base\n" {
		t.Fatalf("the checkout in /workspace: %q %v", out, err)
	}
	want := []string{"/workspace/src", "/workspace/.git"}
	if got := r.be.of(task.SandboxID); len(got) != 1 || !slices.Equal(got[0], want) {
		t.Fatalf("write scope applied %v, want once %v", got, want)
	}
	r.put(t, task.SandboxID, "README", "base\nchanged\n")
	r.put(t, task.SandboxID, "src/b.go", "package a // new\n")
	d, err := r.tk.Diff(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]ChangedFile{}
	for _, f := range d.Files {
		files[f.Path] = f
	}
	if f := files["src/b.go"]; f.Status != "added" || !f.InScope {
		t.Errorf("src/b.go: %+v", f)
	}
	if f := files["README"]; f.Status != "modified" || f.InScope {
		t.Errorf("README: %+v", f)
	}
	if !slices.Equal(d.OutOfScope, []string{"README"}) || d.Base != task.Commit || !strings.Contains(d.Patch, "+changed") {
		t.Errorf("diff %+v", d)
	}
	run, err := r.tk.Test(ctx, task.ID, time.Minute, nil, nil, nil)
	if err != nil || !run.Passed || run.ExecID == "" {
		t.Fatalf("test run %+v %v", run, err)
	}
	res, err := r.tk.Finish(ctx, task.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Task.State != "finished" || res.Test == nil || !res.Test.Passed || len(res.Task.Tests) != 2 || len(res.Diff.Files) != 2 {
		t.Errorf("finish %+v (task %+v)", res, res.Task)
	}
	var names []string
	for _, f := range res.Files {
		names = append(names, filepath.Base(f))
	}
	if !slices.Equal(names, []string{"bundle.tar.gz", "commands.jsonl", "files.json", "manifest.json", "patch.diff", "tests.json"}) {
		t.Errorf("result files %v", names)
	}
	if sb, err := r.m.Get(ctx, task.SandboxID); err != nil || sb.State != "stopped" {
		t.Errorf("the sandbox after finish: %+v %v", sb, err)
	}
	var bundle bytes.Buffer
	if err := r.tk.Export(ctx, task.ID, &bundle); err != nil {
		t.Fatal(err)
	}
	if kept, _ := os.ReadFile(filepath.Join(res.OutputDir, BundleName)); bundle.Len() == 0 || !bytes.Equal(kept, bundle.Bytes()) {
		t.Errorf("the finished task's export is not its bundle (%d bytes, kept %d)", bundle.Len(), len(kept))
	}
	if _, err := r.tk.Finish(ctx, task.ID, false); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("a second finish: %v", err)
	}
	for _, k := range []string{"fetch.request", "task.start", "task.test", "task.sweep", "task.export", "task.finish"} {
		evs := r.events(t, k)
		if len(evs) == 0 || evs[0].TaskID != task.ID {
			t.Errorf("%s: %d events", k, len(evs))
		}
	}
	if got := len(r.events(t, "task.sweep")); got != 2 {
		t.Errorf("%d sweeps, want before and after the tests", got)
	}
	list, err := r.tk.List(ctx)
	if err != nil || len(list) != 1 || list[0].ID != task.ID {
		t.Errorf("list %+v %v", list, err)
	}
}

// A task's write scope holds for its sandbox's life: a reset applies it
// again.
func TestTaskScopeAfterReset(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, nil)
	task, err := r.tk.Start(ctx, TaskRequest{Repo: gitRepo(t, map[string]string{"src/a.go": "package a\n"}), Scope: []string{"src/**", "docs/*.md"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.m.Reset(ctx, task.SandboxID); err != nil {
		t.Fatal(err)
	}
	want := []string{"/workspace/src", "/workspace/docs", "/workspace/.git"}
	got := r.be.of(task.SandboxID)
	if len(got) != 2 || !slices.Equal(got[0], want) || !slices.Equal(got[1], want) {
		t.Fatalf("write scope at start and after a reset %v, want %v twice", got, want)
	}
}

// The task's test command is the one command the policy does not decide,
// and only as the task's test: the same command sent by the agent is
// refused, a request cannot ask for the exception (it is no field of the
// wire request), and the core grants it only in the task's own sandbox.
func TestTaskTestExceptionIsNarrow(t *testing.T) {
	ctx := context.Background()
	deny := &policy.File{Version: 1, Layer: policy.Layer{Rules: []policy.Rule{{ID: "no-grep", Command: "grep *", Action: policy.Deny, Reason: "no grep"}}}}
	r := newRig(t, func(c *manager.Config) { c.Policy = deny })
	repo := gitRepo(t, map[string]string{"README": "base\n"})
	task, err := r.tk.Start(ctx, TaskRequest{Repo: repo, Test: "grep -q base README"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.run(task.SandboxID, "/bin/sh", "-c", "grep -q base README"); err == nil || !strings.Contains(err.Error(), "no grep") {
		t.Fatalf("the agent's grep: %v", err)
	}
	var req sandbox.ExecRequest
	if err := json.Unmarshal([]byte(`{"Argv":["/bin/sh","-c","grep -q base README"],"taskTest":true,"task_test":true}`), &req); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.m.Exec(ctx, task.SandboxID, req, nil, nil, nil); err == nil {
		t.Fatal("a decoded request got the test's exception")
	}
	run, err := r.tk.Test(ctx, task.ID, time.Minute, nil, nil, nil)
	if err != nil || !run.Passed {
		t.Fatalf("the task's test: %+v %v", run, err)
	}
	e, err := r.tk.c.ExecRecord(ctx, task.SandboxID, run.ExecID)
	if err != nil || e.Policy == nil || e.Policy.Action != policy.Allow || !slices.Contains(e.Policy.Rules, "task:test") {
		t.Fatalf("the test's exec record: %+v %v", e, err)
	}
	other, err := r.m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	test := sandbox.ExecRequest{Argv: []string{"/bin/sh", "-c", "grep -q base README"}}
	if _, _, err := r.tk.c.ExecTaskTest(ctx, other.ID, task.ID, test, nil, nil, nil); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("the exception in a sandbox not the task's: %v", err)
	}
	if _, _, err := r.tk.c.ExecTaskTest(ctx, task.SandboxID, "t-000000000000", test, nil, nil, nil); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("the exception for another task: %v", err)
	}
	if _, _, err := r.tk.c.ExecTaskTest(ctx, other.ID, "", test, nil, nil, nil); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("the exception for no task: %v", err)
	}
	if err := r.m.Destroy(ctx, other.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.tk.c.ExecTaskTest(ctx, other.ID, task.ID, test, nil, nil, nil); !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), "stopped") {
		t.Errorf("the exception in a stopped sandbox: %v", err)
	}
	if _, _, err := r.tk.c.ExecTaskTest(ctx, "sb-nope", task.ID, test, nil, nil, nil); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("the exception in no sandbox: %v", err)
	}
	if _, err := r.tk.c.CreateForTask(ctx, sandbox.CreateRequest{}, ""); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("a task's sandbox without its task: %v", err)
	}
}

// While a task is being finished its sandbox runs nothing but its tests:
// an agent's command and a second finish are refused, and once done
// (kept) the sandbox runs commands again.
func TestTaskFinishingHoldsItsSandbox(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, nil)
	repo := gitRepo(t, map[string]string{"README": "base\n"})
	marker := filepath.Join(t.TempDir(), "go")
	task, err := r.tk.Start(ctx, TaskRequest{Repo: repo, Test: "while [ ! -e " + marker + " ]; do sleep 0.02; done"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := r.tk.Finish(ctx, task.ID, true)
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if li, ok := r.tk.c.Live(task.SandboxID); ok && li.State == sandbox.Finishing {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the sandbox never became finishing")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, _, err := r.run(task.SandboxID, "true"); !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), "being finished") {
		t.Errorf("an agent's command while finishing: %v", err)
	}
	if _, err := r.tk.Finish(ctx, task.ID, true); !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), "already being finished") {
		t.Errorf("a second finish meanwhile: %v", err)
	}
	writeFile(t, marker, "")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if li, ok := r.tk.c.Live(task.SandboxID); !ok || li.State != sandbox.Running {
		t.Fatalf("the kept sandbox after the finish: %+v %v", li, ok)
	}
	if _, st, err := r.run(task.SandboxID, "true"); err != nil || st.Code != 0 {
		t.Errorf("a command in the kept sandbox: %+v %v", st, err)
	}
	if _, err := r.tk.Diff(ctx, task.ID); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("the diff of a finished task: %v", err)
	}
}

// An open task whose sandbox stops keeps its diff (a paused one is thawed
// to read it); the task then finishes without tests, saying its workspace
// was gone, once.
func TestTaskDiffKeptWhenItsSandboxStops(t *testing.T) {
	for _, paused := range []bool{false, true} {
		ctx := context.Background()
		r := newRig(t, nil)
		repo := gitRepo(t, map[string]string{"README": "base\n"})
		task, err := r.tk.Start(ctx, TaskRequest{Repo: repo, Test: "false"})
		if err != nil {
			t.Fatal(err)
		}
		r.put(t, task.SandboxID, "new.txt", "hello\n")
		if paused {
			if _, err := r.m.Pause(ctx, task.SandboxID); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.m.Destroy(ctx, task.SandboxID); err != nil {
			t.Fatal(err)
		}
		stops := r.events(t, "sandbox.stop")
		if len(stops) != 1 || !strings.Contains(string(stops[0].Payload), `"diff_kept":1`) {
			t.Fatalf("paused %v: sandbox.stop %s", paused, stops[0].Payload)
		}
		d, err := r.tk.Diff(ctx, task.ID)
		if err != nil || len(d.Files) != 1 || d.Files[0].Path != "new.txt" {
			t.Fatalf("paused %v: kept diff %+v %v", paused, d, err)
		}
		res, err := r.tk.Finish(ctx, task.ID, false)
		if err != nil {
			t.Fatal(err)
		}
		if g := res.Task.WorkspaceGone; g == nil || !g.DiffKept || g.Reason != sandbox.StopDestroyed || res.Test != nil || len(res.Diff.Files) != 1 {
			t.Errorf("paused %v: finish %+v gone %+v", paused, res, g)
		}
		if fin := r.events(t, "task.finish"); len(fin) != 1 || !strings.Contains(string(fin[0].Payload), `"workspace_gone":"destroyed"`) {
			t.Errorf("paused %v: task.finish %v", paused, fin)
		}
		if len(r.events(t, "task.test")) != 0 {
			t.Errorf("paused %v: tests ran in a gone workspace", paused)
		}
	}
}

// What Start refuses, before anything is cloned or made.
func TestTaskStartRefusals(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, func(c *manager.Config) { c.MaxLifetime = time.Hour })
	repo := gitRepo(t, map[string]string{"README": "base\n"})
	for _, c := range []struct {
		req  TaskRequest
		want error
	}{
		{TaskRequest{Repo: ""}, errdefs.ErrInvalid},
		{TaskRequest{Repo: "-upload-pack=x"}, errdefs.ErrInvalid},
		{TaskRequest{Repo: filepath.Join(repo, "README")}, errdefs.ErrInvalid},
		{TaskRequest{Repo: filepath.Join(repo, "nope")}, errdefs.ErrNotFound},
		{TaskRequest{Repo: repo, Ref: "-x"}, errdefs.ErrInvalid},
		{TaskRequest{Repo: repo, Ref: "no-such-branch"}, errdefs.ErrInvalid},
		{TaskRequest{Repo: repo, Scope: []string{"../etc/**"}}, errdefs.ErrInvalid},
		{TaskRequest{Repo: repo, TTLSeconds: 7200}, errdefs.ErrInvalid},
		// A remote client's clone goes where the fetch policy allows:
		// with none, nowhere; and never to a local path.
		{TaskRequest{Repo: "https://example.test/r.git", TightenOnly: true}, errdefs.ErrDenied},
		{TaskRequest{Repo: repo, TightenOnly: true}, errdefs.ErrDenied},
	} {
		if _, err := r.tk.Start(ctx, c.req); !errors.Is(err, c.want) {
			t.Errorf("%+v: %v, want %v", c.req, err, c.want)
		}
	}
	var tcp []string
	for _, e := range r.events(t, "fetch.request") {
		if strings.Contains(string(e.Payload), `"door":"tcp"`) {
			tcp = append(tcp, string(e.Payload))
		}
	}
	if len(tcp) != 2 || !strings.Contains(tcp[0], `"decision":"deny"`) || !strings.Contains(tcp[1], `"decision":"deny"`) {
		t.Errorf("the remote fetches' records: %v", tcp)
	}
	if left, _ := filepath.Glob(filepath.Join(r.dir, "t-*")); len(left) != 0 {
		t.Errorf("refused tasks left directories: %v", left)
	}
	if _, err := New(Config{}).Start(ctx, TaskRequest{Repo: repo}); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("tasks without a directory: %v", err)
	}
	if _, err := r.tk.Get(ctx, "t-000000000000"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("an unknown task: %v", err)
	}
}

// A daemon without an audit log makes no bundles: a finish writes none,
// an export is refused.
func TestTaskWithoutAuditLogHasNoBundle(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, func(c *manager.Config) { c.Audit = nil })
	task, err := r.tk.Start(ctx, TaskRequest{Repo: gitRepo(t, map[string]string{"README": "base\n"})})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.tk.Export(ctx, task.ID, &bytes.Buffer{}); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("export without an audit log: %v", err)
	}
	res, err := r.tk.Finish(ctx, task.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Files {
		if filepath.Base(f) == BundleName {
			t.Errorf("a bundle without an audit log: %v", res.Files)
		}
	}
	if len(res.Files) != 5 {
		t.Errorf("result files %v", res.Files)
	}
}

// A daemon that keeps an audit log but has no bundle writer (no review
// module) finishes no task and exports none: a task never ends without
// its bundle. The task stays open, its sandbox running.
func TestTaskWithoutBundlerFailsClosed(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, func(c *manager.Config) { c.Modules = []hook.Module{c.Modules[0]} })
	task, err := r.tk.Start(ctx, TaskRequest{Repo: gitRepo(t, map[string]string{"README": "base\n"})})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.tk.Finish(ctx, task.ID, false); !errors.Is(err, errdefs.ErrUnsupported) || !strings.Contains(err.Error(), "no review module") {
		t.Errorf("finish without a bundler: %v", err)
	}
	if err := r.tk.Export(ctx, task.ID, &bytes.Buffer{}); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("export without a bundler: %v", err)
	}
	got, err := r.tk.Get(ctx, task.ID)
	if err != nil || got.State != "open" {
		t.Errorf("the task after a refused finish: %+v %v", got, err)
	}
	if st, ok := r.tk.c.Live(task.SandboxID); !ok || st.State != sandbox.Running {
		t.Errorf("its sandbox: %+v %v", st, ok)
	}
	if left, _ := filepath.Glob(filepath.Join(r.dir, task.ID, "result", "*")); len(left) != 0 {
		t.Errorf("result files written: %v", left)
	}
}
