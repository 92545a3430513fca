package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/tarball"
)

// Start clones the repository on the host at the exact commit, makes a
// sandbox and puts the checkout (with its .git) in /workspace.
func (tk *Tasks) Start(ctx context.Context, req TaskRequest) (*Task, error) {
	if tk.cfg.Dir == "" {
		return nil, fmt.Errorf("tasks are not configured: %w", errdefs.ErrUnsupported)
	}
	// Refused before anything is cloned: the sandbox's lifetime and limits.
	if _, err := Check(req, tk.c.MaxLifetime()); err != nil {
		return nil, err
	}
	if err := checkSource(&req); err != nil {
		return nil, err
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
	base := tk.baseDir(id)
	if err := os.MkdirAll(tk.dir(id), 0o700); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			_ = os.RemoveAll(tk.dir(id))
		}
	}()
	src, err := tk.source(ctx, id, &req)
	if err != nil {
		return nil, err
	}
	commit, err := tk.clone(ctx, id, &req, src)
	if err != nil {
		return nil, err
	}
	sb, err := tk.c.CreateForTask(ctx, sandbox.CreateRequest{Template: req.Template, Backend: req.Backend, Limits: req.Limits, TTLSeconds: req.TTLSeconds, Labels: map[string]string{"task": id},
		Policy: &layer, TightenOnly: req.TightenOnly, Env: req.Env}, id)
	if err != nil {
		return nil, err
	}
	if tk.cfg.Caches != nil && src.bundle == nil {
		if err := tk.cfg.Caches.Seed(ctx, sb.ID, id, redactURL(req.Repo)); err != nil {
			_ = tk.c.Destroy(context.Background(), sb.ID)
			return nil, fmt.Errorf("seed the dependency caches (airlock cache clear starts them over): %w", err)
		}
	}
	if err := tk.checkout(ctx, sb.ID, base, scope); err != nil {
		_ = tk.c.Destroy(context.Background(), sb.ID)
		return nil, err
	}
	spec, _ := json.Marshal(taskSpec{Repo: redactURL(req.Repo), Ref: req.Ref, Commit: commit, Scope: req.Scope, Test: req.Test, Prompt: req.Prompt, Bundle: src.bundle})
	rec := &store.Task{ID: id, SandboxID: sb.ID, State: "open", Spec: spec, Created: time.Now().UTC()}
	if err := tk.c.Store().PutTask(ctx, rec); err != nil {
		_ = tk.c.Destroy(context.Background(), sb.ID)
		return nil, err
	}
	_ = tk.c.Record(ctx, audit.Entry{SandboxID: sb.ID, TaskID: id, Kind: "task.start", Payload: map[string]any{"repo": redactURL(req.Repo), "ref": req.Ref, "commit": commit,
		"scope": req.Scope, "test": req.Test, "prompt": req.Prompt, "template": sb.Template, "template_version": sb.TemplateVersion, "policy": sb.Policy, "bundle": src.bundle}})
	ok = true
	return tk.shownTask(rec)
}

// checkSource refuses a request's repository, bundle, ref or commit pin
// before anything is read or cloned; an empty ref is HEAD.
func checkSource(req *TaskRequest) error {
	if req.Bundle != nil {
		if req.Repo != "" {
			return fmt.Errorf("give repo or a bundle, not both: %w", errdefs.ErrInvalid)
		}
	} else if strings.TrimSpace(req.Repo) == "" || strings.HasPrefix(req.Repo, "-") || strings.IndexByte(req.Repo, 0) >= 0 {
		return fmt.Errorf("repo must be a path or URL: %w", errdefs.ErrInvalid)
	}
	if req.Commit != "" && !isCommitID(req.Commit) {
		return fmt.Errorf("commit %q: want a full commit id (40 or 64 lower-case hex digits): %w", req.Commit, errdefs.ErrInvalid)
	}
	if req.Ref == "" {
		req.Ref = "HEAD"
	}
	if strings.HasPrefix(req.Ref, "-") || strings.ContainsAny(req.Ref, " \x00") {
		return fmt.Errorf("ref %q: %w", req.Ref, errdefs.ErrInvalid)
	}
	return nil
}

// source is where req.Repo is cloned from, with the options that hold
// the clone to it, recorded (fetch.request) before anything is fetched:
// a remote client's (TightenOnly) only where the fetch policy allows; the
// unix socket's operator's from any path (made absolute) or URL; a
// bundle (bundle.go) on either door, since nothing is fetched.
func (tk *Tasks) source(ctx context.Context, id string, req *TaskRequest) (*cloneSource, error) {
	if req.Bundle != nil {
		door := "unix"
		if req.TightenOnly {
			door = "tcp"
		}
		return tk.bundleSource(ctx, id, req, door)
	}
	src, opts, local, err := tk.repoSource(ctx, id, req)
	if err != nil {
		return nil, err
	}
	return &cloneSource{src: src, opts: opts, local: local}, nil
}

// repoSource is source for a path or URL.
func (tk *Tasks) repoSource(ctx context.Context, id string, req *TaskRequest) (src string, opts []string, local bool, err error) {
	src = req.Repo
	if req.TightenOnly {
		fetchPol, fetchPresets := tk.c.FetchPolicy()
		plan, d, err := remoteClone(ctx, net.DefaultResolver, fetchPol, fetchPresets, req.Repo)
		// Recorded before any byte goes out; unrecorded, it does not.
		if rerr := tk.c.Record(ctx, audit.Entry{TaskID: id, Kind: "fetch.request", Payload: d.payload(req.Repo, "tcp")}); rerr != nil {
			return "", nil, false, rerr
		}
		if err != nil {
			return "", nil, false, err
		}
		src, opts = plan.url, plan.opts
	} else {
		if st, err := os.Stat(req.Repo); err == nil {
			if !st.IsDir() {
				return "", nil, false, fmt.Errorf("repo %s is not a directory: %w", req.Repo, errdefs.ErrInvalid)
			}
			abs, _ := filepath.Abs(req.Repo)
			req.Repo, src, local = abs, abs, true
		} else if !strings.Contains(req.Repo, "://") && !strings.Contains(req.Repo, ":") {
			return "", nil, false, fmt.Errorf("repo %s: no such directory: %w", req.Repo, errdefs.ErrNotFound)
		}
		d := fetchDecision{allow: true, rule: "unix-socket", reason: "the socket's operator may clone any path or URL"}
		if err := tk.c.Record(ctx, audit.Entry{TaskID: id, Kind: "fetch.request", Payload: d.payload(req.Repo, "unix")}); err != nil {
			return "", nil, false, err
		}
	}
	return src, opts, local, nil
}

// clone clones src into the task's base directory, checked out at req.Ref's
// commit, with nothing of the clone's URL's credentials left in it and
// no attributes of the tree's applying to the diff.
func (tk *Tasks) clone(ctx context.Context, id string, req *TaskRequest, cs *cloneSource) (string, error) {
	base := tk.baseDir(id)
	src, local := cs.src, cs.local
	if _, err := git(ctx, tk.dir(id), nil, append(cs.opts, "clone", "--quiet", "--no-checkout", "--", src, base)...); err != nil {
		if cs.bundle != nil { // the client's own file: git's message is for it
			return "", fmt.Errorf("the bundle did not clone: %s: %w", tk.gitSays(id, err), errdefs.ErrInvalid)
		}
		if local { // the host's own repository: git's message is the operator's
			return "", fmt.Errorf("clone %s: %v: %w", req.Repo, err, errdefs.ErrInvalid)
		}
		// git's error quotes its command line: the URL with its user part
		// (a token alone there is no shape the redactor knows).
		msg := strings.NewReplacer(src, redactURL(src), req.Repo, redactURL(req.Repo)).Replace(err.Error())
		tk.c.Logf("task %s: clone of %s failed: %.2000q", id, redactURL(req.Repo), tk.c.Redactor().String(msg))
		cerr := cloneError(err)
		_ = tk.c.Record(ctx, audit.Entry{TaskID: id, Kind: "fetch.response", Payload: map[string]any{"url": redactURL(req.Repo), "error": cerr.Error()}})
		return "", cerr
	}
	var commit string
	for _, cand := range []string{req.Ref, "origin/" + req.Ref} {
		if out, err := git(ctx, base, nil, "rev-parse", "--verify", "--quiet", "--end-of-options", cand+"^{commit}"); err == nil {
			commit = strings.TrimSpace(string(out))
			break
		}
	}
	if commit == "" {
		return "", fmt.Errorf("ref %q not found in %s: %w", req.Ref, req.Repo, errdefs.ErrInvalid)
	}
	if req.Commit != "" && commit != req.Commit {
		return "", fmt.Errorf("ref %q is commit %s in %s, not the %s asked for: %w", req.Ref, commit, req.Repo, req.Commit, errdefs.ErrConflict)
	}
	if cs.bundle != nil {
		if err := tk.checkBundleClone(ctx, id, base, commit); err != nil {
			return "", err
		}
		// Its objects are in the clone now.
		_ = os.Remove(src)
	}
	if _, err := git(ctx, base, nil, "checkout", "--quiet", "--detach", commit); err != nil {
		return "", err
	}
	// The checkout goes into the sandbox with its .git: the remote's URL
	// there must not carry the credentials of the one it was cloned with
	// (https://TOKEN@host/...), which the agent would read.
	if !local {
		if _, err := git(ctx, base, nil, "config", "remote.origin.url", redactURL(req.Repo)); err != nil {
			return "", err
		}
	}
	// The diff is computed in this clone over the agent's tree: none of the
	// tree's .gitattributes may change how content reads (binary, filters,
	// eol, ident, encodings). info/attributes takes precedence over them.
	if err := os.WriteFile(filepath.Join(base, ".git", "info", "attributes"), []byte("* -text -eol -crlf -filter -ident -working-tree-encoding !diff\n"), 0o600); err != nil {
		return "", err
	}
	return commit, nil
}

// isCommitID: s is a full sha1 or sha256 commit id as git prints it.
func isCommitID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	return strings.Trim(s, "0123456789abcdef") == ""
}

// checkout puts the base clone (with its .git) in the sandbox's
// /workspace, emptied first, then confines its writes to scope (none:
// anywhere).
func (tk *Tasks) checkout(ctx context.Context, id, base string, scope []string) error {
	f, err := tk.c.Files(ctx, id)
	if err == nil {
		err = emptyWorkspace(ctx, f)
	}
	if err == nil {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(tarball.WriteDir(pw, base)) }()
		err = f.Untar(ctx, "/workspace", pr)
		pr.Close()
	}
	if err != nil {
		return fmt.Errorf("check out into the sandbox: %w", err)
	}
	if len(scope) > 0 {
		// The backstop under classification: once checked out, nothing in
		// the sandbox may write outside the scope, whatever slipped past.
		// (The core applies it again after every reset.)
		if err := tk.c.RestrictWrites(ctx, id, scope); err != nil {
			return fmt.Errorf("write scope: %w", err)
		}
	}
	return nil
}

// emptyWorkspace removes what a snapshot template's /workspace holds (a
// warming task's checkout and what it installed there): the task's
// checkout is the base commit's files alone, else the template's files
// would show in its diff as the task's (the caches in home stay).
func emptyWorkspace(ctx context.Context, f runtime.Files) error {
	l, err := f.List(ctx, "/workspace")
	if err != nil {
		return fmt.Errorf("empty /workspace: %w", err)
	}
	for _, fi := range l {
		if err := f.Remove(ctx, path.Join("/workspace", fi.Name), true); err != nil {
			return fmt.Errorf("empty /workspace: %w", err)
		}
	}
	return nil
}
