package tasks

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/tarball"
)

// Diff computes, on the host, the task's change against its base
// commit from the files in /workspace (its .git left aside), redacted.
func (tk *Tasks) Diff(ctx context.Context, id string) (*Diff, error) {
	rec, sp, err := tk.openTask(ctx, id)
	if err != nil {
		return nil, err
	}
	d, gone, err := tk.taskDiff(ctx, rec, sp)
	if err != nil {
		return nil, err
	}
	if gone != nil && !gone.DiffKept {
		return nil, fmt.Errorf("task %s: %s; finish it to close it: %w", id, gone.Note, errdefs.ErrConflict)
	}
	return d.redacted(tk.c.Redactor()), nil
}

// taskDiff is an open task's diff: from its sandbox, or, once that has
// stopped, the one kept as it stopped (gone says so; an empty diff when
// none was kept).
func (tk *Tasks) taskDiff(ctx context.Context, rec *store.Task, sp *taskSpec) (*Diff, *WorkspaceGone, error) {
	gone, d, err := tk.workspaceGone(ctx, rec)
	if err != nil {
		return nil, nil, err
	}
	if gone == nil {
		d, err = tk.diff(ctx, rec, sp)
		return d, nil, err
	}
	if d == nil {
		d = &Diff{Base: sp.Commit, Files: []ChangedFile{}, OutOfScope: []string{}}
	}
	return d, gone, nil
}

func redactAll(red sandbox.Redactor, l []string) []string {
	var out []string
	for _, s := range l {
		out = append(out, red.String(s))
	}
	return out
}

// redacted is d as it may be shown or stored: the patch and every path
// redacted (a file may be named after a secret).
func (d *Diff) redacted(red sandbox.Redactor) *Diff {
	out := &Diff{Base: d.Base, Patch: red.String(d.Patch)}
	for _, f := range d.Files {
		f.Path = red.String(f.Path)
		out.Files = append(out.Files, f)
	}
	for _, p := range d.OutOfScope {
		out.OutOfScope = append(out.OutOfScope, red.String(p))
	}
	for _, c := range d.Dependencies {
		c.Lockfile, c.Name = red.String(c.Lockfile), red.String(c.Name)
		c.From, c.To = redactAll(red, c.From), redactAll(red, c.To)
		out.Dependencies = append(out.Dependencies, c)
	}
	out.UnreadableLockfiles = redactAll(red, d.UnreadableLockfiles)
	if d.Ignored != nil {
		ig := *d.Ignored
		ig.Roots = nil
		for _, r := range d.Ignored.Roots {
			ig.Roots = append(ig.Roots, red.String(r))
		}
		out.Ignored = &ig
	}
	return out
}

func (tk *Tasks) diff(ctx context.Context, rec *store.Task, sp *taskSpec) (*Diff, error) {
	f, err := tk.c.Files(ctx, rec.SandboxID)
	if err != nil {
		return nil, err
	}
	return tk.diffFiles(ctx, f, rec, sp)
}

// diffFiles computes the task's diff from the sandbox files f.
func (tk *Tasks) diffFiles(ctx context.Context, f runtime.Files, rec *store.Task, sp *taskSpec) (*Diff, error) {
	sbv, err := tk.c.Sandbox(ctx, rec.SandboxID)
	if err != nil {
		return nil, err
	}
	// A diff must not hang on a stalled agent.
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	work, err := os.MkdirTemp(tk.dir(rec.ID), "work-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	tree := filepath.Join(work, "tree")
	if err := os.Mkdir(tree, 0o700); err != nil {
		return nil, err
	}
	base := tk.baseDir(rec.ID)
	objs := filepath.Join(work, "objects")
	if err := os.Mkdir(objs, 0o700); err != nil {
		return nil, err
	}
	// New objects go to this diff's own directory (removed with it); the
	// base clone is only read. Ignore rules are not the agent's to set.
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(work, "index"), "GIT_DIR=" + filepath.Join(base, ".git"), "GIT_WORK_TREE=" + tree,
		"GIT_OBJECT_DIRECTORY=" + objs, "GIT_ALTERNATE_OBJECT_DIRECTORIES=" + filepath.Join(base, ".git", "objects")}
	bt, err := readBaseTree(ctx, env, tree, sp.Commit)
	if err != nil {
		return nil, err
	}
	ig := &Ignored{}
	if err := extractWorkspace(ctx, f, tree, sbv.Limits.DiskBytes, bt.skipWellKnown(ig)); err != nil {
		return nil, err
	}
	if err := bt.dropGitignored(ctx, env, work, tree, sp.Commit, ig); err != nil {
		return nil, err
	}
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
	d := &Diff{Base: sp.Commit, Patch: string(patch)}
	d.Files, d.OutOfScope = changedFiles(names, sp.Scope)
	if ig.Files > 0 {
		d.Ignored = ig
	}
	d.Dependencies, d.UnreadableLockfiles = dependencyChanges(ctx, env, tree, sp.Commit, d.Files)
	return d, nil
}

// changedFiles reads git's -z name-status output: each file, in scope
// or not.
func changedFiles(names []byte, globs []string) (files []ChangedFile, outOfScope []string) {
	var scope []*regexp.Regexp
	for _, g := range globs {
		re, _ := policy.CompileGlob(g)
		scope = append(scope, re)
	}
	files, outOfScope = []ChangedFile{}, []string{}
	fields := strings.Split(strings.TrimSuffix(string(names), "\x00"), "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		status := map[string]string{"A": "added", "M": "modified", "D": "deleted", "T": "type-changed"}[fields[i]]
		if status == "" {
			status = fields[i]
		}
		cf := ChangedFile{Path: fields[i+1], Status: status, InScope: inScope(scope, fields[i+1])}
		files = append(files, cf)
		if !cf.InScope {
			outOfScope = append(outOfScope, cf.Path)
		}
	}
	return files, outOfScope
}

// extractWorkspace unpacks the sandbox's /workspace into tree, leaving
// out every .git and what skip takes.
func extractWorkspace(ctx context.Context, f runtime.Files, tree string, disk int64, skip func(string, *tar.Header) bool) error {
	pr, pw := io.Pipe()
	go func() {
		_, err := f.Tar(ctx, "/workspace", pw)
		pw.CloseWithError(err)
	}()
	// The tar cannot honestly be bigger than the sandbox's disk: sparse
	// files read as zeros would otherwise make the host write and hash
	// without bound.
	cr := &capReader{r: pr, left: disk + 64<<20}
	_, err := tarball.Extract(cr, tree, tarball.ExtractOptions{UID: os.Getuid(), GID: os.Getgid(), Skip: func(name string, h *tar.Header) bool {
		// every .git, at any depth: a nested .git file could point root's
		// git at any repository on the host
		for _, el := range strings.Split(name, "/") {
			if strings.EqualFold(el, ".git") {
				return true
			}
		}
		return skip(name, h)
	}})
	pr.Close()
	if cr.over {
		return fmt.Errorf("the workspace reads as more than the sandbox's disk (sparse files?): %w", errdefs.ErrLimitExceeded)
	}
	if err != nil {
		return fmt.Errorf("read the workspace: %w", err)
	}
	return nil
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
