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
	Change   string   `json:"change"` // added, removed, changed, rehashed
	// Integrity is, by version in To, the content hash the workspace's
	// lockfile holds (what the package manager checks the download
	// against); a version the lockfile hashes not is absent.
	Integrity map[string]string `json:"integrity,omitempty"`
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
		var cs []DependencyChange
		before, err := lockAt(ctx, env, tree, commit, f)
		after, err2 := lockNow(tree, f)
		if err == nil && err2 == nil {
			cs, err = lockChanges(mgr, f.Path, before, after)
		}
		if err != nil || err2 != nil {
			unreadable = append(unreadable, f.Path)
			continue
		}
		changes = append(changes, cs...)
	}
	return changes, unreadable
}

// lockChanges is one lockfile's changes, with the new versions' hashes
// and, as "rehashed", a version that stayed but whose hash did not (a
// republished package or a hand-edited lockfile).
func lockChanges(mgr, name string, before, after *[]byte) ([]DependencyChange, error) {
	pb, hb, err := readLock(name, before)
	if err != nil {
		return nil, err
	}
	pa, ha, err := readLock(name, after)
	if err != nil {
		return nil, err
	}
	var out []DependencyChange
	for _, c := range lockfile.Diff(pb, pa) {
		out = append(out, DependencyChange{Manager: mgr, Lockfile: name, Name: c.Name, From: c.From, To: c.To, Change: c.Change, Integrity: hashesOf(ha, c.Name, c.To)})
	}
	for _, k := range lockfile.Rehashed(hb, ha) {
		n, v := splitAt(k)
		out = append(out, DependencyChange{Manager: mgr, Lockfile: name, Name: n, From: []string{v}, To: []string{v}, Change: "rehashed", Integrity: hashesOf(ha, n, []string{v})})
	}
	return out, nil
}

// readLock parses a lockfile's packages and hashes (none when data is
// nil: the lockfile is not there).
func readLock(name string, data *[]byte) (lockfile.Packages, lockfile.Hashes, error) {
	if data == nil {
		return lockfile.Packages{}, lockfile.Hashes{}, nil
	}
	p, err := lockfile.Parse(name, *data)
	if err != nil {
		return nil, nil, err
	}
	h, _, err := lockfile.Integrity(name, *data)
	return p, h, err
}

func hashesOf(h lockfile.Hashes, name string, versions []string) map[string]string {
	var out map[string]string
	for _, v := range versions {
		if s := h[name+"@"+v]; s != "" {
			if out == nil {
				out = map[string]string{}
			}
			out[v] = s
		}
	}
	return out
}

// splitAt splits "name@version" at its last @ (a scoped npm name starts
// with one).
func splitAt(k string) (name, version string) {
	i := strings.LastIndex(k, "@")
	if i <= 0 {
		return k, ""
	}
	return k[:i], k[i+1:]
}

// lockAt is f as the base commit has it (nil when the task added it).
func lockAt(ctx context.Context, env []string, tree, commit string, f ChangedFile) (*[]byte, error) {
	if f.Status == "added" {
		return nil, nil
	}
	data, err := git(ctx, tree, env, "cat-file", "blob", commit+":"+f.Path)
	return &data, err
}

// lockNow is f as the workspace has it (nil when the task deleted it).
func lockNow(tree string, f ChangedFile) (*[]byte, error) {
	if f.Status == "deleted" {
		return nil, nil
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
	return &data, err
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
			From: strings.Join(c.From, ", "), To: strings.Join(c.To, ", "), Change: c.Change, Integrity: joinHashes(c)})
	}
	return deps
}

// joinHashes is c's hashes as one line: the hash alone for one version,
// "version: hash" each for several.
func joinHashes(c DependencyChange) string {
	if len(c.To) == 1 {
		return c.Integrity[c.To[0]]
	}
	var parts []string
	for _, v := range c.To {
		if h := c.Integrity[v]; h != "" {
			parts = append(parts, v+": "+h)
		}
	}
	return strings.Join(parts, "; ")
}
