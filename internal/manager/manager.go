// Package manager is the daemon's sandbox core: it creates sandboxes on a
// runtime backend from templates, runs commands in them (the exec
// pipeline), enforces TTLs, pauses and resets them, and keeps the record
// of every sandbox and exec in the store. It is the only caller of the
// backend; the doors (api, e2b) call it through interfaces of their own,
// and features attach as modules through internal/hook (the core knows
// none of them by name).
//
// Invariants: a sandbox's record is written before Create returns and is
// never deleted by the manager (records outlive sandboxes); every exec
// gets a record before it starts and its end (or failure) is recorded.
package manager

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/internal/recorder"

	"github.com/airlock-dev/airlock/internal/redacted"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/lost"
	"github.com/airlock-dev/airlock/internal/netpolicy"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/template"
	"github.com/airlock-dev/airlock/internal/tenant"
)

// DefaultStoredOutput caps what is kept of each stream of each exec.
const DefaultStoredOutput = 1 << 20

// Config wires a Manager.
type Config struct {
	Backend   runtime.Backend
	Templates *template.Store
	Store     *store.Store
	// Backends are the backends besides Backend (the default) a request
	// may name (CreateRequest.Backend), by Name; Unavailable says, per
	// backend name, why it is missing on this host and how to install it,
	// for a clear error instead of a fallback to another boundary.
	Backends    map[string]runtime.Backend
	Unavailable map[string]string
	// TemplateBackends names the backend of a template's sandboxes when
	// the request names none (template name -> backend name).
	TemplateBackends map[string]string
	// MaxLifetime bounds every sandbox's life: a sandbox asked for without
	// a TTL gets it, and a longer TTL is refused. 0: no bound.
	MaxLifetime time.Duration
	// Caps bound what any caller may ask for.
	Caps Caps
	// StoredOutput caps the bytes kept per stream per exec; 0: default.
	StoredOutput int64
	// Policy is the daemon's policy file; nil: the built-in defaults.
	Policy *policy.File
	// Now is the clock (nil: time.Now); tests move it.
	Now func() time.Time
	// Audit is the tamper-evident record (nil: none is kept).
	Audit *audit.Log
	// AuditRetry is how often a stopped audit log is tried again
	// (0: recorder.DefaultRetry).
	AuditRetry time.Duration
	// Redactor hides secrets in stored output and records (nil: none).
	Redactor sandbox.Redactor
	Logf     func(format string, args ...any)
	// Modules are the features attached to the core, in the order their
	// hooks run (see Module).
	Modules []hook.Module
}

// Manager owns the live sandboxes of one daemon.
type Manager struct {
	cfg Config

	// reserved is what Creates under way reserve of Caps.Host (m.mu).
	reserved runtime.HostCost

	mu       sync.Mutex
	creating int // Creates under way (counted against Caps.Sandboxes)
	warm     int // the warm pool's ready sandboxes (counted too)
	live     map[string]*live
	running  map[string]*runningExec // by exec id

	// teardowns counts DestroyAsync's teardowns under way (m.mu), and
	// teardownsDone is signalled as each ends: a WaitGroup's Add may not
	// race its Wait, and one may begin while Shutdown waits.
	teardowns     int
	teardownsDone *sync.Cond
	// stopping holds a channel per sandbox being torn down, closed as its
	// teardown ends (takeLive, awaitStop; m.mu).
	stopping map[string]chan struct{}

	recs redacted.Records   // the store's records, redacted
	rec  *recorder.Recorder // the audit record and the failed writes

	// hooks are the modules' abilities, in Config.Modules order (their
	// Network is the egress service; nil: no network).
	hooks *hook.Set
}

func (m *Manager) now() time.Time { return m.cfg.Now().UTC() }

// claimEnvOf is the env every command of sb gets before its own (m.mu):
// the request's, when sb is the warm sandbox this one claimed.
func (ls *live) claimEnvOf(sb runtime.Sandbox) []string {
	if ls.warm == nil || ls.warm != sb {
		return nil
	}
	return slices.Clone(ls.warmEnv)
}

// live is the record of a sandbox while it lives (in Manager.live).
type live struct {
	// state is where it is in its life; changed only by transition (m.mu).
	state sandbox.State
	sb    runtime.Sandbox
	cost  runtime.HostCost // reserved of Caps.Host while it lives
	// quota gives back what its project's quotas hold for it (the
	// Admitters'), once its teardown ends; nil: nothing is held.
	quota func()
	rec   *store.Sandbox
	ttl   *time.Timer
	spec  runtime.Spec // as created: Reset starts over from it
	seed  string       // snapshot seed restored at create (and reset)
	// base is the template it started from: spec's binds less the
	// network's (a snapshot must not keep this sandbox's trust bundle).
	base sandbox.Base
	// pol is the sandbox's effective policy; taskID its task, if any;
	// scope the write scope applied inside it (again after a reset).
	pol    *policy.Policy
	taskID string
	scope  []string
	// netLayer is the egress layer it was created with over pol
	// (CreateRequest.NetworkLayer; nil: none), which the network module
	// applies until its caller replaces it.
	netLayer *netpolicy.Policy
	// warm is the pool's sandbox this one claimed (nil: none; a reset
	// replaces it), and warmEnv the request's env, which the warm one was
	// not created with: every command of warm gets it before its own.
	warm    runtime.Sandbox
	warmEnv []string
	// oneShot: destroyed once its first command ends (execd: one was
	// asked for; m.mu); see oneshot.go.
	oneShot, execd bool
	// onExpiry is what the end of its time to live does (expiry.go; m.mu).
	onExpiry expiry
	// maxLife bounds its life from its creation: the daemon's
	// MaxLifetime, or its project's shorter one (hook.Defaulter); 0: none.
	maxLife time.Duration
	// starting counts this sandbox's execs between the backend's start of
	// the command and their entry in Manager.running: a connection the
	// command makes in that moment waits for it (Core.ExecOf).
	starting int
}

// New makes a manager. Sandboxes the store still lists as running died
// with the previous daemon: they are marked stopped ("lost"), and the
// commands it ran in them ended ("lost"), both on the audit record.
func New(ctx context.Context, cfg Config) (*Manager, error) {
	if cfg.Backend == nil || cfg.Templates == nil || cfg.Store == nil {
		return nil, fmt.Errorf("manager: backend, templates and store are required: %w", errdefs.ErrInvalid)
	}
	if cfg.StoredOutput <= 0 {
		cfg.StoredOutput = DefaultStoredOutput
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Redactor == nil {
		cfg.Redactor = sandbox.NopRedactor{}
	}
	m := &Manager{cfg: cfg, live: map[string]*live{}, running: map[string]*runningExec{},
		recs: redacted.Records{Store: cfg.Store, Redactor: cfg.Redactor}, rec: recorder.New(cfg.Audit, cfg.Logf)}
	m.hooks = &hook.Set{}
	if err := m.hooks.Attach(cfg.Modules, &core{m}); err != nil {
		return nil, fmt.Errorf("manager: %w", err)
	}
	if err := lost.End(sandbox.WithActor(ctx, "airlock"), cfg.Store, m.rec.Record, cfg.Logf); err != nil {
		return nil, fmt.Errorf("manager: end what the previous daemon left running: %w", err)
	}
	m.rec.Start(cfg.AuditRetry)
	return m, nil
}

// Get returns a sandbox's record.
func (m *Manager) Get(ctx context.Context, id string) (*sandbox.Sandbox, error) {
	rec, err := m.cfg.Store.GetSandbox(ctx, id)
	if err != nil {
		return nil, err
	}
	v, err := m.recs.ShownSandbox(rec)
	if err != nil {
		return nil, err
	}
	v.Egress = m.egressUsage(id)
	return v, nil
}

// List returns the sandboxes the caller sees (its project's; the
// operator's: every one), newest first; state "" means all.
func (m *Manager) List(ctx context.Context, state string) ([]*sandbox.Sandbox, error) {
	if state != "" && state != "running" && state != "paused" && state != "stopped" {
		return nil, fmt.Errorf("state %q: use running, paused or stopped: %w", state, errdefs.ErrInvalid)
	}
	recs, err := m.cfg.Store.ListProjectSandboxes(ctx, state, tenant.Scope(ctx))
	if err != nil {
		return nil, err
	}
	out := make([]*sandbox.Sandbox, 0, len(recs))
	for _, r := range recs {
		v, err := m.recs.ShownSandbox(r)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// runtimeSandbox returns the backend's sandbox id, when it may be used:
// running, or finishing (its task's tests and diff use it); not paused,
// not being reset. Read under the lock.
func (m *Manager) runtimeSandbox(ctx context.Context, id string) (runtime.Sandbox, error) {
	m.mu.Lock()
	ls, ok := m.live[id]
	var sb runtime.Sandbox
	var state sandbox.State
	if ok {
		sb, state = ls.sb, ls.state
	}
	m.mu.Unlock()
	if ok && state != sandbox.Running && state != sandbox.Finishing {
		return nil, fmt.Errorf("sandbox %s is %s: %w", id, stateWhy(state, sandbox.Running), errdefs.ErrConflict)
	}
	if ok {
		return sb, nil
	}
	if _, err := m.cfg.Store.GetSandbox(ctx, id); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("sandbox %s is stopped: %w", id, errdefs.ErrConflict)
}

// LiveCount is the number of running sandboxes.
func (m *Manager) LiveCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.live)
}
