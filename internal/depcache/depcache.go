// Package depcache is the per-project dependency caches, a module of the
// sandbox core (hook.Module) that the tasks module calls at a task's
// start and finish (tasks.Caches).
//
// A store per project (the task's repository, see Project) and
// ecosystem holds only content-addressed downloads: Go's module zips and
// go.mod files (cache/download), npm's tarballs (_cacache/content-v2),
// pip's wheels and sdists (the bodies of its HTTP cache, see pip.go).
// Build caches are never kept. A task's sandbox gets a copy of its
// project's store in its home, as the package managers lay their caches
// out (its own writable copy: the store itself is never mounted, so
// nothing in the sandbox can reach it). Only the daemon adds to a store,
// as a task is finished: files of the task's caches whose hashes the
// base commit's lockfile holds (go.sum, package-lock.json, the --hash
// options of requirements.txt; never the
// task's own, which the agent wrote), hashed by the daemon, and only
// for an ecosystem whose registry the task's egress record shows it
// reached through the proxy. Every seed, addition and clear is recorded.
package depcache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/hook"
)

// Bounds on what one finish reads of a task's caches (the sandbox's
// files are the agent's).
const (
	maxFile    = 512 << 20
	maxCollect = 4 << 30
)

// defaultHome is the default sandbox user's home; a sandbox of another
// user (the E2B door's /home/user) has its caches in its own (homeOf).
const defaultHome = "/home/sandbox"

// An ecosystem is one package manager's content-addressed cache: where
// it lives in the sandbox user's home (sandboxDir, relative), the lockfiles that pin it (the first found
// at the base commit is read), and the preset naming its registries.
// seed, when set, writes the tar the sandbox's cache is seeded with from
// the store (else the store's tree is that cache's).
type ecosystem struct {
	name, sandboxDir, preset string
	lockfiles                []string
	judge                    func(lock []byte) (judge, error)
	seed                     func(w io.Writer, storeDir string) error
}

var ecosystems = []ecosystem{
	{name: "go", sandboxDir: "go/pkg/mod/cache/download", preset: "go", lockfiles: []string{"go.sum"},
		judge: func(b []byte) (judge, error) { return newGoJudge(b) }},
	{name: "npm", sandboxDir: ".npm/_cacache", preset: "npm", lockfiles: []string{"package-lock.json", "npm-shrinkwrap.json"},
		judge: func(b []byte) (judge, error) { return newNPMJudge(b) }},
	{name: "pip", sandboxDir: pipCache, preset: "pypi", lockfiles: []string{"requirements.txt"},
		judge: func(b []byte) (judge, error) { return newPipJudge(b) }, seed: writePipSeed},
}

// Config configures the module.
type Config struct {
	// Dir holds the stores ("": the daemon keeps no dependency caches;
	// every call is unsupported).
	Dir string
	// Presets are the registry hosts by preset name (the egress
	// service's, read from the package managers' configuration).
	Presets map[string][]string
}

// Caches is the module.
type Caches struct {
	cfg Config
	c   hook.Core
	// mu: seeds and collects read and add under RLock (additions are
	// whole files renamed into place); a clear takes it alone.
	mu sync.RWMutex
}

// New makes the module; attach it through manager.Config.Modules (a hook.Module).
func New(cfg Config) *Caches { return &Caches{cfg: cfg} }

// Name is the module's name.
func (d *Caches) Name() string { return "depcache" }

// Attach takes the core's handle and removes half-written files a
// killed daemon left.
func (d *Caches) Attach(c hook.Core) error {
	if d.c != nil {
		return fmt.Errorf("depcache: attached twice: %w", errdefs.ErrInvalid)
	}
	d.c = c
	if d.cfg.Dir != "" {
		_ = os.RemoveAll(filepath.Join(d.cfg.Dir, ".tmp"))
	}
	return nil
}

func (d *Caches) enabled() error {
	if d == nil || d.cfg.Dir == "" {
		return fmt.Errorf("this daemon keeps no dependency caches (airlock serve --dep-cache): %w", errdefs.ErrUnsupported)
	}
	return nil
}

// Project is the identity of a task's repository, the key of its
// stores: a URL with its scheme and host in lower case, without its user
// part, query, fragment, trailing slash and ".git" (git@host:path is
// ssh://host/path); a local path cleaned and absolute (the same project
// cloned at two paths is two projects).
func Project(repo string) string {
	if i := strings.Index(repo, ":"); i > 0 && !strings.Contains(repo, "://") && !strings.HasPrefix(repo, "/") {
		host := repo[:i]
		if j := strings.LastIndex(host, "@"); j >= 0 {
			host = host[j+1:]
		}
		repo = "ssh://" + host + "/" + strings.TrimPrefix(repo[i+1:], "/")
	}
	if u, err := url.Parse(repo); err == nil && u.Scheme != "" && u.Host != "" {
		p := strings.TrimSuffix(strings.TrimRight(u.EscapedPath(), "/"), ".git")
		return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host) + strings.TrimRight(p, "/")
	}
	if abs, err := filepath.Abs(repo); err == nil {
		return abs
	}
	return filepath.Clean(repo)
}

// storeDir is project's store of eco: DIR/SHA256(project)[:32]/eco.
func (d *Caches) storeDir(project, eco string) string {
	return filepath.Join(d.projectDir(project), eco)
}

func (d *Caches) projectDir(project string) string {
	h := sha256.Sum256([]byte(project))
	return filepath.Join(d.cfg.Dir, hex.EncodeToString(h[:16]))
}

// Entry is one project's store of one ecosystem.
type Entry struct {
	Project   string `json:"project"`
	Ecosystem string `json:"ecosystem"`
	Files     int    `json:"files"`
	Bytes     int64  `json:"bytes"`
}

// List is every store, by project then ecosystem.
func (d *Caches) List(ctx context.Context) ([]Entry, error) {
	if err := d.enabled(); err != nil {
		return nil, err
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	dirs, err := os.ReadDir(d.cfg.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return []Entry{}, nil
	} else if err != nil {
		return nil, err
	}
	out := []Entry{}
	for _, pd := range dirs {
		name, err := os.ReadFile(filepath.Join(d.cfg.Dir, pd.Name(), "project"))
		if !pd.IsDir() || err != nil {
			continue
		}
		for _, eco := range ecosystems {
			e := Entry{Project: string(name), Ecosystem: eco.name}
			_ = filepath.WalkDir(filepath.Join(d.cfg.Dir, pd.Name(), eco.name), func(_ string, de os.DirEntry, err error) error {
				if err == nil && de.Type().IsRegular() {
					if fi, err := de.Info(); err == nil {
						e.Files++
						e.Bytes += fi.Size()
					}
				}
				return nil
			})
			if e.Files > 0 {
				out = append(out, e)
			}
		}
	}
	sort.Slice(out, func(a, b int) bool {
		return out[a].Project < out[b].Project || out[a].Project == out[b].Project && out[a].Ecosystem < out[b].Ecosystem
	})
	return out, nil
}

// Clear removes the stores of project ("": every project) and ecosystem
// ("": every one), recorded (cache.clear) before anything goes; it
// returns what it removed.
func (d *Caches) Clear(ctx context.Context, project, eco string) ([]Entry, error) {
	if err := d.enabled(); err != nil {
		return nil, err
	}
	if project != "" {
		project = Project(project) // as tasks name it: a URL without credentials, a clean path
	}
	if eco != "" && !knownEcosystem(eco) {
		return nil, fmt.Errorf("ecosystem %q: not one of go, npm, pip: %w", eco, errdefs.ErrInvalid)
	}
	all, err := d.List(ctx)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	gone := []Entry{}
	for _, e := range all {
		if (project == "" || e.Project == project) && (eco == "" || e.Ecosystem == eco) {
			gone = append(gone, e)
		}
	}
	if err := d.c.Record(ctx, audit.Entry{Kind: "cache.clear", Payload: map[string]any{"project": project, "ecosystem": eco, "cleared": gone}}); err != nil {
		return nil, err
	}
	for _, e := range gone {
		if err := os.RemoveAll(d.storeDir(e.Project, e.Ecosystem)); err != nil {
			return nil, err
		}
	}
	return gone, nil
}

// dirIn is where eco's cache is in a sandbox whose user's home is home.
func (eco ecosystem) dirIn(home string) string { return home + "/" + eco.sandboxDir }

// homeOf is sandbox id's user's home, where its caches are.
func (d *Caches) homeOf(id string) string {
	if li, ok := d.c.Live(id); ok && li.User.Home != "" {
		return li.User.Home
	}
	return defaultHome
}

func knownEcosystem(name string) bool {
	for _, e := range ecosystems {
		if e.name == name {
			return true
		}
	}
	return false
}
