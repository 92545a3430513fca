// Package template manages immutable root-filesystem templates for airlock
// sandboxes. A template version is a directory tree addressed by the sha256
// of its canonical content: it is built once under a temporary name, renamed
// into place atomically and never modified again, so it can serve as the
// read-only lower layer of every sandbox's overlay root. The built-in "host"
// template is a generated minimal /etc plus a read-only bind of host /usr.
package template

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

var (
	// ErrNotFound is returned (wrapped) by Get for an unknown template name.
	ErrNotFound = errors.New("not found")
	// ErrInvalid is returned (wrapped) for invalid names and unusable stores.
	ErrInvalid = errors.New("invalid")
)

// Bind is a read-only bind mount of a host path into the sandbox root.
type Bind struct {
	Source string `json:"source"` // absolute host path
	Target string `json:"target"` // absolute path inside the sandbox
}

// Template is one immutable version of a named template.
type Template struct {
	Name    string    // e.g. "host"
	Version string    // first 12 hex digits of Hash
	Hash    string    // "sha256:<hex>" over the canonical content
	Dir     string    // absolute path of the immutable rootfs: the overlay lower layer
	Binds   []Bind    // read-only binds to apply on top of Dir, e.g. {"/usr", "/usr"}
	Created time.Time // when this version was built
	// Env is what commands in its sandboxes start with ("K=V"): a PATH
	// that finds the toolchains it holds (issue 19: go was not on the
	// sandbox's PATH). Read from the host at every Get: /usr is bound.
	// An image's is its config's Env (with a PATH).
	Env []string
	// Lowers are more read-only layers below Dir, top first: an image's
	// layers (Dir is then the thin airlock layer on top of them).
	Lowers []string
	// Kind is "builtin", or for an imported template its Image.Kind.
	Kind string
	// WorkDir is the image's working directory ("": none).
	WorkDir string
}

func (t *Template) clone() *Template {
	c := *t
	c.Binds = slices.Clone(t.Binds)
	c.Env = slices.Clone(t.Env)
	c.Lowers = slices.Clone(t.Lowers)
	return &c
}

// On-disk layout:
//
//	Root/<name>/<hex>/rootfs         the immutable lower dir
//	Root/<name>/<hex>/template.json  the manifest
//	Root/<name>/current              {"hash", "fingerprint", "binds", "created"}
//	Root/.build-<name>-*             in-progress builds, renamed to Root/<name>/<hex>
const (
	rootfsDir     = "rootfs"
	manifestFile  = "template.json"
	currentFile   = "current"
	buildPrefix   = ".build-"
	formatVersion = 1
	staleBuildAge = time.Hour
)

// Store keeps templates under Root (e.g. /var/lib/airlock/templates).
// The zero value is not usable; use Open. A Store is safe for concurrent
// use, and several processes may share one Root.
type Store struct {
	Root string

	// host is the root of the host filesystem the built-in templates are
	// derived from: "/" normally, a fake tree in tests.
	host string

	mu    sync.Mutex
	cache map[string]cached

	buildMu sync.Mutex // serialises slow-path refreshes within this process

	scans  atomic.Int64 // host content scans (full hash computations)
	builds atomic.Int64 // version directories this Store renamed into place
}

type cached struct {
	fp string
	t  *Template
}

// current is the content of Root/<name>/current, the only mutable file of a
// template. It names the current version and the host fingerprint that was
// last verified to produce it, and repeats the few manifest fields a
// Template needs, so that the hot path reads one small file.
type current struct {
	Hash        string    `json:"hash"`
	Fingerprint string    `json:"fingerprint"`
	Binds       []Bind    `json:"binds"`
	Created     time.Time `json:"created"`
}

// manifest is the content of Root/<name>/<hex>/template.json.
type manifest struct {
	Format         int       `json:"format"`
	Name           string    `json:"name"`
	Version        string    `json:"version"`
	Hash           string    `json:"hash"`
	Binds          []Bind    `json:"binds"`
	Created        time.Time `json:"created"`
	Fingerprint    string    `json:"fingerprint"`     // host fingerprint at build time
	UsrFingerprint string    `json:"usr_fingerprint"` // identity of the bound host /usr
	Summary        summary   `json:"summary"`
}

type summary struct {
	Dirs     int        `json:"dirs"`
	Files    int        `json:"files"`
	Symlinks int        `json:"symlinks"`
	Bytes    int64      `json:"bytes"`
	FileList []fileInfo `json:"file_list"` // regular files only
}

type fileInfo struct {
	Path   string `json:"path"`
	Size   int    `json:"size"`
	SHA256 string `json:"sha256"`
	Source string `json:"source,omitempty"` // host path copied from; empty if generated
}

// ValidName reports whether name is a safe template name:
// [a-z0-9][a-z0-9._-]{0,63}. The error wraps ErrInvalid.
func ValidName(name string) error {
	ok := len(name) >= 1 && len(name) <= 64
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			ok = false
		}
	}
	if !ok {
		return fmt.Errorf("template name %q: %w: must match [a-z0-9][a-z0-9._-]{0,63}", name, ErrInvalid)
	}
	return nil
}

// Open returns a Store rooted at root, creating the directory (0711) if
// missing. Sandbox roots are unprivileged host uids that must traverse the
// store to reach a template (the overlay lower layer), so the root and its
// parent are made traversable (0711: searchable, not listable).
func Open(root string) (*Store, error) {
	if root == "" {
		return nil, fmt.Errorf("template store: empty root: %w", ErrInvalid)
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("template store: %w", err)
	}
	if err := os.MkdirAll(abs, 0o711); err != nil {
		return nil, fmt.Errorf("template store: %w", err)
	}
	for _, d := range []string{abs, filepath.Dir(abs)} {
		if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o011 != 0o011 {
			if err := os.Chmod(d, fi.Mode().Perm()|0o011); err != nil {
				return nil, fmt.Errorf("template store: make %s traversable: %w", d, err)
			}
		}
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("template store: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("template store: %s is not a directory: %w", abs, ErrInvalid)
	}
	s := &Store{Root: abs, host: "/"}
	// what an import killed midway left (no process holds it) goes at
	// the next start
	s.removePartialLayers()
	return s, nil
}

func (s *Store) hostRoot() string {
	if s.host == "" {
		return "/"
	}
	return s.host
}

func (s *Store) knownNames() []string {
	names := make([]string, 0, len(builtins))
	for n := range builtins {
		names = append(names, n)
	}
	if imgs, err := s.Images(); err == nil {
		for _, img := range imgs {
			names = append(names, img.Name)
		}
	}
	slices.Sort(names)
	return names
}

// Get returns the current version of the named template, building the
// built-in "host" template on first use or when its content changes (the
// host's allowlisted /etc sources or its /usr fingerprint changed). When
// nothing changed, Get only stats the host sources and compares a
// fingerprint; it never re-hashes file content. Unknown names yield an error
// wrapping ErrNotFound that lists the known names.
func (s *Store) Get(name string) (*Template, error) {
	t, err := s.get(name)
	if err != nil {
		return nil, err
	}
	if env := builtins[name].env; env != nil {
		t.Env = env(s.hostRoot())
	}
	return t, nil
}

func (s *Store) get(name string) (*Template, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	if s == nil || s.Root == "" {
		return nil, fmt.Errorf("template store not opened: %w", ErrInvalid)
	}
	b, ok := builtins[name]
	if !ok {
		img, err := s.Image(name)
		if errors.Is(err, ErrNotFound) {
			return nil, fmt.Errorf("template %q: %w (known templates: %s)", name, ErrNotFound, strings.Join(s.knownNames(), ", "))
		}
		if err != nil {
			return nil, err
		}
		return s.imageTemplate(img)
	}
	host := s.hostRoot()
	fp, err := b.fingerprint(host)
	if err != nil {
		return nil, fmt.Errorf("template %q: fingerprint host: %w", name, err)
	}
	if t := s.lookup(name, fp); t != nil {
		return t, nil
	}
	// Another process (or an earlier run) may already have verified this
	// fingerprint.
	if t, err := s.loadCurrent(name, fp); err == nil {
		s.remember(name, fp, t)
		return t.clone(), nil
	}

	s.buildMu.Lock()
	defer s.buildMu.Unlock()
	if t := s.lookup(name, fp); t != nil {
		return t, nil
	}
	t, err := s.refresh(name, b, host, fp)
	if err != nil {
		return nil, fmt.Errorf("template %q: %w", name, err)
	}
	s.remember(name, fp, t)
	return t.clone(), nil
}

// List returns the current version of every template stored under Root,
// sorted by name. It does not build anything.
func (s *Store) List() ([]*Template, error) {
	if s == nil || s.Root == "" {
		return nil, fmt.Errorf("template store not opened: %w", ErrInvalid)
	}
	ents, err := os.ReadDir(s.Root)
	if err != nil {
		return nil, fmt.Errorf("list templates: %w", err)
	}
	var out []*Template
	for _, e := range ents {
		name := e.Name()
		if !e.IsDir() || ValidName(name) != nil {
			continue
		}
		cur, err := s.readCurrent(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list templates: %s: %w", name, err)
		}
		t, err := s.readVersion(name, cur.Hash)
		if err != nil {
			return nil, fmt.Errorf("list templates: %s: %w", name, err)
		}
		out = append(out, t)
	}
	return out, nil
}

func (s *Store) lookup(name, fp string) *Template {
	s.mu.Lock()
	c, ok := s.cache[name]
	s.mu.Unlock()
	if !ok || c.fp != fp {
		return nil
	}
	// Guard against the version having been removed behind our back.
	if fi, err := os.Stat(c.t.Dir); err != nil || !fi.IsDir() {
		return nil
	}
	return c.t.clone()
}

func (s *Store) remember(name, fp string, t *Template) {
	s.mu.Lock()
	if s.cache == nil {
		s.cache = make(map[string]cached)
	}
	s.cache[name] = cached{fp: fp, t: t.clone()}
	s.mu.Unlock()
}

func (s *Store) readCurrent(name string) (current, error) {
	var cur current
	data, err := os.ReadFile(filepath.Join(s.Root, name, currentFile))
	if err != nil {
		return cur, err
	}
	if err := json.Unmarshal(data, &cur); err != nil {
		return cur, fmt.Errorf("parse %s: %w", currentFile, err)
	}
	if _, err := hashHex(cur.Hash); err != nil {
		return cur, err
	}
	return cur, nil
}

// loadCurrent returns the version named by Root/<name>/current if it was
// verified against host fingerprint fp.
func (s *Store) loadCurrent(name, fp string) (*Template, error) {
	cur, err := s.readCurrent(name)
	if err != nil {
		return nil, err
	}
	if cur.Fingerprint != fp {
		return nil, errors.New("host fingerprint changed")
	}
	hx, _ := hashHex(cur.Hash)
	dir := filepath.Join(s.Root, name, hx, rootfsDir)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("version %s missing", hx[:12])
	}
	return &Template{
		Name:    name,
		Version: hx[:12],
		Hash:    cur.Hash,
		Dir:     dir,
		Binds:   cur.Binds,
		Created: cur.Created,
	}, nil
}

// hashHex validates a "sha256:<hex>" string and returns the hex part.
func hashHex(hash string) (string, error) {
	h, ok := strings.CutPrefix(hash, "sha256:")
	if !ok || len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
		return "", fmt.Errorf("bad template hash %q: %w", hash, ErrInvalid)
	}
	return h, nil
}

// readVersion loads and validates an existing version directory.
func (s *Store) readVersion(name, hash string) (*Template, error) {
	hx, err := hashHex(hash)
	if err != nil {
		return nil, err
	}
	vdir := filepath.Join(s.Root, name, hx)
	data, err := os.ReadFile(filepath.Join(vdir, manifestFile))
	if err != nil {
		return nil, err
	}
	var m manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("parse %s: %w", filepath.Join(vdir, manifestFile), err)
	}
	if m.Format != formatVersion || m.Name != name || m.Hash != hash || m.Version != hx[:12] {
		return nil, fmt.Errorf("manifest %s does not match its location: %w", filepath.Join(vdir, manifestFile), ErrInvalid)
	}
	dir := filepath.Join(vdir, rootfsDir)
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory: %w", dir, ErrInvalid)
	}
	return &Template{
		Name:    m.Name,
		Version: m.Version,
		Hash:    m.Hash,
		Dir:     dir,
		Binds:   m.Binds,
		Created: m.Created,
	}, nil
}

// refresh scans the host, and makes sure the resulting version exists on
// disk and is recorded as current together with fingerprint fp.
func (s *Store) refresh(name string, b builtin, host, fp string) (*Template, error) {
	s.scans.Add(1)
	c, err := b.scan(host)
	if err != nil {
		return nil, err
	}
	hash := c.hash(name)
	hx, _ := hashHex(hash)
	t, err := s.readVersion(name, hash)
	if err != nil && errors.Is(err, fs.ErrNotExist) {
		// Another builder may have put it in place just now.
		t, err = s.readVersion(name, hash)
	}
	if err != nil {
		t = nil
		if _, err := os.Lstat(filepath.Join(s.Root, name, hx)); err == nil {
			// The version directory exists but is unusable (tampered with,
			// or a crash lost part of it).
			if t, err = s.discardBroken(name, hash); err != nil {
				return nil, err
			}
		}
		if t == nil {
			if t, err = s.materialize(name, hash, c, fp); err != nil {
				return nil, err
			}
		}
	}
	cur := current{Hash: hash, Fingerprint: fp, Binds: t.Binds, Created: t.Created}
	if err := s.writeCurrent(name, cur); err != nil {
		return nil, err
	}
	return t, nil
}

// discardBroken moves an unusable version directory out of the way so it
// can be rebuilt. Versions only ever go from absent to complete, so under
// the per-template lock it re-checks the directory and returns it instead if
// another builder has meanwhile replaced it with a valid one. A broken
// version was never handed out by Get, so no sandbox uses it.
func (s *Store) discardBroken(name, hash string) (*Template, error) {
	hx, _ := hashHex(hash)
	lock, err := os.OpenFile(filepath.Join(s.Root, name, ".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	defer lock.Close() // releases the flock
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return nil, fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	if t, err := s.readVersion(name, hash); err == nil {
		return t, nil
	}
	vdir := filepath.Join(s.Root, name, hx)
	if _, err := os.Lstat(vdir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	trash, err := os.MkdirTemp(s.Root, buildPrefix+"broken-")
	if err != nil {
		return nil, err
	}
	if err := os.Rename(vdir, filepath.Join(trash, hx)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		os.Remove(trash)
		return nil, fmt.Errorf("discard broken version %s: %w", vdir, err)
	}
	return nil, os.RemoveAll(trash)
}

// materialize writes content c into a fresh temporary directory under Root
// and renames it to Root/<name>/<hex>. If another builder won the race, its
// (identical) version is used and ours is discarded.
func (s *Store) materialize(name, hash string, c *content, fp string) (t *Template, err error) {
	hx, _ := hashHex(hash)
	if err := os.MkdirAll(filepath.Join(s.Root, name), 0o755); err != nil {
		return nil, err
	}
	s.removeStaleBuilds()
	tmp, err := os.MkdirTemp(s.Root, buildPrefix+name+"-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if tmp != "" {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, err
	}
	sum, err := writeTree(filepath.Join(tmp, rootfsDir), c.entries)
	if err != nil {
		return nil, fmt.Errorf("write rootfs: %w", err)
	}
	m := manifest{
		Format:         formatVersion,
		Name:           name,
		Version:        hx[:12],
		Hash:           hash,
		Binds:          slices.Clone(c.binds),
		Created:        time.Now().UTC().Round(0),
		Fingerprint:    fp,
		UsrFingerprint: c.usrFP,
		Summary:        sum,
	}
	data, err := json.MarshalIndent(&m, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := writeFileSync(filepath.Join(tmp, manifestFile), append(data, '\n'), 0o644); err != nil {
		return nil, err
	}
	if err := syncDir(tmp); err != nil {
		return nil, err
	}

	target := filepath.Join(s.Root, name, hx)
	switch err := os.Rename(tmp, target); {
	case err == nil:
		tmp = ""
		s.builds.Add(1)
		if err := syncDir(filepath.Dir(target)); err != nil {
			return nil, err
		}
		return &Template{
			Name:    name,
			Version: m.Version,
			Hash:    hash,
			Dir:     filepath.Join(target, rootfsDir),
			Binds:   m.Binds,
			Created: m.Created,
		}, nil
	case errors.Is(err, syscall.EEXIST), errors.Is(err, syscall.ENOTEMPTY):
		// A concurrent builder renamed the same content into place first.
		return s.readVersion(name, hash)
	default:
		return nil, err
	}
}

// removeStaleBuilds deletes temporary build directories abandoned by
// crashed builders. Young ones may belong to a live builder and are kept.
func (s *Store) removeStaleBuilds() {
	ents, err := os.ReadDir(s.Root)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), buildPrefix) {
			continue
		}
		fi, err := e.Info()
		if err != nil || time.Since(fi.ModTime()) < staleBuildAge {
			continue
		}
		os.RemoveAll(filepath.Join(s.Root, e.Name()))
	}
}

func (s *Store) writeCurrent(name string, cur current) error {
	data, err := json.Marshal(&cur)
	if err != nil {
		return err
	}
	dir := filepath.Join(s.Root, name)
	f, err := os.CreateTemp(dir, ".current-")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(append(data, '\n'))
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, currentFile))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", currentFile, err)
	}
	return nil
}

func writeFileSync(path string, data []byte, mode fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
