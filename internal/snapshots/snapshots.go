// Package snapshots is the snapshot templates module of the sandbox core
// (hook.Module): it turns a running sandbox's files into a template new
// sandboxes start from (hook.TemplateSource), and lists them.
package snapshots

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/template"
	"github.com/airlock-dev/airlock/internal/tenant"
)

// Snapshots is the module. Dir holds the snapshot templates ("": the
// daemon has none, and making one is unsupported); Builtins are the
// templates whose names a snapshot may not take.
type Snapshots struct {
	dir      string
	builtins *template.Store
	core     hook.Core
	mu       sync.Mutex // serializes moving a snapshot template's "current"
}

// New makes the module; attach it through manager.Config.Modules.
func New(dir string, builtins *template.Store) *Snapshots {
	return &Snapshots{dir: dir, builtins: builtins}
}

// Name is the module's name.
func (s *Snapshots) Name() string { return "snapshots" }

// Attach takes the core's handle and removes what snapshots of a killed
// daemon left (no snapshot is under way before the manager is made).
func (s *Snapshots) Attach(c hook.Core) error {
	s.core = c
	if s.dir != "" {
		s.cleanSeeds()
		s.pruneDeleted()
	}
	return nil
}

// A snapshot turns a sandbox's files into a template that new sandboxes
// start from: the base template version the sandbox ran on (pinned: later
// host changes do not alter it) plus a seed of its /workspace and its
// command user's home (/home/sandbox; an E2B door sandbox's /home/user),
// restored into each new sandbox's own writable layer as
// the command user's files. Files are kept; processes, /tmp and anything
// outside those two trees are not. Each snapshot of a name is a new,
// immutable version (by content hash); the base template itself is never
// changed, so no session can poison it.

// seedDirs are the trees a snapshot of a sandbox whose command user is
// u keeps (inside the sandbox): /workspace and that user's home, so that
// an E2B door sandbox's /home/user is kept as /home/sandbox is.
func seedDirs(u runtime.User) []string {
	if u.Home == "" {
		u = runtime.DefaultUser
	}
	return []string{"/workspace", u.Home}
}

// Snapshot is a snapshot template version.
type Snapshot struct {
	Name        string         `json:"name"`
	Version     string         `json:"version"`
	Base        string         `json:"base"`         // base template name
	BaseVersion string         `json:"base_version"` // pinned
	BaseDir     string         `json:"-"`
	Binds       []runtime.Bind `json:"-"`
	FromSandbox string         `json:"from_sandbox"`
	Created     time.Time      `json:"created"`
	SeedBytes   int64          `json:"seed_bytes"`
	// Project owns it: the project of the sandbox it was taken from. A
	// snapshot made before projects ("") is tenant.Default's, as the
	// rest of such a daemon's records are.
	Project string `json:"project,omitempty"`
}

// owner is the project that owns the snapshot.
func (sn *Snapshot) owner() string {
	if sn.Project == "" {
		return tenant.Default
	}
	return sn.Project
}

type snapshotFile struct {
	Snapshot
	BaseDir string         `json:"base_dir"`
	Lowers  []string       `json:"lowers,omitempty"` // an image template's layers below BaseDir
	Binds   []runtime.Bind `json:"binds"`
	Env     []string       `json:"env,omitempty"`      // the base's (its PATH)
	WorkDir string         `json:"work_dir,omitempty"` // the base's default cwd
	// Home is the home the seed holds, that of the sandbox's command
	// user; "" (snapshots made before it was kept): /home/sandbox.
	Home string `json:"home,omitempty"`
	// Lineage is the snapshotted sandbox's template and the ones it was
	// made from, oldest first (sandbox.Base.Lineage of its sandboxes).
	Lineage []string `json:"lineage,omitempty"`
}

// lineage is what its sandboxes' policy layers before the snapshot's
// own section; a snapshot made before lineages were kept knows its base
// alone.
func (s *snapshotFile) lineage() []string {
	if len(s.Lineage) > 0 {
		return s.Lineage
	}
	return []string{s.Base}
}

// SnapshotSandbox makes a new version of the snapshot template name from
// a running sandbox. With newOnly (remote callers), name must not exist
// yet: a template that others start from is not theirs to replace.
func (s *Snapshots) Snapshot(ctx context.Context, id, name string, newOnly bool) (*Snapshot, error) {
	if s.dir == "" || s.core == nil {
		return nil, fmt.Errorf("snapshots are not configured: %w", errdefs.ErrUnsupported)
	}
	if err := template.ValidName(name); err != nil {
		return nil, fmt.Errorf("snapshot name %q: %w", name, errdefs.ErrInvalid)
	}
	if _, err := s.builtins.Get(name); err == nil {
		return nil, fmt.Errorf("%q is a built-in template: %w", name, errdefs.ErrConflict)
	}
	lv, ok := s.core.Live(id)
	f, err := s.core.Files(ctx, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("sandbox %s is not running: %w", id, errdefs.ErrConflict)
	}
	dirs := seedDirs(lv.User)
	base, rec := lv.Base, lv.View
	project := rec.Project
	if project == "" {
		project = tenant.Default
	}
	if !tenant.Of(ctx).Sees(project) { // the API's guard has said so already
		return nil, fmt.Errorf("sandbox %q: %w", id, errdefs.ErrNotFound)
	}
	dir := filepath.Join(s.dir, name)
	if err := s.nameFree(name, project, newOnly); err != nil {
		return nil, err
	}
	tmp, err := s.newSeed(dir)
	if err != nil {
		return nil, err
	}
	// A failed snapshot of a new name leaves no empty template dir.
	defer s.removeIfEmpty(dir)
	defer os.Remove(tmp.Name())
	h := sha256.New()
	// The seed cannot honestly be bigger than the sandbox's disk (plus tar
	// headers): sparse files are read, and written here, dense, so a
	// 16 MiB sandbox could make the host write gigabytes.
	limit := rec.Limits.DiskBytes + snapshotSlack
	cw := &capWriter{w: io.MultiWriter(tmp, h), left: limit}
	// one tar of both trees, entries named "workspace/...", "home/sandbox/..."
	tw := newPrefixTar(cw)
	for _, d := range dirs {
		pr, pw := io.Pipe()
		go func(d string) {
			_, err := f.Tar(ctx, d, pw)
			pw.CloseWithError(err)
		}(d)
		err := tw.add(strings.TrimPrefix(d, "/"), pr)
		pr.Close()
		if err != nil {
			tmp.Close()
			if cw.over {
				return nil, tooLargeSnapshot(id, dirs, rec.Limits.DiskBytes)
			}
			return nil, fmt.Errorf("snapshot %s: %w", d, err)
		}
	}
	if err := tw.close(); err != nil {
		tmp.Close()
		if cw.over {
			return nil, tooLargeSnapshot(id, dirs, rec.Limits.DiskBytes)
		}
		return nil, err
	}
	size, _ := tmp.Seek(0, io.SeekCurrent)
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	tplVersion := rec.TemplateVersion
	snap := snapshotFile{Snapshot: Snapshot{Name: name, Version: sum[:12], Base: rec.Template, BaseVersion: tplVersion,
		FromSandbox: id, Created: time.Now().UTC(), SeedBytes: size, Project: project}, BaseDir: base.RootFS, Lowers: base.Lowers, Binds: base.Binds, Env: base.Env, WorkDir: base.WorkDir, Home: dirs[1],
		Lineage: append(slices.Clone(base.Lineage), rec.Template)}
	vdir := filepath.Join(dir, snap.Version)
	if err := os.MkdirAll(vdir, 0o700); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(vdir, "seed.tar")); err != nil {
		return nil, err
	}
	b, _ := json.MarshalIndent(snap, "", "  ")
	if err := os.WriteFile(filepath.Join(vdir, "snapshot.json"), b, 0o600); err != nil {
		return nil, err
	}
	// "current" names the newest version
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.nameFree(name, project, newOnly); err != nil { // made meanwhile
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(vdir, "snapshot.json")); err != nil {
		// a delete of the name meanwhile pruned this version
		return nil, fmt.Errorf("snapshot template %q was deleted while this snapshot was made; try again: %w", name, errdefs.ErrConflict)
	}
	cur := filepath.Join(dir, ".current.tmp")
	if err := os.WriteFile(cur, []byte(snap.Version), 0o600); err != nil {
		return nil, err
	}
	if err := os.Rename(cur, filepath.Join(dir, "current")); err != nil {
		return nil, err
	}
	out := snap.Snapshot
	_ = s.core.Record(ctx, audit.Entry{SandboxID: id, TaskID: lv.TaskID, Kind: "sandbox.snapshot", Payload: map[string]any{"snapshot": out}})
	return &out, nil
}

// nameFree says whether a snapshot of project may be kept as name: a
// new name, or (not newOnly: the operator) a new version of project's
// own snapshot. A name in use answers the same whichever project holds
// it, so a key learns only that the name is taken, never whose it is or
// what it holds.
func (s *Snapshots) nameFree(name, project string, newOnly bool) error {
	cur, _, err := s.snapshot(name)
	switch {
	case errors.Is(err, errdefs.ErrNotFound):
		return nil
	case err != nil:
		return err
	case newOnly:
		return fmt.Errorf("snapshot template %q exists: only the operator (on the unix socket) makes new versions of it; pick a new name: %w", name, errdefs.ErrConflict)
	case cur.owner() != project:
		return fmt.Errorf("snapshot template %q belongs to project %q: a new version of it must be of a sandbox of that project, not of %q: %w", name, cur.owner(), project, errdefs.ErrConflict)
	}
	return nil
}

// snapshotSlack is what a snapshot's seed may hold beyond the sandbox's
// disk size: tar headers and padding.
const snapshotSlack = 64 << 20

// seedPrefix names a seed being written (in the template's dir); one a
// killed daemon left is removed at the next start (cleanSeeds).
const seedPrefix = ".seed-"

func tooLargeSnapshot(id string, dirs []string, disk int64) error {
	return fmt.Errorf("snapshot of sandbox %s: its files (%s) take more than its disk size (%d MiB) + %d MiB on the host, where sparse files are written dense; nothing was kept: remove or shrink large (sparse) files first: %w",
		id, strings.Join(dirs, " and "), disk>>20, snapshotSlack>>20, errdefs.ErrLimitExceeded)
}

// newSeed makes the template dir and the temp file a seed is written to.
// Under snapMu, so that removeIfEmpty never takes the dir from under it.
func (s *Snapshots) newSeed(dir string) (*os.File, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return os.CreateTemp(dir, seedPrefix)
}

// removeIfEmpty removes a template dir that holds nothing (a failed first
// snapshot of a name).
func (s *Snapshots) removeIfEmpty(dir string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = os.Remove(dir) // fails unless empty
}

// cleanSeeds removes what snapshots under way left when their daemon was
// killed: seeds being written, versions without their snapshot.json, a
// "current" being replaced, and template dirs left empty by them. Only at start: no snapshot is under way then.
func (s *Snapshots) cleanSeeds() {
	root := s.dir
	ents, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(root, e.Name())
		files, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, f := range files {
			if f.IsDir() {
				// a version whose snapshot.json was never written
				v := filepath.Join(dir, f.Name())
				if _, err := os.Stat(filepath.Join(v, "snapshot.json")); errors.Is(err, os.ErrNotExist) {
					if err := os.RemoveAll(v); err != nil {
						s.core.Logf("remove the unfinished snapshot version %s: %v", v, err)
					}
				}
				continue
			}
			if strings.HasPrefix(f.Name(), seedPrefix) || f.Name() == ".current.tmp" {
				if err := os.Remove(filepath.Join(dir, f.Name())); err != nil {
					s.core.Logf("remove the leftover snapshot seed %s: %v", filepath.Join(dir, f.Name()), err)
				} else {
					s.core.Logf("removed the leftover snapshot seed %s (its daemon was killed)", filepath.Join(dir, f.Name()))
				}
			}
		}
		_ = os.Remove(dir) // fails unless empty
	}
}

// capWriter fails once more than left bytes would be written.
type capWriter struct {
	w    io.Writer
	left int64
	over bool
}

func (c *capWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > c.left {
		c.over = true
		return 0, errdefs.ErrLimitExceeded
	}
	c.left -= int64(len(p))
	return c.w.Write(p)
}

// Template is the current version of the snapshot template name, as a
// base to create a sandbox from (hook.TemplateSource), or ErrNotFound:
// also when it is another project's than the caller's.
func (s *Snapshots) Template(ctx context.Context, name string) (*sandbox.Base, error) {
	snap, seed, err := s.snapshot(name)
	if err != nil {
		return nil, err
	}
	if !tenant.Of(ctx).Sees(snap.owner()) {
		return nil, fmt.Errorf("template %q: %w", name, errdefs.ErrNotFound)
	}
	return &sandbox.Base{Name: snap.Name, Version: snap.Version, RootFS: snap.BaseDir, Lowers: snap.Lowers, Binds: snap.Binds, Env: snap.Env, WorkDir: snap.WorkDir, Seed: seed, SeedHome: snap.home(), Lineage: snap.lineage()}, nil
}

// home is the home the snapshot's seed holds.
func (sf *snapshotFile) home() string {
	if sf.Home == "" {
		return runtime.DefaultUser.Home
	}
	return sf.Home
}

// snapshot returns the current version of a snapshot template and the
// path of its seed, or ErrNotFound.
func (s *Snapshots) snapshot(name string) (*snapshotFile, string, error) {
	if s.dir == "" {
		return nil, "", errdefs.ErrNotFound
	}
	dir := filepath.Join(s.dir, name)
	v, err := os.ReadFile(filepath.Join(dir, "current"))
	if err != nil {
		return nil, "", fmt.Errorf("template %q: %w", name, errdefs.ErrNotFound)
	}
	vdir := filepath.Join(dir, strings.TrimSpace(string(v)))
	b, err := os.ReadFile(filepath.Join(vdir, "snapshot.json"))
	if err != nil {
		return nil, "", fmt.Errorf("snapshot %q: %w", name, err)
	}
	var sf snapshotFile
	if err := json.Unmarshal(b, &sf); err != nil {
		return nil, "", fmt.Errorf("snapshot %q: %w", name, err)
	}
	return &sf, filepath.Join(vdir, "seed.tar"), nil
}

// List lists the snapshot templates (their current versions) the
// caller sees (its project's; the operator: all), by name.
func (s *Snapshots) List(ctx context.Context) ([]*Snapshot, error) {
	if s.dir == "" {
		return []*Snapshot{}, nil
	}
	ents, err := os.ReadDir(s.dir)
	if errors.Is(err, os.ErrNotExist) {
		return []*Snapshot{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := []*Snapshot{}
	for _, e := range ents {
		if sf, _, err := s.snapshot(e.Name()); err == nil && tenant.Of(ctx).Sees(sf.owner()) {
			sn := sf.Snapshot
			sn.Project = sn.owner()
			out = append(out, &sn)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// prefixTar copies tar streams into one, under name prefixes.
type prefixTar struct{ tw *tar.Writer }

func newPrefixTar(w io.Writer) *prefixTar { return &prefixTar{tw: tar.NewWriter(w)} }

func (p *prefixTar) add(prefix string, r io.Reader) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		h.Name = path.Join(prefix, h.Name)
		if h.Typeflag == tar.TypeDir {
			h.Name += "/"
		}
		if err := p.tw.WriteHeader(h); err != nil {
			return err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := io.Copy(p.tw, tr); err != nil {
				return err
			}
		}
	}
}

func (p *prefixTar) close() error { return p.tw.Close() }

// Templates lists the snapshot templates as templates
// (hook.TemplateSource).
func (s *Snapshots) Templates(ctx context.Context) ([]*sandbox.TemplateInfo, error) {
	snaps, err := s.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*sandbox.TemplateInfo, 0, len(snaps))
	for _, sn := range snaps {
		out = append(out, &sandbox.TemplateInfo{Name: sn.Name, Version: sn.Version, Kind: "snapshot", Base: sn.Base + "@" + sn.BaseVersion, Created: sn.Created, Project: sn.Project})
	}
	return out, nil
}

// RootDirs lists the template directories (base dir and lowers) that the
// snapshot versions kept under dir start from, for the template GC: a
// snapshot of a sandbox on an image template keeps that image's layers.
func RootDirs(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*", "*", "snapshot.json"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var sf snapshotFile
		if err := json.Unmarshal(b, &sf); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = append(append(out, sf.BaseDir), sf.Lowers...)
	}
	return out, nil
}
