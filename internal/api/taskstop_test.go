package api

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/bundle"
	"github.com/airlock-dev/airlock/internal/tasks"
)

// A task whose sandbox stops before it is finished (TTL, destroy, daemon
// stop, a crash) keeps the agent's work, and can still be finished and
// exported: without tests, saying so (found in a lifecycle review: such a
// task answered 409 for ever, and the work went with the sandbox).

// startFixedTask starts a task on sampleRepo and plays an agent that
// fixes the code; it returns the task.
func startFixedTask(t *testing.T, d *daemon, ttl int) tasks.Task {
	t.Helper()
	repo, first := sampleRepo(t)
	var task tasks.Task
	if code := d.do("POST", "/v1/tasks", map[string]any{"repo": repo, "ref": first, "test": "sh test.sh", "ttl_seconds": ttl}, &task); code != 201 {
		t.Fatalf("start: %d", code)
	}
	reviewSh(t, d, task.SandboxID, `sed -i 's/-/+/' src/calc.sh && echo new > src/added.txt`)
	return task
}

func (d *daemon) waitStopped(id string, within time.Duration) sandbox.Sandbox {
	d.t.Helper()
	var sb sandbox.Sandbox
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if d.do("GET", "/v1/sandboxes/"+id, nil, &sb); sb.State == "stopped" {
			return sb
		}
	}
	d.t.Fatalf("sandbox %s did not stop within %s: %+v", id, within, sb)
	return sb
}

const fixedLine = "+echo $(( $1 + $2 ))"

// finishGone finishes a task whose sandbox has stopped and checks what a
// reviewer is told: no tests ran, why, and the patch kept as it stopped.
func finishGone(t *testing.T, d *daemon, task tasks.Task, reason string) tasks.FinishResult {
	t.Helper()
	var res tasks.FinishResult
	if code := d.do("POST", "/v1/tasks/"+task.ID+"/finish", nil, &res); code != 200 {
		t.Fatalf("finish after the sandbox stopped (%s): %d", reason, code)
	}
	g := res.Task.WorkspaceGone
	if res.Task.State != "finished" || res.Test != nil || g == nil || g.Reason != reason || !g.DiffKept || !strings.Contains(g.Note, "no tests ran") {
		t.Fatalf("finish: %+v, workspace_gone %+v", res, g)
	}
	if !strings.Contains(res.Diff.Patch, fixedLine) || len(res.Diff.Files) != 2 {
		t.Errorf("the agent's work is not in the patch:\n%s %+v", res.Diff.Patch, res.Diff.Files)
	}
	if b, _ := os.ReadFile(filepath.Join(res.OutputDir, "patch.diff")); !strings.Contains(string(b), fixedLine) {
		t.Errorf("patch.diff:\n%s", b)
	}
	var mf struct {
		WorkspaceGone *tasks.WorkspaceGone `json:"workspace_gone"`
	}
	b, _ := os.ReadFile(filepath.Join(res.OutputDir, "manifest.json"))
	if err := json.Unmarshal(b, &mf); err != nil || mf.WorkspaceGone == nil || mf.WorkspaceGone.Reason != reason {
		t.Errorf("manifest.json: %v %s", err, b)
	}
	var got tasks.Task
	if d.do("GET", "/v1/tasks/"+task.ID, nil, &got); got.WorkspaceGone == nil || got.WorkspaceGone.Reason != reason {
		t.Errorf("task record: %+v", got)
	}
	return res
}

func TestTaskFinishedAfterItsSandboxExpired(t *testing.T) {
	d, _ := auditDaemon(t)
	task := startFixedTask(t, d, 3)
	d.waitStopped(task.SandboxID, 20*time.Second)
	// The diff taken as it stopped is the open task's diff, and its bundle
	// is made from it.
	var diff tasks.Diff
	if code := d.do("GET", "/v1/tasks/"+task.ID+"/diff", nil, &diff); code != 200 || !strings.Contains(diff.Patch, fixedLine) {
		t.Fatalf("diff of the expired task: %d\n%s", code, diff.Patch)
	}
	open := untarAll(t, d.bundle(task.ID))
	var m bundle.Manifest
	if err := json.Unmarshal(open["manifest.json"], &m); err != nil || m.WorkspaceGone == nil || m.WorkspaceGone.Reason != "expired" || !strings.Contains(string(open["patch.diff"]), fixedLine) {
		t.Fatalf("bundle of the open task: %v %+v\n%s", err, m.WorkspaceGone, open["patch.diff"])
	}
	finishGone(t, d, task, "expired")
	b := d.bundle(task.ID)
	files := untarAll(t, b)
	m = bundle.Manifest{}
	if err := json.Unmarshal(files["manifest.json"], &m); err != nil || m.WorkspaceGone == nil || !m.WorkspaceGone.DiffKept {
		t.Fatalf("bundle of the finished task: %v %s", err, files["manifest.json"])
	}
	if !strings.Contains(string(files["report.html"]), "no tests ran on its final state") {
		t.Error("the report does not say that no tests ran on the final state")
	}
	if _, err := bundle.Verify(strings.NewReader(string(b)), nil); err != nil {
		t.Errorf("bundle verify: %v", err)
	}
	// The stop is on record with the diff it kept.
	var kept bool
	for _, e := range d.events("sandbox=" + task.SandboxID + "&kind=sandbox.stop") {
		var p struct {
			Reason   string `json:"reason"`
			DiffKept int    `json:"diff_kept"`
		}
		_ = json.Unmarshal(e.Payload, &p)
		kept = kept || (p.Reason == "expired" && p.DiffKept == 2)
	}
	if !kept {
		t.Error("sandbox.stop does not record the kept diff")
	}
}

// A paused task sandbox is thawed for its diff (its files are read
// through its agent, frozen with it) before it is destroyed.
func TestTaskDiffKeptWhenDestroyedWhilePaused(t *testing.T) {
	d := newDaemon(t)
	task := startFixedTask(t, d, 0)
	if code := d.do("POST", "/v1/sandboxes/"+task.SandboxID+"/pause", nil, nil); code != 200 {
		t.Fatalf("pause: %d", code)
	}
	start := time.Now()
	if code := d.do("DELETE", "/v1/sandboxes/"+task.SandboxID, nil, nil); code != 204 {
		t.Fatalf("destroy: %d", code)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("destroying the paused task sandbox took %s", took)
	}
	finishGone(t, d, task, "destroyed")
}

// Stopping the daemon (SIGTERM: Shutdown) keeps each open task's diff.
func TestTaskDiffKeptAtShutdown(t *testing.T) {
	d := newDaemon(t)
	task := startFixedTask(t, d, 0)
	if err := d.m.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	finishGone(t, d, task, "daemon-stopped")
}

// Finishes of one task are one at a time, also when its sandbox is gone
// and no live sandbox can be marked: of several at once, one finishes it
// and the others get 409; the record has one task.finish.
func TestTaskWithStoppedSandboxFinishesOnce(t *testing.T) {
	d, _ := auditDaemon(t)
	task := startFixedTask(t, d, 0)
	if code := d.do("DELETE", "/v1/sandboxes/"+task.SandboxID, nil, nil); code != 204 {
		t.Fatalf("destroy: %d", code)
	}
	const n = 8
	codes := make(chan int, n)
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		go func() {
			<-start
			codes <- d.do("POST", "/v1/tasks/"+task.ID+"/finish", nil, nil)
		}()
	}
	close(start)
	got := map[int]int{}
	for i := 0; i < n; i++ {
		got[<-codes]++
	}
	if got[200] != 1 || got[409] != n-1 {
		t.Fatalf("%d finishes at once: status counts %v, want one 200 and %d 409", n, got, n-1)
	}
	if evs := d.events("task=" + task.ID + "&kind=task.finish"); len(evs) != 1 {
		t.Fatalf("%d task.finish events, want 1", len(evs))
	}
}
