package manager

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/tarball"
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
}

// taskSpec is the stored, immutable part of a task.
type taskSpec struct {
	Repo   string   `json:"repo"`
	Ref    string   `json:"ref"`
	Commit string   `json:"commit"`
	Scope  []string `json:"scope,omitempty"`
	Test   string   `json:"test,omitempty"`
	Prompt string   `json:"prompt,omitempty"`
}

// TestRun is one run of the task's test command.
type TestRun struct {
	ExecID   string             `json:"exec_id"`
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
	ID        string     `json:"id"`
	SandboxID string     `json:"sandbox_id"`
	State     string     `json:"state"` // "open" | "finished"
	Repo      string     `json:"repo"`
	Ref       string     `json:"ref"`
	Commit    string     `json:"commit"`
	Scope     []string   `json:"scope,omitempty"`
	Test      string     `json:"test,omitempty"`
	Prompt    string     `json:"prompt,omitempty"`
	Tests     []TestRun  `json:"tests,omitempty"`
	OutputDir string     `json:"output_dir,omitempty"`
	Created   time.Time  `json:"created"`
	Finished  *time.Time `json:"finished,omitempty"`
	// WorkspaceGone is set on a task finished after its sandbox had
	// stopped (expired, destroyed, lost): no tests ran at its finish.
	WorkspaceGone *WorkspaceGone `json:"workspace_gone,omitempty"`
}

// ChangedFile is one file the task changed against its base commit.
type ChangedFile struct {
	Path    string `json:"path"`
	Status  string `json:"status"` // "added", "modified", "deleted", "type-changed"
	InScope bool   `json:"in_scope"`
}

// Diff is the task's change against its base commit.
type Diff struct {
	Base       string        `json:"base"`
	Patch      string        `json:"patch"`
	Files      []ChangedFile `json:"files"`
	OutOfScope []string      `json:"out_of_scope"`
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
		Created: t.Created, Finished: t.Finished, WorkspaceGone: res.WorkspaceGone}, nil
}

func (m *Manager) taskDir(id string) string { return filepath.Join(m.cfg.TaskDir, id) }
func (m *Manager) baseDir(id string) string { return filepath.Join(m.taskDir(id), "base") }

// MaxPatch bounds a task's patch (and any git output the daemon reads):
// the workspace is the agent's, and the daemon must not hold unbounded
// agent-made data in memory.
const MaxPatch = 64 << 20

// limitedBuffer fails writes past its limit. (Not an embedded
// bytes.Buffer: io.Copy would use its ReadFrom and skip the limit.)
type limitedBuffer struct {
	buf   bytes.Buffer
	limit int
}

func (b *limitedBuffer) Len() int       { return b.buf.Len() }
func (b *limitedBuffer) Bytes() []byte  { return b.buf.Bytes() }
func (b *limitedBuffer) String() string { return b.buf.String() }

var errTooLarge = fmt.Errorf("output larger than %d MiB: %w", MaxPatch>>20, errdefs.ErrLimitExceeded)

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.limit {
		return 0, errTooLarge
	}
	return b.buf.Write(p)
}

// git runs host git with a configuration that ignores the user's and the
// system's, and never runs anything a repository asks for.
func git(ctx context.Context, dir string, env []string, args ...string) ([]byte, error) {
	full := append([]string{"-c", "protocol.ext.allow=never", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Dir = dir
	cmd.Env = append([]string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0", "HOME=/nonexistent", "PATH=/usr/bin:/bin"}, env...)
	out, errb := &limitedBuffer{limit: MaxPatch}, &limitedBuffer{limit: 1 << 20}
	cmd.Stdout, cmd.Stderr = out, errb
	if err := cmd.Run(); err != nil {
		if out.Len() >= MaxPatch-(64<<10) {
			return nil, fmt.Errorf("git %s: %w", args[0], errTooLarge)
		}
		return nil, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.Bytes(), nil
}

func newTaskID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "t-" + hex.EncodeToString(b[:])
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

// StartTask clones the repository on the host at the exact commit, makes a
// sandbox and puts the checkout (with its .git) in /workspace.
func (m *Manager) StartTask(ctx context.Context, req TaskRequest) (*Task, error) {
	if m.cfg.TaskDir == "" {
		return nil, fmt.Errorf("tasks are not configured: %w", errdefs.ErrUnsupported)
	}
	// Refused before anything is cloned: the sandbox's lifetime and limits.
	if _, err := CheckTask(req, m.cfg.MaxLifetime); err != nil {
		return nil, err
	}
	if strings.TrimSpace(req.Repo) == "" || strings.HasPrefix(req.Repo, "-") || strings.IndexByte(req.Repo, 0) >= 0 {
		return nil, fmt.Errorf("repo must be a path or URL: %w", errdefs.ErrInvalid)
	}
	if req.Ref == "" {
		req.Ref = "HEAD"
	}
	if strings.HasPrefix(req.Ref, "-") || strings.ContainsAny(req.Ref, " \x00") {
		return nil, fmt.Errorf("ref %q: %w", req.Ref, errdefs.ErrInvalid)
	}
	for _, g := range req.Scope {
		if _, err := policy.CompileGlob(g); err != nil {
			return nil, fmt.Errorf("scope %q: %w", g, errdefs.ErrInvalid)
		}
	}
	layer := policy.Layer{}
	if req.Policy != nil {
		layer = *req.Policy
	}
	if len(req.Scope) > 0 {
		layer.Scope = req.Scope
	}
	scope := layer.Scope
	id := newTaskID()
	var cloneOpts []string
	src, local := req.Repo, false
	if req.TightenOnly {
		plan, d, err := remoteClone(ctx, net.DefaultResolver, m.fetchPolicy(), m.fetchPresets(), req.Repo)
		// Recorded before any byte goes out; unrecorded, it does not.
		if rerr := m.record(ctx, audit.Entry{TaskID: id, Kind: "fetch.request", Payload: d.payload(req.Repo, "tcp")}); rerr != nil {
			return nil, rerr
		}
		if err != nil {
			return nil, err
		}
		src, cloneOpts = plan.url, plan.opts
	} else {
		if st, err := os.Stat(req.Repo); err == nil {
			if !st.IsDir() {
				return nil, fmt.Errorf("repo %s is not a directory: %w", req.Repo, errdefs.ErrInvalid)
			}
			abs, _ := filepath.Abs(req.Repo)
			req.Repo, src, local = abs, abs, true
		} else if !strings.Contains(req.Repo, "://") && !strings.Contains(req.Repo, ":") {
			return nil, fmt.Errorf("repo %s: no such directory: %w", req.Repo, errdefs.ErrNotFound)
		}
		d := fetchDecision{allow: true, rule: "unix-socket", reason: "the socket's operator may clone any path or URL"}
		if err := m.record(ctx, audit.Entry{TaskID: id, Kind: "fetch.request", Payload: d.payload(req.Repo, "unix")}); err != nil {
			return nil, err
		}
	}
	base := m.baseDir(id)
	if err := os.MkdirAll(m.taskDir(id), 0o700); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			_ = os.RemoveAll(m.taskDir(id))
		}
	}()
	if _, err := git(ctx, m.taskDir(id), nil, append(cloneOpts, "clone", "--quiet", "--no-checkout", "--", src, base)...); err != nil {
		if local { // the host's own repository: git's message is the operator's
			return nil, fmt.Errorf("clone %s: %v: %w", req.Repo, err, errdefs.ErrInvalid)
		}
		// git's error quotes its command line: the URL with its user part
		// (a token alone there is no shape the redactor knows).
		msg := strings.NewReplacer(src, redactURL(src), req.Repo, redactURL(req.Repo)).Replace(err.Error())
		m.cfg.Logf("task %s: clone of %s failed: %.2000q", id, redactURL(req.Repo), m.cfg.Redactor.String(msg))
		cerr := cloneError(err)
		_ = m.record(ctx, audit.Entry{TaskID: id, Kind: "fetch.response", Payload: map[string]any{"url": redactURL(req.Repo), "error": cerr.Error()}})
		return nil, cerr
	}
	var commit string
	for _, cand := range []string{req.Ref, "origin/" + req.Ref} {
		if out, err := git(ctx, base, nil, "rev-parse", "--verify", "--quiet", "--end-of-options", cand+"^{commit}"); err == nil {
			commit = strings.TrimSpace(string(out))
			break
		}
	}
	if commit == "" {
		return nil, fmt.Errorf("ref %q not found in %s: %w", req.Ref, req.Repo, errdefs.ErrInvalid)
	}
	if _, err := git(ctx, base, nil, "checkout", "--quiet", "--detach", commit); err != nil {
		return nil, err
	}
	// The checkout goes into the sandbox with its .git: the remote's URL
	// there must not carry the credentials of the one it was cloned with
	// (https://TOKEN@host/...), which the agent would read.
	if !local {
		if _, err := git(ctx, base, nil, "config", "remote.origin.url", redactURL(req.Repo)); err != nil {
			return nil, err
		}
	}
	// The diff is computed in this clone over the agent's tree: none of the
	// tree's .gitattributes may change how content reads (binary, filters,
	// eol, ident, encodings). info/attributes takes precedence over them.
	if err := os.WriteFile(filepath.Join(base, ".git", "info", "attributes"), []byte("* -text -eol -crlf -filter -ident -working-tree-encoding !diff\n"), 0o600); err != nil {
		return nil, err
	}
	sb, err := m.Create(ctx, CreateRequest{Template: req.Template, Backend: req.Backend, Limits: req.Limits, TTLSeconds: req.TTLSeconds, Labels: map[string]string{"task": id},
		Policy: &layer, TightenOnly: req.TightenOnly, taskID: id})
	if err != nil {
		return nil, err
	}
	f, err := m.Files(ctx, sb.ID)
	if err == nil {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(tarball.WriteDir(pw, base)) }()
		err = f.Untar(ctx, "/workspace", pr)
		pr.Close()
	}
	if err != nil {
		_ = m.Destroy(context.Background(), sb.ID)
		return nil, fmt.Errorf("check out into the sandbox: %w", err)
	}
	if len(scope) > 0 {
		// The backstop under classification: once checked out, nothing in
		// the sandbox may write outside the scope, whatever slipped past.
		live, lerr := m.runtimeSandbox(ctx, sb.ID)
		if lerr == nil {
			lerr = restrictWrites(ctx, live, scope)
		}
		if lerr != nil {
			_ = m.Destroy(context.Background(), sb.ID)
			return nil, fmt.Errorf("write scope: %w", lerr)
		}
		m.mu.Lock()
		if ls := m.live[sb.ID]; ls != nil {
			ls.scope = scope
		}
		m.mu.Unlock()
	}
	spec, _ := json.Marshal(taskSpec{Repo: redactURL(req.Repo), Ref: req.Ref, Commit: commit, Scope: req.Scope, Test: req.Test, Prompt: req.Prompt})
	rec := &store.Task{ID: id, SandboxID: sb.ID, State: "open", Spec: spec, Created: time.Now().UTC()}
	if err := m.cfg.Store.PutTask(ctx, rec); err != nil {
		_ = m.Destroy(context.Background(), sb.ID)
		return nil, err
	}
	_ = m.record(ctx, audit.Entry{SandboxID: sb.ID, TaskID: id, Kind: "task.start", Payload: map[string]any{"repo": redactURL(req.Repo), "ref": req.Ref, "commit": commit,
		"scope": req.Scope, "test": req.Test, "prompt": req.Prompt, "template": sb.Template, "template_version": sb.TemplateVersion, "policy": sb.Policy}})
	ok = true
	return m.shownTask(rec)
}

// GetTask returns a task.
func (m *Manager) GetTask(ctx context.Context, id string) (*Task, error) {
	rec, err := m.cfg.Store.GetTask(ctx, id)
	if err != nil {
		return nil, err
	}
	return m.shownTask(rec)
}

// ListTasks returns every task, newest first.
func (m *Manager) ListTasks(ctx context.Context) ([]*Task, error) {
	recs, err := m.cfg.Store.ListTasks(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*Task, 0, len(recs))
	for _, r := range recs {
		t, err := m.shownTask(r)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func (m *Manager) openTask(ctx context.Context, id string) (*store.Task, *taskSpec, error) {
	rec, err := m.cfg.Store.GetTask(ctx, id)
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

// TestTask runs the task's test command in /workspace and records the run.
func (m *Manager) TestTask(ctx context.Context, id string, timeout time.Duration, started func(string, int), stdout, stderr io.Writer) (*TestRun, error) {
	rec, sp, err := m.openTask(ctx, id)
	if err != nil {
		return nil, err
	}
	if sp.Test == "" {
		return nil, fmt.Errorf("task %s has no test command: %w", id, errdefs.ErrInvalid)
	}
	run := &TestRun{Started: time.Now().UTC()}
	execID, st, err := m.Exec(ctx, rec.SandboxID, ExecRequest{Argv: []string{"/bin/sh", "-c", sp.Test}, Cwd: "/workspace", Timeout: timeout, taskTest: true}, started, stdout, stderr)
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
	if err := m.cfg.Store.UpdateTask(ctx, rec); err != nil {
		return nil, err
	}
	_ = m.record(ctx, audit.Entry{SandboxID: rec.SandboxID, TaskID: id, ExecID: execID, Kind: "task.test", Payload: map[string]any{"passed": run.Passed, "status": run.Status}})
	return run, nil
}

// DiffTask computes, on the host, the task's change against its base
// commit from the files in /workspace (its .git left aside), redacted.
func (m *Manager) DiffTask(ctx context.Context, id string) (*Diff, error) {
	rec, sp, err := m.openTask(ctx, id)
	if err != nil {
		return nil, err
	}
	d, gone, err := m.taskDiff(ctx, rec, sp)
	if err != nil {
		return nil, err
	}
	if gone != nil && !gone.DiffKept {
		return nil, fmt.Errorf("task %s: %s; finish it to close it: %w", id, gone.Note, errdefs.ErrConflict)
	}
	return d.redacted(m.cfg.Redactor), nil
}

// taskDiff is an open task's diff: from its sandbox, or, once that has
// stopped, the one kept as it stopped (gone says so; an empty diff when
// none was kept).
func (m *Manager) taskDiff(ctx context.Context, rec *store.Task, sp *taskSpec) (*Diff, *WorkspaceGone, error) {
	gone, d, err := m.workspaceGone(ctx, rec)
	if err != nil {
		return nil, nil, err
	}
	if gone == nil {
		d, err = m.diff(ctx, rec, sp)
		return d, nil, err
	}
	if d == nil {
		d = &Diff{Base: sp.Commit, Files: []ChangedFile{}, OutOfScope: []string{}}
	}
	return d, gone, nil
}

// redacted is d as it may be shown or stored: the patch and every path
// redacted (a file may be named after a secret).
func (d *Diff) redacted(red Redactor) *Diff {
	out := &Diff{Base: d.Base, Patch: red.String(d.Patch)}
	for _, f := range d.Files {
		f.Path = red.String(f.Path)
		out.Files = append(out.Files, f)
	}
	for _, p := range d.OutOfScope {
		out.OutOfScope = append(out.OutOfScope, red.String(p))
	}
	return out
}

func (m *Manager) diff(ctx context.Context, rec *store.Task, sp *taskSpec) (*Diff, error) {
	f, err := m.Files(ctx, rec.SandboxID)
	if err != nil {
		return nil, err
	}
	return m.diffFiles(ctx, f, rec, sp)
}

// diffFiles computes the task's diff from the sandbox files f.
func (m *Manager) diffFiles(ctx context.Context, f runtime.Files, rec *store.Task, sp *taskSpec) (*Diff, error) {
	sbv, err := m.Get(ctx, rec.SandboxID)
	if err != nil {
		return nil, err
	}
	// A diff must not hang on a stalled agent.
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	work, err := os.MkdirTemp(m.taskDir(rec.ID), "work-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	tree := filepath.Join(work, "tree")
	if err := os.Mkdir(tree, 0o700); err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	go func() {
		_, err := f.Tar(ctx, "/workspace", pw)
		pw.CloseWithError(err)
	}()
	// The tar cannot honestly be bigger than the sandbox's disk: sparse
	// files read as zeros would otherwise make the host write and hash
	// without bound.
	cr := &capReader{r: pr, left: sbv.Limits.DiskBytes + 64<<20}
	_, err = tarball.Extract(cr, tree, tarball.ExtractOptions{UID: os.Getuid(), GID: os.Getgid(), Skip: func(name string) bool {
		// every .git, at any depth: a nested .git file could point root's
		// git at any repository on the host
		for _, el := range strings.Split(name, "/") {
			if strings.EqualFold(el, ".git") {
				return true
			}
		}
		return false
	}})
	pr.Close()
	if cr.over {
		return nil, fmt.Errorf("the workspace reads as more than the sandbox's disk (sparse files?): %w", errdefs.ErrLimitExceeded)
	}
	if err != nil {
		return nil, fmt.Errorf("read the workspace: %w", err)
	}
	base := m.baseDir(rec.ID)
	objs := filepath.Join(work, "objects")
	if err := os.Mkdir(objs, 0o700); err != nil {
		return nil, err
	}
	// New objects go to this diff's own directory (removed with it); the
	// base clone is only read. Ignore rules are not the agent's to set.
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(work, "index"), "GIT_DIR=" + filepath.Join(base, ".git"), "GIT_WORK_TREE=" + tree,
		"GIT_OBJECT_DIRECTORY=" + objs, "GIT_ALTERNATE_OBJECT_DIRECTORIES=" + filepath.Join(base, ".git", "objects")}
	if _, err := git(ctx, tree, env, "-c", "core.excludesFile=/dev/null", "add", "--all", "--force", "."); err != nil {
		return nil, err
	}
	patch, err := git(ctx, tree, env, "diff", "--cached", "--binary", "--no-ext-diff", "--no-textconv", "--no-color", sp.Commit)
	if err != nil {
		return nil, err
	}
	names, err := git(ctx, tree, env, "diff", "--cached", "--name-status", "--no-renames", "-z", sp.Commit)
	if err != nil {
		return nil, err
	}
	var scope []*regexp.Regexp
	for _, g := range sp.Scope {
		re, _ := policy.CompileGlob(g)
		scope = append(scope, re)
	}
	d := &Diff{Base: sp.Commit, Patch: string(patch), Files: []ChangedFile{}, OutOfScope: []string{}}
	fields := strings.Split(strings.TrimSuffix(string(names), "\x00"), "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		status := map[string]string{"A": "added", "M": "modified", "D": "deleted", "T": "type-changed"}[fields[i]]
		if status == "" {
			status = fields[i]
		}
		cf := ChangedFile{Path: fields[i+1], Status: status, InScope: inScope(scope, fields[i+1])}
		d.Files = append(d.Files, cf)
		if !cf.InScope {
			d.OutOfScope = append(d.OutOfScope, cf.Path)
		}
	}
	return d, nil
}

// capReader fails once more than left bytes were read.
type capReader struct {
	r    io.Reader
	left int64
	over bool
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		c.over = true
		return 0, errTooLarge
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// FinishResult says what finishing a task produced.
type FinishResult struct {
	Task      *Task    `json:"task"`
	OutputDir string   `json:"output_dir"`
	Files     []string `json:"files"`
	Test      *TestRun `json:"test,omitempty"`
	Diff      *Diff    `json:"diff"`
}

func errFinishing(taskID string) error {
	return fmt.Errorf("task %s is being finished: nothing new runs or writes in its sandbox until it is done: %w", taskID, errdefs.ErrConflict)
}

// sweep ends every process in the task's sandbox but its agent (when the
// backend can), and records how many there were.
func (m *Manager) sweep(ctx context.Context, sandboxID, taskID, when string) error {
	sb, err := m.runtimeSandbox(ctx, sandboxID)
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
	return m.record(ctx, audit.Entry{SandboxID: sandboxID, TaskID: taskID, Kind: "task.sweep", Payload: map[string]any{"ended": n, "when": when}})
}

// FinishTask runs the tests (if the task has a test command), writes the
// patch, the changed files, the test runs and the exec log to the task's
// output directory, and destroys the sandbox unless keep. A task whose
// sandbox has stopped is finished without tests, with the diff kept as it
// stopped (or none); its result says workspace_gone.
func (m *Manager) FinishTask(ctx context.Context, id string, keep bool) (*FinishResult, error) {
	rec, _, err := m.openTask(ctx, id)
	if err != nil {
		return nil, err
	}
	// A task is not finished into a bundle whose record has a gap: with a
	// broken audit log it stays open (its sandbox kept) until the log
	// works again.
	if err := m.auditHealthy(); err != nil {
		return nil, fmt.Errorf("task %s cannot be finished: %w", id, err)
	}
	// From here until the diff and bundle are taken, nothing but the
	// task's own tests runs or writes in its sandbox: a command sent
	// meanwhile could change the files after the tests.
	// One finish of a task at a time, also of one whose sandbox is gone
	// (no live sandbox to mark): a second would write the same result
	// files and bundle and record a second task.finish.
	m.mu.Lock()
	ls := m.live[rec.SandboxID]
	if m.finishingTasks[id] || (ls != nil && ls.state == Finishing) {
		m.mu.Unlock()
		return nil, fmt.Errorf("task %s is already being finished: %w", id, errdefs.ErrConflict)
	}
	if ls != nil {
		if err := ls.transition(Finishing); err != nil {
			m.mu.Unlock()
			return nil, fmt.Errorf("task %s cannot be finished: %w", id, err)
		}
	}
	if m.finishingTasks == nil {
		m.finishingTasks = map[string]bool{}
	}
	m.finishingTasks[id] = true
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.finishingTasks, id)
		if ls != nil && ls.state == Finishing {
			_ = ls.transition(Running)
		}
		m.mu.Unlock()
	}()
	// The task may have been finished by another call between openTask
	// and here: read its state again under the mark.
	rec, sp, err := m.openTask(ctx, id)
	if err != nil {
		return nil, err
	}
	// A task whose sandbox stopped (expired, destroyed, lost) is finished
	// without tests, with what was kept of its workspace, and says so.
	gone, kept, err := m.workspaceGone(ctx, rec)
	if err != nil {
		return nil, err
	}
	// Nothing of the agent's may keep running past this point: a process
	// left behind (a daemon, a setsid'd orphan) could change the files
	// after the tests ran and before, or after, the diff was taken. Swept
	// again after the tests, which may leave processes too.
	var run *TestRun
	d := kept
	if gone == nil {
		if err := m.sweep(ctx, rec.SandboxID, id, "before the tests"); err != nil {
			return nil, err
		}
	}
	if gone == nil && sp.Test != "" {
		if run, err = m.TestTask(ctx, id, 30*time.Minute, nil, nil, nil); err != nil {
			return nil, fmt.Errorf("run the tests: %w", err)
		}
		if rec, err = m.cfg.Store.GetTask(ctx, id); err != nil {
			return nil, err
		}
		if err := m.sweep(ctx, rec.SandboxID, id, "after the tests"); err != nil {
			return nil, err
		}
	}
	if gone == nil {
		if d, err = m.diff(ctx, rec, sp); err != nil {
			return nil, fmt.Errorf("diff: %w", err)
		}
	} else if d == nil {
		d = &Diff{Base: sp.Commit, Files: []ChangedFile{}, OutOfScope: []string{}}
	}
	out := filepath.Join(m.taskDir(id), "result")
	if err := os.MkdirAll(out, 0o700); err != nil {
		return nil, err
	}
	execs, err := m.Execs(ctx, rec.SandboxID)
	if err != nil {
		return nil, err
	}
	var res taskResult
	if len(rec.Result) > 0 {
		_ = json.Unmarshal(rec.Result, &res)
	}
	// What is written here is shown to people: redacted, as the bundle is.
	red := m.cfg.Redactor
	rd := d.redacted(red)
	var log bytes.Buffer
	for _, e := range execs {
		b, _ := json.Marshal(e)
		log.Write(append(red.JSON(b), '\n'))
	}
	filesJSON, _ := json.MarshalIndent(map[string]any{"base": rd.Base, "files": rd.Files, "out_of_scope": rd.OutOfScope}, "", "  ")
	testsJSON, _ := json.MarshalIndent(res.Tests, "", "  ")
	mf := map[string]any{"task": id, "sandbox": rec.SandboxID, "repo": red.String(sp.Repo), "ref": sp.Ref, "commit": sp.Commit,
		"prompt": red.String(sp.Prompt), "scope": sp.Scope, "test": red.String(sp.Test), "created": rec.Created, "finished": time.Now().UTC()}
	if gone != nil {
		mf["workspace_gone"] = gone
	}
	manifest, _ := json.MarshalIndent(mf, "", "  ")
	written := map[string][]byte{"patch.diff": []byte(rd.Patch), "files.json": red.JSON(filesJSON), "tests.json": red.JSON(testsJSON), "commands.jsonl": log.Bytes(), "manifest.json": red.JSON(manifest)}
	var names []string
	for name, data := range written {
		if err := os.WriteFile(filepath.Join(out, name), data, 0o600); err != nil {
			return nil, err
		}
		names = append(names, filepath.Join(out, name))
	}
	if m.cfg.Audit != nil {
		// The bundle is made while the sandbox still exists (its added
		// files are the artifacts); it outlives the sandbox.
		bp := filepath.Join(out, BundleName)
		f, err := os.OpenFile(bp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return nil, err
		}
		err = m.writeBundle(ctx, rec, sp, d, f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("review bundle: %w", err)
		}
		names = append(names, bp)
	}
	// The task's secret grants end with it (a kept sandbox outlives
	// them): first, so that a failure leaves the task open to finish again.
	if err := m.taskEnded(ctx, SandboxRef{ID: rec.SandboxID, TaskID: id}); err != nil {
		return nil, fmt.Errorf("end the task's secret grants: %w", err)
	}
	now := time.Now().UTC()
	res.OutputDir, res.Kept, res.WorkspaceGone = out, keep, gone
	rec.Result, _ = json.Marshal(res)
	rec.State, rec.Finished = "finished", &now
	if err := m.cfg.Store.UpdateTask(ctx, rec); err != nil {
		return nil, err
	}
	finish := map[string]any{"files": len(d.Files), "out_of_scope": d.OutOfScope, "kept": keep}
	if gone != nil {
		finish["workspace_gone"] = gone.Reason
		finish["diff_kept"] = gone.DiffKept
	}
	_ = m.record(ctx, audit.Entry{SandboxID: rec.SandboxID, TaskID: id, Kind: "task.finish", Payload: finish})
	if !keep {
		if err := m.Destroy(ctx, rec.SandboxID); err != nil {
			return nil, err
		}
	}
	t, err := m.shownTask(rec)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	return &FinishResult{Task: t, OutputDir: out, Files: names, Test: run, Diff: rd}, nil
}
