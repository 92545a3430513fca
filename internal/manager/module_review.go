package manager

import (
	"context"
	"fmt"
	"io"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/bundle"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/store"
)

// The surface the review module (internal/review) attaches through
// besides the exec hooks: it writes the tasks module's bundles (a
// TaskBundler), reads the audit record it signs, and hears of the
// registry hosts a dependency command reached (an EgressNoter it kept).

// TaskBundle is a task as its review bundle needs it, from the tasks
// module; nothing in it is redacted yet (the bundle is, as a whole).
type TaskBundle struct {
	Task *store.Task // its record
	// Manifest has the task's own fields: task, sandbox, repo, ref,
	// commit, prompt, scope, test, created, workspace_gone.
	Manifest   bundle.Manifest
	Patch      string
	Files      []bundle.File // the changed files, paths as the sandbox has them
	OutOfScope []string
	Tests      []bundle.TestRun // the task's test runs (their summary is the bundle's)
	// Dependencies are the changes the project's own lockfiles pin, base
	// commit against workspace (nil: read them from the patch).
	Dependencies *bundle.Dependencies
}

// TaskBundler is a module that writes tasks' signed review bundles; at
// most one (attach refuses a second).
type TaskBundler interface {
	// WriteBundle writes tb's bundle to w: its sandbox's record,
	// commands, outputs, approvals, network requests and the added
	// files (read from the sandbox while it lives) with the audit
	// events, signed, and records task.export.
	WriteBundle(ctx context.Context, tb *TaskBundle, w io.Writer) error
}

// EgressNoter is a value an ExecHook kept for its exec (ExecCall.Keep)
// that is told, while the command runs, of every host its process tree
// reached through the egress proxy (an allowed connection or request).
// It may be called concurrently.
type EgressNoter interface {
	NoteEgress(host string)
}

// Bundles is the module that writes tasks' review bundles. With no audit
// log it is nil and the error nil: no bundle is made (a bundle is the
// record's), so a finish writes none and an export is refused. An
// ErrUnsupported: the daemon keeps an audit log but no module writes
// bundles; what needs a bundle must fail, never go without one.
func (c *Core) Bundles() (TaskBundler, error) {
	if c.m.cfg.Audit == nil {
		return nil, nil
	}
	if c.m.bundler == nil {
		return nil, fmt.Errorf("this daemon has no review module: no task's bundle can be made: %w", errdefs.ErrUnsupported)
	}
	return c.m.bundler, nil
}

// AuditLog is the daemon's audit log (nil: none is kept), for reading
// it (events, head) and signing with its key; what a module records goes
// through Record.
func (c *Core) AuditLog() *audit.Log { return c.m.cfg.Audit }

// FlushRefusals records the egress refusal counts of sandbox id's window
// still open (nothing without the egress service).
func (c *Core) FlushRefusals(ctx context.Context, id string) {
	if c.m.egressSvc != nil {
		c.m.egressSvc.FlushRefusals(ctx, id)
	}
}

// attachBundler takes mod as the bundle writer if it is a TaskBundler:
// at most one module may be.
func (m *Manager) attachBundler(name string, mod Module) error {
	b, ok := mod.(TaskBundler)
	if !ok {
		return nil
	}
	if m.bundler != nil {
		return fmt.Errorf("module %s: a second bundle writer (a task has one bundle): %w", name, errdefs.ErrInvalid)
	}
	m.bundler = b
	return nil
}

// noteEgress tells the EgressNoters the ExecHooks kept for the running
// exec execID that it reached host (Core.NoteEgress).
func (m *Manager) noteEgress(execID, host string) {
	if execID == "" || host == "" {
		return
	}
	var notes []EgressNoter
	m.mu.Lock()
	if r := m.running[execID]; r != nil {
		for _, h := range m.execHooks {
			if n, ok := r.keep[h.name].(EgressNoter); ok {
				notes = append(notes, n)
			}
		}
	}
	m.mu.Unlock()
	for _, n := range notes {
		n.NoteEgress(host)
	}
}
