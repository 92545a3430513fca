package manager

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/store"
)

// Module is a feature attached to the sandbox core through
// Config.Modules. New attaches the modules in their order, before it
// returns; each ability a module has (CreateHook, ExecHook, AfterExecHook,
// StopHook, found by type assertion) is then called in that same order.
// A module reaches the core only through the Core it is given.
type Module interface {
	// Name names the module in errors and in the audit record (a
	// refusal says which module refused).
	Name() string
	// Attach gives the module its handle on the core, once. An error
	// fails New.
	Attach(c *Core) error
}

// CreateHook is a module that takes part in every Create.
type CreateHook interface {
	// OnCreate runs after the sandbox started, was recorded and had its
	// egress applied, before Create returns. An error undoes the create:
	// the sandbox is stopped ("failed", on the record), the hooks after
	// it are not called, and Create returns the error.
	OnCreate(ctx context.Context, sb SandboxRef) error
}

// ExecHook is a module that takes part in every Exec (see execPipeline:
// after the policy allowed it, before secrets and the run).
type ExecHook interface {
	// BeforeExec may refuse the command (an error: it does not run, and
	// the refusal is on the exec and audit record as exec.refused, naming
	// the module) or change x.Env, which the next hook sees. Argv and Cwd
	// are copies: the policy decided on them, they are not rewritten.
	BeforeExec(ctx context.Context, x *ExecCall) error
}

// AfterExecHook is a module told of every command that ran.
type AfterExecHook interface {
	// AfterExec runs once the command ended and its output is stored,
	// before its end is recorded; it cannot change the outcome.
	AfterExec(ctx context.Context, x ExecDone)
}

// StopHook is a module told of every sandbox that stops.
type StopHook interface {
	// OnStop runs when a live sandbox stops, before the backend destroys
	// it: ev.Sandbox still has its files (nil when a reset was under
	// way). What it returns joins the sandbox.stop event's payload.
	OnStop(ctx context.Context, ev StopEvent) map[string]any
}

// TemplateSource is a module that provides templates beyond the built-in
// ones (snapshots). Create asks the sources in module order for a name
// the built-ins do not have.
type TemplateSource interface {
	// Template returns the base of the template name, or an error (one
	// wrapping ErrNotFound when it has none of that name).
	Template(name string) (*sandbox.Base, error)
	// Templates lists its templates, for Manager.Templates.
	Templates(ctx context.Context) ([]*sandbox.TemplateInfo, error)
}

// SandboxRef names a live sandbox to a hook.
type SandboxRef struct {
	ID     string
	TaskID string // "": not a task's
}

// ExecCall is a command on its way to a sandbox, as ExecHooks see it.
type ExecCall struct {
	SandboxID, TaskID string
	Argv              []string
	Cwd               string
	Env               []string // the caller's K=V; hooks may add or change
	// Analysis is what the policy read of the command line (read only;
	// nil when it read nothing).
	Analysis *policy.Analysis
	// DaemonEnv is K=V the daemon sets for its own reasons (a module's
	// setting, not the caller's): it follows the caller's env and the
	// secrets', and is not named on the exec's record (env_names names
	// what the caller sent). Hooks may add.
	DaemonEnv []string
	// Keep is this hook's state for the same exec: nil before each hook;
	// what it leaves here the core holds while the command runs and gives
	// back to the same module's AfterExec (ExecDone.Keep). A command that
	// does not start drops it. A kept EgressNoter hears of the command's
	// connections.
	Keep any
}

// ExecDone is a command that ran, as AfterExecHooks see it.
type ExecDone struct {
	SandboxID, TaskID, ExecID string
	Argv                      []string // as recorded (redacted)
	Status                    *runtime.ExitStatus
	Err                       error
	Keep                      any // what this module's ExecHook kept (ExecCall.Keep)
}

// StopEvent is a sandbox stopping, as StopHooks see it.
type StopEvent struct {
	SandboxID, TaskID string
	Reason            string        // StopDestroyed, StopExpired, ...
	Prev              sandbox.State // its state before it stopped
	Sandbox           runtime.Sandbox
}

// Core is a module's handle on the sandbox core: what a feature may use,
// and nothing of the Manager's own API.
type Core struct{ m *Manager }

// Store is the daemon's store.
func (c *Core) Store() *store.Store { return c.m.cfg.Store }

// Redactor hides secrets in what is stored and shown.
func (c *Core) Redactor() sandbox.Redactor { return c.m.cfg.Redactor }

// Logf logs for the daemon's operator.
func (c *Core) Logf(format string, args ...any) { c.m.cfg.Logf(format, args...) }

// Record appends e to the audit record (record-before-act: an error
// means it is not recorded, and what depends on it must not happen).
func (c *Core) Record(ctx context.Context, e audit.Entry) error { return c.m.record(ctx, e) }

// State is a sandbox's state; a sandbox that is not live is Stopped (or
// unknown: ErrNotFound).
func (c *Core) State(ctx context.Context, id string) (sandbox.State, error) {
	c.m.mu.Lock()
	ls, ok := c.m.live[id]
	var s sandbox.State
	if ok {
		s = ls.state
	}
	c.m.mu.Unlock()
	if ok {
		return s, nil
	}
	if _, err := c.m.cfg.Store.GetSandbox(ctx, id); err != nil {
		return sandbox.Stopped, err
	}
	return sandbox.Stopped, nil
}

// Sandbox is a sandbox as the API shows it.
func (c *Core) Sandbox(ctx context.Context, id string) (*sandbox.Sandbox, error) {
	return c.m.Get(ctx, id)
}

// Runtime is the backend's sandbox while it may be used (running, or
// finishing); else an ErrConflict saying why.
func (c *Core) Runtime(ctx context.Context, id string) (runtime.Sandbox, error) {
	return c.m.runtimeSandbox(ctx, id)
}

// Files is the daemon's own access to a sandbox's files (no policy).
func (c *Core) Files(ctx context.Context, id string) (runtime.Files, error) {
	return c.m.Files(ctx, id)
}

// LiveInfo is a live sandbox as a module sees it.
type LiveInfo struct {
	State  sandbox.State
	TaskID string           // "": not a task's
	Base   sandbox.Base     // what it started from (template root, binds, seed)
	View   *sandbox.Sandbox // as the API shows it (no egress usage)
	// Policy is its effective policy, as made at create (not changed
	// while it lives; not to be modified).
	Policy *policy.Policy
}

// Live is what the core knows of a live sandbox; false: not live.
func (c *Core) Live(id string) (*LiveInfo, bool) {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	ls, ok := c.m.live[id]
	if !ok {
		return nil, false
	}
	b := ls.base
	b.Binds = slices.Clone(b.Binds)
	return &LiveInfo{State: ls.state, TaskID: ls.taskID, Base: b, View: view(ls.rec), Policy: ls.pol}, true
}

// Exec runs a command through the whole exec pipeline, hooks included:
// a module calling it from its own ExecHook must not recurse forever.
func (c *Core) Exec(ctx context.Context, id string, req sandbox.ExecRequest, stdout, stderr io.Writer) (string, *runtime.ExitStatus, error) {
	return c.m.Exec(ctx, id, req, nil, stdout, stderr)
}

// named is a hook with its module's name.
type named[H any] struct {
	name string
	hook H
}

// attach attaches cfg.Modules in order and sorts their hooks.
func (m *Manager) attach() error {
	seen := map[string]bool{}
	for _, mod := range m.cfg.Modules {
		name := mod.Name()
		if name == "" || seen[name] {
			return fmt.Errorf("module %q: a module needs a name of its own: %w", name, errdefs.ErrInvalid)
		}
		seen[name] = true
		if err := mod.Attach(&Core{m: m}); err != nil {
			return fmt.Errorf("module %s: %w", name, err)
		}
		if h, ok := mod.(CreateHook); ok {
			m.createHooks = append(m.createHooks, named[CreateHook]{name, h})
		}
		if h, ok := mod.(ExecHook); ok {
			m.execHooks = append(m.execHooks, named[ExecHook]{name, h})
		}
		if h, ok := mod.(AfterExecHook); ok {
			m.afterExecHooks = append(m.afterExecHooks, named[AfterExecHook]{name, h})
		}
		if h, ok := mod.(StopHook); ok {
			m.stopHooks = append(m.stopHooks, named[StopHook]{name, h})
		}
		if h, ok := mod.(TemplateSource); ok {
			m.templateSources = append(m.templateSources, named[TemplateSource]{name, h})
		}
		if h, ok := mod.(SecretSource); ok {
			m.secretSources = append(m.secretSources, named[SecretSource]{name, h})
		}
		if h, ok := mod.(BrokerSource); ok {
			m.brokerSources = append(m.brokerSources, named[BrokerSource]{name, h})
		}
		if h, ok := mod.(TaskEndHook); ok {
			m.taskEndHooks = append(m.taskEndHooks, named[TaskEndHook]{name, h})
		}
		if err := m.attachNetwork(name, mod); err != nil {
			return err
		}
		if err := m.attachApprovals(name, mod); err != nil {
			return err
		}
		if err := m.attachBundler(name, mod); err != nil {
			return err
		}
	}
	return nil
}

// The core's surface for the tasks module (internal/tasks): a task's
// sandbox is the core's, bound to its task, and what holds inside it
// (its write scope, its Finishing state, its test's policy exception)
// is kept here, where every exec and reset passes.

// CreateForTask is Create for the sandbox of task taskID (not "" ): its
// policy's source says task, its events and execs name the task, and it
// may run ExecTaskTest. Only a module reaches it: no request sets it.
func (c *Core) CreateForTask(ctx context.Context, req sandbox.CreateRequest, taskID string) (*sandbox.Sandbox, error) {
	if taskID == "" {
		return nil, fmt.Errorf("a task's sandbox needs its task: %w", errdefs.ErrInvalid)
	}
	return c.m.create(ctx, req, taskID)
}

// ExecTaskTest runs req as the task's own test command in the task's
// sandbox id: the policy allows it whatever it decides (recorded as the
// rule task:test), and it runs while the sandbox is Finishing. The
// sandbox must be live and taskID's (ErrConflict otherwise). The caller
// (the tasks module) runs only the test command its task was started
// with; nothing an agent sends reaches this.
func (c *Core) ExecTaskTest(ctx context.Context, id, taskID string, req sandbox.ExecRequest, started func(string, int), stdout, stderr io.Writer) (string, *runtime.ExitStatus, error) {
	c.m.mu.Lock()
	ls := c.m.live[id]
	c.m.mu.Unlock()
	if ls == nil {
		// Not live: the error any exec would get (stopped, unknown).
		if _, err := c.m.runtimeSandbox(ctx, id); err != nil {
			return "", nil, err
		}
		return "", nil, fmt.Errorf("sandbox %s is stopped: %w", id, errdefs.ErrConflict)
	}
	if taskID == "" || ls.taskID != taskID {
		return "", nil, fmt.Errorf("sandbox %s is not task %s's: %w", id, taskID, errdefs.ErrConflict)
	}
	return c.m.exec(ctx, id, req, true, started, stdout, stderr)
}

// RestrictWrites confines writes in the live sandbox id to scope (path
// globs, see restrictWrites) now and again after every Reset, for the
// rest of its life. A backend that cannot is an error.
func (c *Core) RestrictWrites(ctx context.Context, id string, scope []string) error {
	sb, err := c.m.runtimeSandbox(ctx, id)
	if err != nil {
		return err
	}
	if err := restrictWrites(ctx, sb, scope); err != nil {
		return err
	}
	c.m.mu.Lock()
	if ls := c.m.live[id]; ls != nil {
		ls.scope = slices.Clone(scope)
	}
	c.m.mu.Unlock()
	return nil
}

// BeginFinishing moves the live sandbox id to Finishing (nothing but
// ExecTaskTest runs, nothing writes its files) or says why it may not
// (an ErrConflict). end moves it back to Running if it is still
// Finishing; call it once. A sandbox that is not live has nothing to
// hold: end is then a no-op and the error nil.
func (c *Core) BeginFinishing(id string) (end func(), err error) {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	ls := c.m.live[id]
	if ls == nil {
		return func() {}, nil
	}
	if err := ls.transition(sandbox.Finishing); err != nil {
		return nil, err
	}
	return func() {
		c.m.mu.Lock()
		if ls.state == sandbox.Finishing {
			_ = ls.transition(sandbox.Running)
		}
		c.m.mu.Unlock()
	}, nil
}

// MaxLifetime bounds every sandbox's life (0: no bound; see
// Config.MaxLifetime).
func (c *Core) MaxLifetime() time.Duration { return c.m.cfg.MaxLifetime }

// Destroy stops a live sandbox (StopDestroyed); its record stays.
func (c *Core) Destroy(ctx context.Context, id string) error { return c.m.Destroy(ctx, id) }

// Execs lists a sandbox's exec records, oldest first, as the API shows
// them (redacted again: a secret learned since is hidden too).
func (c *Core) Execs(ctx context.Context, id string) ([]*sandbox.Exec, error) {
	return c.m.execs(ctx, id)
}

// ExecRecord is exec execID of sandbox id as the API shows it (not
// found: unknown, or another sandbox's).
func (c *Core) ExecRecord(ctx context.Context, id, execID string) (*sandbox.Exec, error) {
	e, err := c.m.getExec(ctx, id, execID)
	if err != nil {
		return nil, err
	}
	return c.m.shownExec(e)
}

// AuditHealthy is nil while the audit log records; else why it does not
// (what needs a gap-free record must wait).
func (c *Core) AuditHealthy() error { return c.m.auditHealthy() }

// FetchPolicy is the daemon's fetch policy for clones it makes for a
// remote client: the policy file's fetch: section (nil: nowhere), and
// the registry presets the sandboxes' policies get.
func (c *Core) FetchPolicy() (*egress.Policy, egress.Presets) {
	var pol *egress.Policy
	var presets egress.Presets
	if c.m.cfg.Policy != nil {
		pol = c.m.cfg.Policy.Fetch
	}
	if c.m.egressSvc != nil {
		presets = c.m.egressSvc.Presets()
	}
	return pol, presets
}
