package tasks

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/airlock-dev/airlock/internal/bundle"
	"github.com/airlock-dev/airlock/internal/lockfile"
)

// DependencyChange is one package's change between the base commit's
// lockfile and the workspace's, as the lockfile pins it (resolved
// versions, never a manifest's ranges): issue 19 found evidence read
// from manifests inside node_modules, fields taken for packages, and
// ranges for versions.
type DependencyChange struct {
	Manager  string   `json:"manager"` // npm, yarn, pnpm, go, cargo, poetry, uv, pipenv, pip
	Lockfile string   `json:"lockfile"`
	Name     string   `json:"name"`
	From     []string `json:"from,omitempty"`
	To       []string `json:"to,omitempty"`
	Change   string   `json:"change"` // added, removed, changed
}

// maxLockfile bounds a lockfile the daemon parses (the workspace's is
// the agent's).
const maxLockfile = 32 << 20

// dependencyChanges compares each changed lockfile of the project's own
// (ignored directories are never in files) with the base commit's.
// A lockfile that does not parse is named, not guessed at.
func dependencyChanges(ctx context.Context, env []string, tree, commit string, files []ChangedFile) (changes []DependencyChange, unreadable []string) {
	for _, f := range files {
		mgr := lockfile.Manager(f.Path)
		if mgr == "" {
			continue
		}
		before, err := lockAt(ctx, env, tree, commit, f)
		if err != nil {
			unreadable = append(unreadable, f.Path)
			continue
		}
		after, err := lockNow(tree, f)
		if err != nil {
			unreadable = append(unreadable, f.Path)
			continue
		}
		for _, c := range lockfile.Diff(before, after) {
			changes = append(changes, DependencyChange{Manager: mgr, Lockfile: f.Path, Name: c.Name, From: c.From, To: c.To, Change: c.Change})
		}
	}
	return changes, unreadable
}

// lockAt is f as the base commit has it (none when the task added it).
func lockAt(ctx context.Context, env []string, tree, commit string, f ChangedFile) (lockfile.Packages, error) {
	if f.Status == "added" {
		return lockfile.Packages{}, nil
	}
	data, err := git(ctx, tree, env, "cat-file", "blob", commit+":"+f.Path)
	if err != nil {
		return nil, err
	}
	return lockfile.Parse(f.Path, data)
}

// lockNow is f as the workspace has it (none when the task deleted it).
func lockNow(tree string, f ChangedFile) (lockfile.Packages, error) {
	if f.Status == "deleted" {
		return lockfile.Packages{}, nil
	}
	p := filepath.Join(tree, f.Path)
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxLockfile {
		return nil, os.ErrInvalid
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	return lockfile.Parse(f.Path, data)
}

// bundleDeps is d's dependency evidence for the review bundle: the
// lockfiles' changes, each version list joined.
func bundleDeps(d *Diff) *bundle.Dependencies {
	deps := &bundle.Dependencies{Changes: []bundle.DependencyChange{}, Lockfiles: []string{}, Unreadable: d.UnreadableLockfiles}
	for _, f := range d.Files {
		if lockfile.Manager(f.Path) != "" {
			deps.Lockfiles = append(deps.Lockfiles, f.Path)
		}
	}
	for _, c := range d.Dependencies {
		deps.Changes = append(deps.Changes, bundle.DependencyChange{Manager: c.Manager, Name: c.Name, Lockfile: c.Lockfile,
			From: strings.Join(c.From, ", "), To: strings.Join(c.To, ", "), Change: c.Change})
	}
	return deps
}
