package wire

import "time"

// A POST /v1/tasks that carries its repository is multipart/form-data:
// the part TaskRequestPart (a TaskRequest, without repo) first, then the
// part TaskBundlePart, a git bundle (git bundle create) of at most
// MaxBundle bytes that needs no other commit and names only HEAD,
// branches and tags.
const (
	TaskRequestPart = "request"
	TaskBundlePart  = "bundle"
	MaxBundle       = 256 << 20
)

// TaskRequest is the body of POST /v1/tasks: a repository at an exact
// commit in a new sandbox's /workspace.
type TaskRequest struct {
	// Repo is a path on the daemon's host (unix socket only) or a URL git
	// can clone; "" when the request carries a bundle.
	Repo string `json:"repo,omitempty"`
	// Ref is a branch, tag or commit; "": HEAD.
	Ref string `json:"ref,omitempty"`
	// Scope are the path globs (** allowed) the task may write.
	Scope []string `json:"scope,omitempty"`
	// Test is the shell command that runs the tests.
	Test string `json:"test,omitempty"`
	// Prompt is the task's instructions, kept for the review.
	Prompt string `json:"prompt,omitempty"`
	// Template names the sandbox's template; "": "host".
	Template string `json:"template,omitempty"`
	// Backend is "native" or "gvisor"; "": the daemon's default.
	Backend string `json:"backend,omitempty"`
	// Limits of the task's sandbox; zero fields: the daemon's defaults.
	Limits Limits `json:"limits"`
	// TTLSeconds destroys the task's sandbox after this long; 0: the
	// daemon's maximum lifetime.
	TTLSeconds int64 `json:"ttl_seconds,omitempty"`
	// Policy is the task's policy layer over the daemon's (its scope is
	// merged with Scope); over TCP it may only tighten.
	Policy *PolicyLayer `json:"policy,omitempty"`
	// Env is the base environment ("K=V") of every command in the task's
	// sandbox, its test command included (as Env in
	// CreateSandboxRequest).
	Env []string `json:"env,omitempty"`
	// Commit, when set, is the full commit id Ref must resolve to (409
	// otherwise): the task starts at that commit or not at all.
	Commit string `json:"commit,omitempty"`
}

// TaskBundle is the bundle a task was started from.
type TaskBundle struct {
	// SHA256 is the hex SHA-256 of the bundle as uploaded.
	SHA256 string `json:"sha256"`
	// Bytes is its size.
	Bytes int64 `json:"bytes"`
}

// TestRun is one run of a task's test command.
type TestRun struct {
	// ExecID names its exec record.
	ExecID string `json:"exec_id"`
	// Passed: the test command exited 0.
	Passed bool `json:"passed"`
	// Status is how it ended.
	Status ExitStatus `json:"status"`
	// Started is when it started.
	Started time.Time `json:"started"`
	// Finished is when it ended.
	Finished time.Time `json:"finished"`
}

// Task is a task's record.
type Task struct {
	// ID names the task.
	ID string `json:"id"`
	// SandboxID is its sandbox.
	SandboxID string `json:"sandbox_id"`
	// State is "open" or "finished".
	State string `json:"state"`
	// Repo is the repository it was started from ("bundle:sha256:HEX"
	// for a bundle).
	Repo string `json:"repo"`
	// Ref is the ref asked for.
	Ref string `json:"ref"`
	// Commit is the commit checked out.
	Commit string `json:"commit"`
	// Scope are the path globs it may write.
	Scope []string `json:"scope,omitempty"`
	// Test is its test command.
	Test string `json:"test,omitempty"`
	// Prompt is its instructions.
	Prompt string `json:"prompt,omitempty"`
	// Tests are its test runs, oldest first.
	Tests []TestRun `json:"tests,omitempty"`
	// OutputDir is where its results are on the daemon's host, once
	// finished.
	OutputDir string `json:"output_dir,omitempty"`
	// Created is when it started.
	Created time.Time `json:"created"`
	// Finished is when it was finished.
	Finished *time.Time `json:"finished,omitempty"`
	// WorkspaceGone is set on a task finished after its sandbox had
	// stopped: no tests ran at its finish, and its patch is the one taken
	// as the sandbox stopped.
	WorkspaceGone *WorkspaceGone `json:"workspace_gone,omitempty"`
	// Bundle is set on a task started from an uploaded bundle.
	Bundle *TaskBundle `json:"bundle,omitempty"`
}

// WorkspaceGone says why a task's workspace was gone when it was
// finished.
type WorkspaceGone struct {
	// Reason is the sandbox's stop reason.
	Reason string `json:"reason"`
	// Stopped is when the sandbox stopped.
	Stopped time.Time `json:"stopped"`
	// DiffKept: the patch was taken as the sandbox stopped.
	DiffKept bool `json:"diff_kept"`
	// DiffError says why it was not, when known.
	DiffError string `json:"diff_error,omitempty"`
	// Note says what this means for the review.
	Note string `json:"note"`
}

// TaskList is the answer of GET /v1/tasks.
type TaskList struct {
	// Tasks, newest first.
	Tasks []Task `json:"tasks"`
}

// ChangedFile is a file a task changed against its base commit.
type ChangedFile struct {
	// Path is relative to /workspace.
	Path string `json:"path"`
	// Status is "added", "modified", "deleted" or "type-changed".
	Status string `json:"status"`
	// InScope: the task's scope allows the change.
	InScope bool `json:"in_scope"`
}

// Diff is a task's change against its base commit, computed by the
// daemon from the workspace's files.
type Diff struct {
	// Base is the base commit.
	Base string `json:"base"`
	// Patch is the change as a git patch.
	Patch string `json:"patch"`
	// Files are the files changed.
	Files []ChangedFile `json:"files"`
	// OutOfScope are the changed paths outside the scope.
	OutOfScope []string `json:"out_of_scope"`
	// Ignored is what the diff left out; absent: nothing.
	Ignored *Ignored `json:"ignored,omitempty"`
	// Dependencies are the packages the changed lockfiles pin
	// differently, base commit against workspace.
	Dependencies []DependencyChange `json:"dependencies,omitempty"`
	// UnreadableLockfiles are changed lockfiles that did not parse
	// (named, never guessed at).
	UnreadableLockfiles []string `json:"unreadable_lockfiles,omitempty"`
}

// DependencyChange is one package's change in one of the project's own
// lockfiles, in the versions the lockfile pins (never a manifest's
// ranges; nothing inside node_modules is read).
type DependencyChange struct {
	// Manager is npm, yarn, pnpm, go, cargo, poetry, uv, pipenv or pip.
	Manager string `json:"manager"`
	// Lockfile is the lockfile's path in the repository.
	Lockfile string `json:"lockfile"`
	// Name is the package's name.
	Name string `json:"name"`
	// From are the versions the base commit pins (several when installed
	// side by side).
	From []string `json:"from,omitempty"`
	// To are the versions the workspace pins.
	To []string `json:"to,omitempty"`
	// Change is added, removed, changed or rehashed (the same version
	// with another hash in the lockfile: other content).
	Change string `json:"change"`
	// Integrity is, by version in To, the content hash the workspace's
	// lockfile holds: npm, yarn and pnpm's integrity, yarn berry's
	// checksum, go.sum's h1: hash, Cargo.lock's checksum, poetry, uv and
	// Pipfile.lock's file hashes (several joined by a space). A version
	// the lockfile holds no hash for is absent.
	Integrity map[string]string `json:"integrity,omitempty"`
}

// Ignored is what a task's diff left out: files the repository does not
// track in the well-known dependency and cache directories
// (node_modules, __pycache__, .venv, ...), and files the base commit's
// .gitignore files ignore. A path the base commit tracks is never left
// out, and the agent's own .gitignore edits decide nothing.
type Ignored struct {
	// Files is how many files were left out.
	Files int `json:"files"`
	// Bytes is their total size.
	Bytes int64 `json:"bytes"`
	// Roots name the left-out directories (or files), at most 20.
	Roots []string `json:"roots,omitempty"`
}

// FinishResult is the answer of POST /v1/tasks/{id}/finish.
type FinishResult struct {
	// Task is the finished task.
	Task *Task `json:"task"`
	// OutputDir is where its results are on the daemon's host.
	OutputDir string `json:"output_dir"`
	// Files are the result files written there.
	Files []string `json:"files"`
	// Test is the final test run, if one ran.
	Test *TestRun `json:"test,omitempty"`
	// Diff is the final diff.
	Diff *Diff `json:"diff"`
}
