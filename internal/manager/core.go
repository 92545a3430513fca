package manager

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/airlock-dev/airlock/internal/writescope"

	"github.com/airlock-dev/airlock/internal/redacted"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/hook"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/sandbox"
	"github.com/airlock-dev/airlock/internal/store"
)

// core is the hook.Core of the modules of one Manager (see hook.Core for
// each method's contract).
type core struct{ m *Manager }

var _ hook.Core = (*core)(nil)

func (c *core) Prewarm(ctx context.Context, s hook.WarmShape) (hook.Warm, error) {
	w, err := c.m.prewarm(ctx, s)
	if err != nil {
		return nil, err
	}
	return w, nil
}

func (c *core) Store() *store.Store                             { return c.m.cfg.Store }
func (c *core) Redactor() sandbox.Redactor                      { return c.m.cfg.Redactor }
func (c *core) Logf(format string, args ...any)                 { c.m.cfg.Logf(format, args...) }
func (c *core) Record(ctx context.Context, e audit.Entry) error { return c.m.rec.Record(ctx, e) }
func (c *core) State(ctx context.Context, id string) (sandbox.State, error) {
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
func (c *core) Sandbox(ctx context.Context, id string) (*sandbox.Sandbox, error) {
	return c.m.Get(ctx, id)
}
func (c *core) Runtime(ctx context.Context, id string) (runtime.Sandbox, error) {
	return c.m.runtimeSandbox(ctx, id)
}
func (c *core) Files(ctx context.Context, id string) (runtime.Files, error) {
	return c.m.Files(ctx, id)
}
func (c *core) Live(id string) (*hook.LiveInfo, bool) {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	ls, ok := c.m.live[id]
	if !ok {
		return nil, false
	}
	b := ls.base
	b.Binds = slices.Clone(b.Binds)
	return &hook.LiveInfo{State: ls.state, TaskID: ls.taskID, Base: b, View: redacted.View(ls.rec), Policy: ls.pol, NetworkLayer: ls.netLayer, User: userOf(ls.spec)}, true
}
func (c *core) Exec(ctx context.Context, id string, req sandbox.ExecRequest, stdout, stderr io.Writer) (string, *runtime.ExitStatus, error) {
	return c.m.Exec(ctx, id, req, nil, stdout, stderr)
}
func (c *core) CreateForTask(ctx context.Context, req sandbox.CreateRequest, taskID string) (*sandbox.Sandbox, error) {
	if taskID == "" {
		return nil, fmt.Errorf("a task's sandbox needs its task: %w", errdefs.ErrInvalid)
	}
	return c.m.create(ctx, req, taskID)
}
func (c *core) ExecTaskTest(ctx context.Context, id, taskID string, req sandbox.ExecRequest, started func(string, int), stdout, stderr io.Writer) (string, *runtime.ExitStatus, error) {
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
func (c *core) RestrictWrites(ctx context.Context, id string, scope []string) error {
	sb, err := c.m.runtimeSandbox(ctx, id)
	if err != nil {
		return err
	}
	if err := writescope.Apply(ctx, sb, scope); err != nil {
		return err
	}
	c.m.mu.Lock()
	if ls := c.m.live[id]; ls != nil {
		ls.scope = slices.Clone(scope)
	}
	c.m.mu.Unlock()
	return nil
}
func (c *core) BeginFinishing(id string) (end func(), err error) {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	ls := c.m.live[id]
	if ls == nil {
		return func() {}, nil
	}
	if err := ls.transition(sandbox.Finishing); err != nil {
		return nil, err
	}
	// A command admitted before now that is already starting is let in
	// (the finish's sweep then ends it); none starts after this (execStart).
	for deadline := time.Now().Add(finishStartWait); ls.starting > 0; {
		if !time.Now().Before(deadline) {
			_ = ls.transition(sandbox.Running)
			return nil, fmt.Errorf("sandbox %s: a command is still starting: %w", id, errdefs.ErrConflict)
		}
		c.m.mu.Unlock()
		time.Sleep(time.Millisecond)
		c.m.mu.Lock()
	}
	return func() {
		c.m.mu.Lock()
		if ls.state == sandbox.Finishing {
			_ = ls.transition(sandbox.Running)
		}
		c.m.mu.Unlock()
	}, nil
}

// finishStartWait bounds how long BeginFinishing waits for the commands
// already starting to be running (and so seen by the finish's sweep).
const finishStartWait = 10 * time.Second

func (c *core) MaxLifetime() time.Duration                   { return c.m.cfg.MaxLifetime }
func (c *core) Destroy(ctx context.Context, id string) error { return c.m.Destroy(ctx, id) }
func (c *core) Execs(ctx context.Context, id string) ([]*sandbox.Exec, error) {
	return c.m.recs.Execs(ctx, id)
}
func (c *core) ExecRecord(ctx context.Context, id, execID string) (*sandbox.Exec, error) {
	e, err := c.m.recs.GetExec(ctx, id, execID)
	if err != nil {
		return nil, err
	}
	return c.m.recs.ShownExec(e)
}
func (c *core) AuditHealthy() error      { return c.m.rec.Healthy() }
func (c *core) PolicyFile() *policy.File { return c.m.cfg.Policy }
func (c *core) FetchPolicy() (*egress.Policy, egress.Presets) {
	var pol *egress.Policy
	var presets egress.Presets
	if c.m.cfg.Policy != nil {
		pol = c.m.cfg.Policy.Fetch
	}
	if c.m.hooks.Network != nil {
		presets = c.m.hooks.Network.Presets()
	}
	return pol, presets
}
func (c *core) RecordRefusal(ctx context.Context, x hook.ExecCall, d *policy.Decision, msg string) {
	c.m.recordRefusal(ctx, x.SandboxID, sandbox.ExecRequest{Argv: x.Argv, Env: x.Env}, x.Cwd, d, msg)
}
func (c *core) Lift(ctx context.Context, id string, d *policy.Decision) error {
	return c.m.hooks.Lift(ctx, id, d)
}
func (c *core) IsApprover(ctx context.Context) bool { return sandbox.IsApprover(ctx) }
func (c *core) Bundles() (hook.TaskBundler, error) {
	if c.m.cfg.Audit == nil {
		return nil, nil
	}
	if c.m.hooks.Bundler == nil {
		return nil, fmt.Errorf("this daemon has no review module: no task's bundle can be made: %w", errdefs.ErrUnsupported)
	}
	return c.m.hooks.Bundler, nil
}
func (c *core) AuditLog() *audit.Log { return c.m.cfg.Audit }
func (c *core) FlushRefusals(ctx context.Context, id string) {
	if c.m.hooks.Network != nil {
		c.m.hooks.Network.FlushRefusals(ctx, id)
	}
}
func (c *core) Now() time.Time                                   { return c.m.now() }
func (c *core) Actor(ctx context.Context) string                 { return sandbox.ActorOf(ctx) }
func (c *core) HasEgress() bool                                  { return c.m.hooks.Network != nil }
func (c *core) ApplyEgress(ctx context.Context, id string) error { return c.m.applyEgress(ctx, id) }
func (c *core) ReapplyEgress(ctx context.Context, id string)     { c.m.reapplyEgress(ctx, id) }
func (c *core) TaskEnded(ctx context.Context, sb hook.SandboxRef) error {
	return c.m.hooks.TaskEnded(ctx, sb)
}
func (c *core) ExecOf(id string, pid int) (taskID, execID string) {
	m := c.m
	deadline := time.Now().Add(sourceWait)
	m.mu.Lock()
	defer m.mu.Unlock()
	for {
		ls := m.live[id]
		if ls != nil {
			taskID = ls.taskID
		}
		if pid <= 0 {
			return taskID, ""
		}
		for execID, r := range m.running {
			if r.sandboxID == id && r.p.PID() == pid {
				return taskID, execID
			}
		}
		if ls == nil || ls.starting == 0 || !time.Now().Before(deadline) {
			return taskID, ""
		}
		m.mu.Unlock()
		time.Sleep(time.Millisecond)
		m.mu.Lock()
	}
}
func (c *core) RecordAs(ctx context.Context, e audit.Entry, essential bool) error {
	if c.m.cfg.Audit == nil {
		return nil
	}
	return c.m.rec.RecordAs(ctx, e, essential)
}
func (c *core) RecordAsync(ctx context.Context, e audit.Entry) { c.m.rec.RecordAsync(ctx, e) }
func (c *core) NoteEgress(execID, host string)                 { c.m.noteEgress(execID, host) }
func (c *core) BrokeredSecrets(ctx context.Context, id string) ([]egress.Secret, error) {
	p, err := c.m.hooks.BrokeredSecrets(ctx, id, egress.Policy{})
	if err != nil {
		return nil, err
	}
	return p.Secrets, nil
}

// noteEgress tells the EgressNoters the ExecHooks kept for the running
// exec execID that it reached host (Core.NoteEgress).
func (m *Manager) noteEgress(execID, host string) {
	if execID == "" || host == "" {
		return
	}
	var notes []hook.EgressNoter
	m.mu.Lock()
	if r := m.running[execID]; r != nil {
		notes = m.hooks.Noters(r.keep)
	}
	m.mu.Unlock()
	for _, n := range notes {
		n.NoteEgress(host)
	}
}

func (m *Manager) reapplyEgress(ctx context.Context, id string) {
	if m.hooks.Network == nil {
		return
	}
	ids := []string{id}
	if id == "" {
		m.mu.Lock()
		ids = ids[:0]
		for sid := range m.live {
			ids = append(ids, sid)
		}
		m.mu.Unlock()
	}
	for _, sid := range ids {
		if err := m.applyEgress(ctx, sid); err != nil {
			m.cfg.Logf("egress policy of %s: %v", sid, err)
		}
	}
}

// applyEgress gives the network module a live sandbox's policy.
func (m *Manager) applyEgress(ctx context.Context, id string) error {
	if m.hooks.Network == nil {
		return nil
	}
	return m.hooks.Network.Apply(ctx, id)
}

// egressUsage is a running sandbox's egress usage (nil: none known).
func (m *Manager) egressUsage(id string) *egress.Usage {
	if m.hooks.Network == nil {
		return nil
	}
	return m.hooks.Network.Usage(id)
}

// sourceWait bounds how long a connection waits for its command's exec
// to be noted (Core.ExecOf).
const sourceWait = 5 * time.Second

// userOf is the command user of a sandbox made from spec (the backend
// accepted it, so it resolves).
func userOf(spec runtime.Spec) runtime.User {
	u, err := spec.User.Resolve()
	if err != nil {
		return spec.User
	}
	return u
}
