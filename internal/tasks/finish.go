package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/airlock-dev/airlock/internal/hook"
	"github.com/airlock-dev/airlock/internal/redacted"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/bundle"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/store"
)

// FinishResult says what finishing a task produced.
type FinishResult struct {
	Task      *Task    `json:"task"`
	OutputDir string   `json:"output_dir"`
	Files     []string `json:"files"`
	Test      *TestRun `json:"test,omitempty"`
	Diff      *Diff    `json:"diff"`
}

// sweep ends every process in the task's sandbox but its agent (when the
// backend can), and records how many there were.
func (tk *Tasks) sweep(ctx context.Context, sandboxID, taskID, when string) error {
	sb, err := tk.c.Runtime(ctx, sandboxID)
	if err != nil {
		return nil // a stopped sandbox runs nothing
	}
	sw, ok := sb.(runtime.Sweeper)
	if !ok {
		return nil
	}
	n, err := sw.Sweep(ctx)
	if err != nil {
		return fmt.Errorf("end the task's processes %s: %w", when, err)
	}
	return tk.c.Record(ctx, audit.Entry{SandboxID: sandboxID, TaskID: taskID, Kind: "task.sweep", Payload: map[string]any{"ended": n, "when": when}})
}

// Finish runs the tests (if the task has a test command), writes the
// patch, the changed files, the test runs and the exec log to the task's
// output directory, and destroys the sandbox unless keep. A task whose
// sandbox has stopped is finished without tests, with the diff kept as it
// stopped (or none); its result says workspace_gone.
func (tk *Tasks) Finish(ctx context.Context, id string, keep bool) (*FinishResult, error) {
	rec, _, err := tk.openTask(ctx, id)
	if err != nil {
		return nil, err
	}
	bundles, err := tk.bundler(id)
	if err != nil {
		return nil, err
	}
	// From here until the diff and bundle are taken, nothing but the
	// task's own tests runs or writes in its sandbox: a command sent
	// meanwhile could change the files after the tests.
	// One finish of a task at a time, also of one whose sandbox is gone
	// (no live sandbox to mark): a second would write the same result
	// files and bundle and record a second task.finish.
	end, err := tk.beginFinish(rec.SandboxID, id)
	if err != nil {
		return nil, err
	}
	defer end()
	// The task may have been finished by another call between openTask
	// and here: read its state again under the mark.
	rec, sp, err := tk.openTask(ctx, id)
	if err != nil {
		return nil, err
	}
	// A task whose sandbox stopped (expired, destroyed, lost) is finished
	// without tests, with what was kept of its workspace, and says so.
	gone, kept, err := tk.workspaceGone(ctx, rec)
	if err != nil {
		return nil, err
	}
	run, rec, d, err := tk.finalState(ctx, rec, sp, gone, kept)
	if err != nil {
		return nil, err
	}
	out, names, res, rd, err := tk.writeResult(ctx, bundles, rec, sp, d, gone)
	if err != nil {
		return nil, err
	}
	if tk.cfg.Caches != nil && gone == nil && sp.Bundle == nil {
		tk.collectCaches(ctx, rec, sp)
	}
	// The task's secret grants end with it (a kept sandbox outlives
	// them): first, so that a failure leaves the task open to finish again.
	if err := tk.c.TaskEnded(ctx, hook.SandboxRef{ID: rec.SandboxID, TaskID: id}); err != nil {
		return nil, fmt.Errorf("end the task's secret grants: %w", err)
	}
	now := time.Now().UTC()
	res.OutputDir, res.Kept, res.WorkspaceGone = out, keep, gone
	rec.Result, _ = json.Marshal(res)
	rec.State, rec.Finished = "finished", &now
	if err := tk.c.Store().UpdateTask(ctx, rec); err != nil {
		return nil, err
	}
	finish := map[string]any{"files": len(d.Files), "out_of_scope": d.OutOfScope, "kept": keep}
	if gone != nil {
		finish["workspace_gone"] = gone.Reason
		finish["diff_kept"] = gone.DiffKept
	}
	_ = tk.c.Record(ctx, audit.Entry{SandboxID: rec.SandboxID, TaskID: id, Kind: "task.finish", Payload: finish})
	if !keep {
		if err := tk.c.Destroy(ctx, rec.SandboxID); err != nil {
			return nil, err
		}
	}
	t, err := tk.shownTask(rec)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	return &FinishResult{Task: t, OutputDir: out, Files: names, Test: run, Diff: rd}, nil
}

// bundler is what writes task id's bundle as it is finished (nil: the
// daemon keeps no audit log, so none is made), or why it cannot be
// finished now. A task is not finished into a bundle whose record has a
// gap: with a broken audit log it stays open (its sandbox kept) until
// the log works again; nor without the bundle it must have (no bundle
// writer).
func (tk *Tasks) bundler(id string) (hook.TaskBundler, error) {
	if err := tk.c.AuditHealthy(); err != nil {
		return nil, fmt.Errorf("task %s cannot be finished: %w", id, err)
	}
	b, err := tk.c.Bundles()
	if err != nil {
		return nil, fmt.Errorf("task %s cannot be finished: %w", id, err)
	}
	return b, nil
}

// beginFinish marks task id (of sandbox sandboxID) as being finished:
// one finish of a task at a time, also of one whose sandbox is gone (no
// live sandbox to mark), since a second would write the same result
// files and bundle and record a second task.finish. Its live sandbox
// becomes Finishing. end undoes both.
func (tk *Tasks) beginFinish(sandboxID, id string) (end func(), err error) {
	tk.mu.Lock()
	defer tk.mu.Unlock()
	if tk.finishing[id] {
		return nil, fmt.Errorf("task %s is already being finished: %w", id, errdefs.ErrConflict)
	}
	if st, ok := tk.c.Live(sandboxID); ok && st.State == sandbox.Finishing {
		return nil, fmt.Errorf("task %s is already being finished: %w", id, errdefs.ErrConflict)
	}
	endSandbox, err := tk.c.BeginFinishing(sandboxID)
	if err != nil {
		return nil, fmt.Errorf("task %s cannot be finished: %w", id, err)
	}
	tk.finishing[id] = true
	return func() {
		tk.mu.Lock()
		delete(tk.finishing, id)
		tk.mu.Unlock()
		endSandbox()
	}, nil
}

// BundleName is where a finished task's bundle is kept in its result
// directory.
const BundleName = "bundle.tar.gz"

// Export writes the task's signed review bundle to w. An open task's
// bundle is made now, from its live sandbox; a finished task's is the one
// made when it finished (its sandbox is gone). An open task whose sandbox
// stopped gets one made now from the diff kept as it stopped (or none),
// its manifest saying workspace_gone.
func (tk *Tasks) Export(ctx context.Context, id string, w io.Writer) error {
	bundles, err := tk.c.Bundles()
	if err != nil {
		return err
	}
	if bundles == nil {
		return fmt.Errorf("bundles need the audit log: %w", errdefs.ErrUnsupported)
	}
	rec, err := tk.c.Store().GetTask(ctx, id)
	if err != nil {
		return err
	}
	if rec.State != "open" {
		f, err := os.Open(filepath.Join(tk.dir(id), "result", BundleName))
		if err != nil {
			return fmt.Errorf("task %s is %s and has no bundle: %w", id, rec.State, errdefs.ErrNotFound)
		}
		defer f.Close()
		_, err = io.Copy(w, f)
		return err
	}
	var sp taskSpec
	if err := json.Unmarshal(rec.Spec, &sp); err != nil {
		return err
	}
	d, gone, err := tk.taskDiff(ctx, rec, &sp)
	if err != nil {
		return fmt.Errorf("diff: %w", err)
	}
	return bundles.WriteBundle(ctx, taskBundle(rec, &sp, d, gone), w)
}

// taskBundle is what the bundle is given of an open task (gone: its
// workspace is, see workspaceGone); the bundle redacts it.
func taskBundle(rec *store.Task, sp *taskSpec, d *Diff, gone *WorkspaceGone) *hook.TaskBundle {
	tb := &hook.TaskBundle{Task: rec, Patch: d.Patch, OutOfScope: d.OutOfScope,
		Manifest: bundle.Manifest{Task: rec.ID, Sandbox: rec.SandboxID, Repo: sp.Repo, Ref: sp.Ref, Commit: sp.Commit,
			Prompt: sp.Prompt, Scope: sp.Scope, Test: sp.Test, Created: rec.Created, WorkspaceGone: gone}}
	for _, f := range d.Files {
		tb.Files = append(tb.Files, bundle.File{Path: f.Path, Status: f.Status, InScope: f.InScope})
	}
	tb.Dependencies = bundleDeps(d)
	var res taskResult
	if len(rec.Result) > 0 {
		_ = json.Unmarshal(rec.Result, &res)
	}
	for _, t := range res.Tests {
		tb.Tests = append(tb.Tests, bundle.TestRun{ExecID: t.ExecID, Command: sp.Test, Passed: t.Passed, ExitCode: t.Status.Code,
			Started: t.Started, Finished: t.Finished})
	}
	return tb
}

// finalState is the task's work as it is finished: its sandbox swept,
// its tests run (the record read again after them) and swept again, then
// its diff; or, its workspace gone, the diff kept as it stopped (or an
// empty one), without tests.
func (tk *Tasks) finalState(ctx context.Context, rec *store.Task, sp *taskSpec, gone *WorkspaceGone, kept *Diff) (*TestRun, *store.Task, *Diff, error) {
	// Nothing of the agent's may keep running past this point: a process
	// left behind (a daemon, a setsid'd orphan) could change the files
	// after the tests ran and before, or after, the diff was taken. Swept
	// again after the tests, which may leave processes too.
	var run *TestRun
	var err error
	d := kept
	if gone == nil {
		if err := tk.sweep(ctx, rec.SandboxID, rec.ID, "before the tests"); err != nil {
			return nil, nil, nil, err
		}
	}
	if gone == nil && sp.Test != "" {
		if run, err = tk.Test(ctx, rec.ID, 30*time.Minute, nil, nil, nil); err != nil {
			return nil, nil, nil, fmt.Errorf("run the tests: %w", err)
		}
		if rec, err = tk.c.Store().GetTask(ctx, rec.ID); err != nil {
			return nil, nil, nil, err
		}
		if err := tk.sweep(ctx, rec.SandboxID, rec.ID, "after the tests"); err != nil {
			return nil, nil, nil, err
		}
	}
	if gone == nil {
		if d, err = tk.diff(ctx, rec, sp); err != nil {
			return nil, nil, nil, fmt.Errorf("diff: %w", err)
		}
	} else if d == nil {
		d = &Diff{Base: sp.Commit, Files: []ChangedFile{}, OutOfScope: []string{}}
	}
	return run, rec, d, nil
}

// writeResult writes the task's result files (and its bundle, with
// bundles unless nil) to its result directory: what is written is
// redacted (rd, the diff as it may be shown). names are the files written.
func (tk *Tasks) writeResult(ctx context.Context, bundles hook.TaskBundler, rec *store.Task, sp *taskSpec, d *Diff, gone *WorkspaceGone) (out string, names []string, res taskResult, rd *Diff, err error) {
	out = filepath.Join(tk.dir(rec.ID), "result")
	if err := os.MkdirAll(out, 0o700); err != nil {
		return "", nil, res, nil, err
	}
	execs, err := tk.c.Execs(ctx, rec.SandboxID)
	if err != nil {
		return "", nil, res, nil, err
	}
	if len(rec.Result) > 0 {
		_ = json.Unmarshal(rec.Result, &res)
	}
	// What is written here is shown to people: redacted, as the bundle is.
	rd = d.redacted(tk.c.Redactor())
	written, err := tk.resultFiles(rec, sp, rd, res.Tests, execs, gone)
	if err != nil {
		return "", nil, res, nil, err
	}
	for name, data := range written {
		if err := os.WriteFile(filepath.Join(out, name), data, 0o600); err != nil {
			return "", nil, res, nil, err
		}
		names = append(names, filepath.Join(out, name))
	}
	if bundles != nil {
		// The bundle is made while the sandbox still exists (its added
		// files are the artifacts); it outlives the sandbox.
		bp := filepath.Join(out, BundleName)
		f, err := os.OpenFile(bp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return "", nil, res, nil, err
		}
		err = bundles.WriteBundle(ctx, taskBundle(rec, sp, d, gone), f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return "", nil, res, nil, fmt.Errorf("review bundle: %w", err)
		}
		names = append(names, bp)
	}
	return out, names, res, rd, nil
}

// resultManifest is the result's manifest.json.
type resultManifest struct {
	Task          string         `json:"task" redact:"keep"`
	Sandbox       string         `json:"sandbox" redact:"keep"`
	Repo          string         `json:"repo"`
	Ref           string         `json:"ref"`
	Commit        string         `json:"commit" redact:"keep"`
	Prompt        string         `json:"prompt"`
	Scope         []string       `json:"scope"`
	Test          string         `json:"test"`
	Created       time.Time      `json:"created"`
	Finished      time.Time      `json:"finished"`
	WorkspaceGone *WorkspaceGone `json:"workspace_gone,omitempty"`
}

// resultFiles are the result's files but the bundle, every string
// redacted but the daemon's own words (internal/redacted), rd already
// redacted: a value any caller teaches the redactor must not hide a
// field of another task's result.
func (tk *Tasks) resultFiles(rec *store.Task, sp *taskSpec, rd *Diff, tests []TestRun, execs []*sandbox.Exec, gone *WorkspaceGone) (map[string][]byte, error) {
	red := tk.c.Redactor()
	var log bytes.Buffer
	for _, e := range execs {
		b, err := scrubbedJSON(red, e, false)
		if err != nil {
			return nil, err
		}
		log.Write(append(b, '\n'))
	}
	files, err := scrubbedJSON(red, &struct {
		Base       string        `json:"base" redact:"keep"`
		Files      []ChangedFile `json:"files"`
		OutOfScope []string      `json:"out_of_scope"`
	}{rd.Base, rd.Files, rd.OutOfScope}, true)
	if err != nil {
		return nil, err
	}
	testsJSON, err := scrubbedJSON(red, &tests, true)
	if err != nil {
		return nil, err
	}
	manifest, err := scrubbedJSON(red, &resultManifest{Task: rec.ID, Sandbox: rec.SandboxID, Repo: sp.Repo, Ref: sp.Ref, Commit: sp.Commit,
		Prompt: sp.Prompt, Scope: sp.Scope, Test: sp.Test, Created: rec.Created, Finished: time.Now().UTC(), WorkspaceGone: gone}, true)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{"patch.diff": []byte(rd.Patch), "files.json": files, "tests.json": testsJSON, "commands.jsonl": log.Bytes(), "manifest.json": manifest}, nil
}

// scrubbedJSON is v redacted (redacted.Scrubbed) as JSON, indented or
// not.
func scrubbedJSON[T any](red sandbox.Redactor, v *T, indent bool) ([]byte, error) {
	out, err := redacted.Scrubbed(red, v)
	if err != nil {
		return nil, err
	}
	if indent {
		return json.MarshalIndent(out, "", "  ")
	}
	return json.Marshal(out)
}

// collectCaches offers the task's dependency caches to its project's
// store; a failure there leaves the finish as it is (logged: the cache
// only misses what it did not get).
func (tk *Tasks) collectCaches(ctx context.Context, rec *store.Task, sp *taskSpec) {
	lock := func(name string) ([]byte, error) {
		out, err := git(ctx, tk.baseDir(rec.ID), nil, "cat-file", "blob", sp.Commit+":"+name)
		if err != nil {
			return nil, os.ErrNotExist
		}
		return out, nil
	}
	if err := tk.cfg.Caches.Collect(ctx, rec.SandboxID, rec.ID, sp.Repo, lock); err != nil {
		tk.c.Logf("task %s: dependency caches not collected: %v", rec.ID, err)
	}
}
