package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"time"

	"github.com/airlock-dev/airlock/internal/tenant"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/store"
)

// A task is a repository checked out at an exact commit in a sandbox's
// /workspace, with a write scope and a test command. The host keeps its
// own clone at the base commit: the patch and the list of changed files
// are computed by the host from the files alone (never from git run by
// the agent, whose .git the agent could have rewritten).

// TaskRequest starts a task.
type TaskRequest struct {
	Repo       string         `json:"repo"`            // local path or URL git can clone
	Ref        string         `json:"ref,omitempty"`   // branch, tag or commit; default HEAD
	Scope      []string       `json:"scope,omitempty"` // path globs (** allowed) the task may write
	Test       string         `json:"test,omitempty"`  // shell command that runs the tests
	Prompt     string         `json:"prompt,omitempty"`
	Template   string         `json:"template,omitempty"`
	Backend    string         `json:"backend,omitempty"` // "native" or "gvisor"; "": the default
	Limits     runtime.Limits `json:"limits"`
	TTLSeconds int64          `json:"ttl_seconds,omitempty"`
	// Policy is the task's policy layer over the daemon's; Scope above is
	// its write scope.
	Policy      *policy.Layer `json:"policy,omitempty"`
	TightenOnly bool          `json:"-"`
	// Env is every command's base environment in the task's sandbox.
	Env []string `json:"env,omitempty"`
	// Commit, when set, is the full commit id Ref must resolve to: the
	// task starts at that commit or not at all.
	Commit string `json:"commit,omitempty"`
	// Bundle, instead of Repo, is the repository itself: a git bundle
	// (bundle.go), read once by Start.
	Bundle io.Reader `json:"-"`
}

// BundleInfo is what the record keeps of a task's bundle.
type BundleInfo struct {
	SHA256 string `json:"sha256" redact:"keep"`
	Bytes  int64  `json:"bytes"`
}

// taskSpec is the stored, immutable part of a task.
type taskSpec struct {
	Repo   string   `json:"repo"`
	Ref    string   `json:"ref"`
	Commit string   `json:"commit"`
	Scope  []string `json:"scope,omitempty"`
	Test   string   `json:"test,omitempty"`
	Prompt string   `json:"prompt,omitempty"`
	// Bundle: the task was started from an uploaded bundle.
	Bundle *BundleInfo `json:"bundle,omitempty"`
}

// TestRun is one run of the task's test command.
type TestRun struct {
	ExecID   string             `json:"exec_id" redact:"keep"`
	Passed   bool               `json:"passed"`
	Status   runtime.ExitStatus `json:"status"`
	Started  time.Time          `json:"started"`
	Finished time.Time          `json:"finished"`
}

// taskResult is the stored, changing part of a task.
type taskResult struct {
	Tests     []TestRun `json:"tests,omitempty"`
	OutputDir string    `json:"output_dir,omitempty"`
	Kept      bool      `json:"kept,omitempty"`
	// WorkspaceGone: the task was finished after its sandbox stopped.
	WorkspaceGone *WorkspaceGone `json:"workspace_gone,omitempty"`
}

// Task is a task as the API shows it.
type Task struct {
	ID        string     `json:"id" redact:"keep"`
	SandboxID string     `json:"sandbox_id" redact:"keep"`
	State     string     `json:"state" redact:"keep"` // "open" | "finished"
	Repo      string     `json:"repo"`
	Ref       string     `json:"ref"`
	Commit    string     `json:"commit" redact:"keep"`
	Scope     []string   `json:"scope,omitempty"`
	Test      string     `json:"test,omitempty"`
	Prompt    string     `json:"prompt,omitempty"`
	Tests     []TestRun  `json:"tests,omitempty"`
	OutputDir string     `json:"output_dir,omitempty" redact:"keep"`
	Created   time.Time  `json:"created"`
	Finished  *time.Time `json:"finished,omitempty"`
	// WorkspaceGone is set on a task finished after its sandbox had
	// stopped (expired, destroyed, lost): no tests ran at its finish.
	WorkspaceGone *WorkspaceGone `json:"workspace_gone,omitempty"`
	// Bundle is set on a task started from a bundle.
	Bundle *BundleInfo `json:"bundle,omitempty"`
}

// ChangedFile is one file the task changed against its base commit.
type ChangedFile struct {
	Path    string `json:"path"`
	Status  string `json:"status" redact:"keep"` // "added", "modified", "deleted", "type-changed"
	InScope bool   `json:"in_scope"`
}

// Diff is the task's change against its base commit.
type Diff struct {
	Base       string        `json:"base" redact:"keep"`
	Patch      string        `json:"patch"`
	Files      []ChangedFile `json:"files"`
	OutOfScope []string      `json:"out_of_scope"`
	// Ignored is what the diff left out (ignore.go); nil: nothing.
	Ignored *Ignored `json:"ignored,omitempty"`
	// Dependencies are the packages the changed lockfiles pin
	// differently (deps.go); UnreadableLockfiles did not parse.
	Dependencies        []DependencyChange `json:"dependencies,omitempty"`
	UnreadableLockfiles []string           `json:"unreadable_lockfiles,omitempty"`
}

func taskView(t *store.Task) (*Task, error) {
	var sp taskSpec
	if err := json.Unmarshal(t.Spec, &sp); err != nil {
		return nil, fmt.Errorf("task %s: bad record: %w", t.ID, err)
	}
	var res taskResult
	if len(t.Result) > 0 {
		_ = json.Unmarshal(t.Result, &res)
	}
	return &Task{ID: t.ID, SandboxID: t.SandboxID, State: t.State, Repo: sp.Repo, Ref: sp.Ref, Commit: sp.Commit,
		Scope: sp.Scope, Test: sp.Test, Prompt: sp.Prompt, Tests: res.Tests, OutputDir: res.OutputDir,
		Created: t.Created, Finished: t.Finished, WorkspaceGone: res.WorkspaceGone, Bundle: sp.Bundle}, nil
}

// Get returns a task.
func (tk *Tasks) Get(ctx context.Context, id string) (*Task, error) {
	rec, err := tk.c.Store().GetTask(ctx, id)
	if err != nil {
		return nil, err
	}
	return tk.shownTask(rec)
}

// List returns the tasks the caller sees (its project's; the
// operator's: every one), newest first.
func (tk *Tasks) List(ctx context.Context) ([]*Task, error) {
	recs, err := tk.c.Store().ListProjectTasks(ctx, tenant.Scope(ctx))
	if err != nil {
		return nil, err
	}
	out := make([]*Task, 0, len(recs))
	for _, r := range recs {
		t, err := tk.shownTask(r)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func (tk *Tasks) openTask(ctx context.Context, id string) (*store.Task, *taskSpec, error) {
	rec, err := tk.c.Store().GetTask(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	if rec.State != "open" {
		return nil, nil, fmt.Errorf("task %s is %s: %w", id, rec.State, errdefs.ErrConflict)
	}
	var sp taskSpec
	if err := json.Unmarshal(rec.Spec, &sp); err != nil {
		return nil, nil, err
	}
	return rec, &sp, nil
}

// Test runs the task's test command in /workspace and records the run.
// It is the one command the policy does not decide (ExecTaskTest): the
// test command was set by whoever started the task.
func (tk *Tasks) Test(ctx context.Context, id string, timeout time.Duration, started func(string, int), stdout, stderr io.Writer) (*TestRun, error) {
	rec, sp, err := tk.openTask(ctx, id)
	if err != nil {
		return nil, err
	}
	if sp.Test == "" {
		return nil, fmt.Errorf("task %s has no test command: %w", id, errdefs.ErrInvalid)
	}
	run := &TestRun{Started: time.Now().UTC()}
	execID, st, err := tk.c.ExecTaskTest(ctx, rec.SandboxID, id, sandbox.ExecRequest{Argv: []string{"/bin/sh", "-c", sp.Test}, Cwd: "/workspace", Timeout: timeout}, started, stdout, stderr)
	if err != nil {
		return nil, err
	}
	run.ExecID, run.Status, run.Passed, run.Finished = execID, *st, st.Code == 0 && st.Limit == runtime.LimitNone, time.Now().UTC()
	var res taskResult
	if len(rec.Result) > 0 {
		_ = json.Unmarshal(rec.Result, &res)
	}
	res.Tests = append(res.Tests, *run)
	rec.Result, _ = json.Marshal(res)
	if err := tk.c.Store().UpdateTask(ctx, rec); err != nil {
		return nil, err
	}
	_ = tk.c.Record(ctx, audit.Entry{SandboxID: rec.SandboxID, TaskID: id, ExecID: execID, Kind: "task.test", Payload: map[string]any{"passed": run.Passed, "status": run.Status}})
	return run, nil
}

func inScope(scope []*regexp.Regexp, path string) bool {
	if len(scope) == 0 {
		return true
	}
	for _, re := range scope {
		if re.MatchString(path) {
			return true
		}
	}
	return false
}
