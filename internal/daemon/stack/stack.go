// Package stack builds the daemon's sandbox core with its feature modules,
// in their order: the one wiring that `airlock serve` (internal/daemon)
// and the tests of the API and the E2B door share, so that a test runs
// the modules the daemon runs, configured as the daemon configures them.
//
// It opens nothing of its own: the backend, templates, store, audit log
// and egress configuration are the caller's (the daemon's checked ones,
// or a test's). It imports neither api nor e2b, so their own tests can
// use it.
package stack

import (
	"context"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/apikeys"
	"github.com/airlock-dev/airlock/internal/approvals"
	"github.com/airlock-dev/airlock/internal/depcache"
	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/explain"
	"github.com/airlock-dev/airlock/internal/filesapi"
	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/pool"
	"github.com/airlock-dev/airlock/internal/projects"
	"github.com/airlock-dev/airlock/internal/quotas"
	"github.com/airlock-dev/airlock/internal/records"
	"github.com/airlock-dev/airlock/internal/review"
	"github.com/airlock-dev/airlock/internal/sandboxnet"
	"github.com/airlock-dev/airlock/internal/secrets"
	"github.com/airlock-dev/airlock/internal/snapshots"
	"github.com/airlock-dev/airlock/internal/tasks"
	"github.com/airlock-dev/airlock/internal/templatebuild"
	"github.com/airlock-dev/airlock/internal/templatehold"
	"github.com/airlock-dev/airlock/internal/usage"
)

// Config is the manager's configuration, but its modules, which are the
// stack's (Modules must be empty), and what those modules are made from.
type Config struct {
	manager.Config
	// TaskDir holds the tasks' directories (the tasks module's, whose
	// result directories the review module's purge removes).
	TaskDir string
	// SnapshotDir holds the snapshot templates.
	SnapshotDir string
	// SecretsKey is the secrets' key file ("": no secret is kept, every
	// one refused).
	SecretsKey string
	// Egress is the egress service's configuration (nil: none, so
	// sandboxes get no network at all).
	Egress *egress.Config
	// MaxProxyConns caps each sandbox's open proxy connections (0:
	// runtime.DefaultMaxProxyConns).
	MaxProxyConns int
	// TrustDir holds each sandbox's system bundle with its egress CA
	// ("": sandboxes do not trust their CA by themselves).
	TrustDir string
	// ApprovalWait is how long a held command waits by default (0:
	// approvals.DefaultWait).
	ApprovalWait time.Duration
	// DepCacheDir holds the per-project dependency caches ("": none; the
	// module is not attached and Stack.Caches is nil).
	DepCacheDir string
	// Pools are the warm pools (internal/pool); a pool's Backend "" is
	// its template's backend (TemplateBackends) or the default.
	Pools []pool.Spec
	// PoolsLater leaves the pools' start to the caller (Pools.Start): the
	// daemon starts them once its socket is open, since the umask it
	// sets for that moment is the process's, and a pool's first fill
	// builds the template's directories meanwhile.
	PoolsLater bool
	// Quotas are the projects' default quotas and what a sandbox counts
	// of a limit it leaves to its backend (internal/quotas).
	Quotas quotas.Config
}

// Stack is the manager and its feature modules.
type Stack struct {
	Manager   *manager.Manager
	Tasks     *tasks.Tasks
	Network   *sandboxnet.Net
	Keys      *apikeys.Keys
	Projects  *projects.Projects
	Quotas    *quotas.Quotas
	Snapshots *snapshots.Snapshots
	Secrets   *secrets.Secrets
	Approvals *approvals.Approvals
	Review    *review.Review
	Files     *filesapi.API
	Records   *records.Records
	Explain   *explain.Explain
	Caches    *depcache.Caches // nil: no dependency caches
	// Builds runs template builds' RUN steps in the manager's sandboxes
	// (nil: the manager has no template store).
	Builds *templatebuild.Service
	Pools  *pool.Pools // the warm pools (none configured: an empty list)
	Usage  *usage.Usage
}

// New makes the modules and the manager with them attached, in the order
// their hooks run: tasks first (a stopping task's diff is taken before
// other hooks), then the network, API keys, projects, quotas, snapshots, secrets,
// approvals, review, the file API, the exec records and the policy
// explain module (no hooks: last); with a template store, the template
// holds and the build stacks (a TemplateSource of running build steps).
func New(ctx context.Context, cfg Config) (*Stack, error) {
	if len(cfg.Modules) != 0 {
		return nil, fmt.Errorf("stack: the modules are the stack's own, not the caller's: %w", errdefs.ErrInvalid)
	}
	tcfg := tasks.Config{Dir: cfg.TaskDir}
	var caches *depcache.Caches
	var presets map[string][]string
	if cfg.Egress != nil {
		presets = cfg.Egress.Presets
	}
	if cfg.DepCacheDir != "" {
		caches = depcache.New(depcache.Config{Dir: cfg.DepCacheDir, Presets: presets})
		tcfg.Caches = caches
	}
	q := quotas.New(cfg.Quotas)
	s := &Stack{
		Tasks:     tasks.New(tcfg),
		Network:   sandboxnet.New(sandboxnet.Config{Egress: cfg.Egress, MaxProxyConns: cfg.MaxProxyConns, TrustDir: cfg.TrustDir, Quota: q}),
		Keys:      apikeys.New(),
		Projects:  projects.New(),
		Quotas:    q,
		Snapshots: snapshots.New(cfg.SnapshotDir, cfg.Templates),
		Secrets:   secrets.New(cfg.SecretsKey),
		Approvals: approvals.New(approvals.Config{Wait: cfg.ApprovalWait}),
		Review:    review.New(review.Config{TaskDir: cfg.TaskDir}),
		Files:     filesapi.New(),
		Records:   records.New(),
		Explain:   explain.New(),
		Caches:    caches,
		Usage:     usage.New(),
	}
	s.Projects.EndKey = s.Keys.EndRequests
	mcfg := cfg.Config
	mcfg.Modules = []hook.Module{s.Tasks, s.Network, s.Keys, s.Projects, s.Quotas, s.Snapshots, s.Secrets, s.Approvals, s.Review, s.Files, s.Records, s.Explain, s.Usage}
	var stacks *templatebuild.Stacks
	if cfg.Templates != nil {
		// an image template's layers stay out of GC while a sandbox runs on them
		mcfg.Modules = append(mcfg.Modules, templatehold.New(cfg.Templates))
		// a build step's stack, lent to its sandbox as a template
		stacks = templatebuild.New()
		mcfg.Modules = append(mcfg.Modules, stacks)
	}
	if caches != nil {
		mcfg.Modules = append(mcfg.Modules, caches) // no hooks: the tasks module calls it
	}
	// last: its OnCreate lets its hold of a claimed sandbox's layers go
	// after the template hold took its own
	pools, err := newPools(cfg)
	if err != nil {
		return nil, err
	}
	s.Pools = pools
	mcfg.Modules = append(mcfg.Modules, pools)
	m, err := manager.New(ctx, mcfg)
	if err != nil {
		return nil, err
	}
	s.Manager = m
	if stacks != nil {
		s.Builds = &templatebuild.Service{Store: cfg.Templates, Core: m, Stacks: stacks, Presets: presets}
	}
	if !cfg.PoolsLater {
		pools.Start()
	}
	return s, nil
}

// newPools is the warm pool module of cfg.Pools, each pool's backend named.
func newPools(cfg Config) (*pool.Pools, error) {
	pcfg := pool.Config{}
	if cfg.Templates != nil {
		pcfg.Hold = cfg.Templates.HoldDirs
	}
	for _, p := range cfg.Pools {
		if p.Backend == "" {
			p.Backend = cfg.TemplateBackends[p.Template]
		}
		if p.Backend == "" && cfg.Backend != nil {
			p.Backend = cfg.Backend.Name()
		}
		pcfg.Pools = append(pcfg.Pools, p)
	}
	return pool.New(pcfg)
}
