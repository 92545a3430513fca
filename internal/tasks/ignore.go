package tasks

import (
	"archive/tar"
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/internal/tarball"
)

// A task's diff leaves out what a repository does not track and would not
// commit (issue 19: a task's node_modules made a 39.5 MB patch of 7,713
// files, and each diff took up to 79 s): the well-known dependency and
// cache directories, and what the base commit's .gitignore files ignore.
// Invariants: a path the base commit tracks is never left out; the rules
// are the base commit's, never the agent's (an edited .gitignore hides
// nothing, and shows in the diff itself); what is left out is counted.

// wellKnown are directories left out wherever they are, unless the base
// commit tracks something in them.
var wellKnown = []string{"node_modules", "__pycache__", ".venv", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".tox"}

// maxIgnoredRoots bounds the paths an Ignored names.
const maxIgnoredRoots = 20

// Ignored is what a diff left out.
type Ignored struct {
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	// Roots name the left-out directories (or files), at most
	// maxIgnoredRoots, first seen first.
	Roots []string `json:"roots,omitempty"`
}

func (ig *Ignored) add(root string, size int64) {
	ig.Files++
	ig.Bytes += size
	if len(ig.Roots) < maxIgnoredRoots && !slices.Contains(ig.Roots, root) {
		ig.Roots = append(ig.Roots, root)
	}
}

// baseTree is what the base commit tracks: its paths, and every
// directory they are in.
type baseTree struct {
	files, dirs map[string]bool
	gitignores  []string
}

func readBaseTree(ctx context.Context, env []string, dir, commit string) (*baseTree, error) {
	out, err := git(ctx, dir, env, "ls-tree", "-r", "--name-only", "-z", commit)
	if err != nil {
		return nil, err
	}
	bt := &baseTree{files: map[string]bool{}, dirs: map[string]bool{}}
	for _, p := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if p == "" {
			continue
		}
		bt.files[p] = true
		if filepath.Base(p) == ".gitignore" {
			bt.gitignores = append(bt.gitignores, p)
		}
		for d := filepath.Dir(p); d != "."; d = filepath.Dir(d) {
			bt.dirs[d] = true
		}
	}
	return bt, nil
}

// skipWellKnown is the extraction's Skip for wellKnown directories: an
// entry below one the base tracks nothing in is left out and counted.
func (bt *baseTree) skipWellKnown(ig *Ignored) func(string, *tar.Header) bool {
	return func(name string, h *tar.Header) bool {
		els := strings.Split(name, "/")
		for i, el := range els {
			if !slices.Contains(wellKnown, el) {
				continue
			}
			root := strings.Join(els[:i+1], "/")
			if bt.dirs[root] {
				continue
			}
			if h.Typeflag != tar.TypeDir {
				ig.add(root, h.Size)
			}
			return true
		}
		return false
	}
}

// dropGitignored removes from tree the untracked files the base commit's
// .gitignore files ignore, as git itself reads them (check-ignore over a
// tree of only those files), and counts them.
func (bt *baseTree) dropGitignored(ctx context.Context, env []string, work, tree, commit string, ig *Ignored) error {
	if len(bt.gitignores) == 0 {
		return nil
	}
	rules := filepath.Join(work, "rules")
	if err := os.Mkdir(rules, 0o700); err != nil {
		return err
	}
	arch, err := git(ctx, work, env, append([]string{"archive", "--format=tar", commit, "--"}, bt.gitignores...)...)
	if err != nil {
		return err
	}
	if _, err := tarball.Extract(bytes.NewReader(arch), rules, tarball.ExtractOptions{UID: os.Getuid(), GID: os.Getgid()}); err != nil {
		return err
	}
	var list bytes.Buffer
	sizes := map[string]int64{}
	err = filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(tree, p)
		if bt.files[rel] {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			sizes[rel] = fi.Size()
		}
		list.WriteString(rel + "\x00")
		return nil
	})
	if err != nil || list.Len() == 0 {
		return err
	}
	renv := append(slices.Clone(env), "GIT_WORK_TREE="+rules)
	out, err := gitIn(ctx, work, renv, &list, "-c", "core.excludesFile=/dev/null", "check-ignore", "--no-index", "--stdin", "-z")
	if exitCode(err) == 1 {
		return nil // none is ignored
	}
	if err != nil {
		return err
	}
	for _, rel := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if rel == "" {
			continue
		}
		if err := os.Remove(filepath.Join(tree, rel)); err != nil {
			return err
		}
		root, _, _ := strings.Cut(rel, "/")
		ig.add(root, sizes[rel])
	}
	return nil
}
