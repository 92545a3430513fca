package manager

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/airlock-dev/airlock/internal/writescope"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/store"
)

// Reset starts a sandbox over from its template: every process is killed
// and every file it wrote (workspace, home, /tmp, caches, shell history)
// is gone; its id, record, TTL and exec records stay. A task's checkout
// is gone too. Steps: begin (state Resetting), recreate on the backend,
// then resume it as running (or, failed, stop it as failed).
func (m *Manager) Reset(ctx context.Context, id string) (*sandbox.Sandbox, error) {
	ls, old, err := m.beginReset(ctx, id)
	if err != nil {
		return nil, err
	}
	sb, err := m.recreate(ctx, id, ls, old)
	if err != nil {
		return nil, m.failReset(ctx, id, err)
	}
	rec, err := m.resumeReset(ctx, id, ls, sb)
	if err != nil {
		return nil, err
	}
	if err := m.cfg.Store.UpdateSandbox(ctx, rec); err != nil {
		return nil, err
	}
	m.rec.BestEffort("sandbox "+id+": record its reset", m.rec.Record(ctx, audit.Entry{SandboxID: id, TaskID: ls.taskID, Kind: "sandbox.reset", Payload: map[string]any{"template_version": rec.TemplateVersion}}))
	return m.recs.ShownSandbox(rec)
}

// beginReset moves a live sandbox to Resetting: nothing may use it
// meanwhile, and watch ignores its end. It returns the backend sandbox
// being replaced (read under the lock).
func (m *Manager) beginReset(ctx context.Context, id string) (*live, runtime.Sandbox, error) {
	m.mu.Lock()
	ls, ok := m.live[id]
	if !ok {
		m.mu.Unlock()
		if _, err := m.cfg.Store.GetSandbox(ctx, id); err != nil {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("sandbox %s is stopped: %w", id, errdefs.ErrConflict)
	}
	defer m.mu.Unlock()
	if err := ls.transition(sandbox.Resetting); err != nil {
		return nil, nil, err
	}
	return ls, ls.sb, nil
}

// recreate destroys a resetting sandbox's backend sandbox and creates it
// again from its spec as created, its snapshot seed restored.
func (m *Manager) recreate(ctx context.Context, id string, ls *live, old runtime.Sandbox) (runtime.Sandbox, error) {
	if err := old.Destroy(ctx); err != nil {
		m.cfg.Logf("reset %s: destroy: %v", id, err)
	}
	spec := ls.spec
	spec.ID = id
	be, err := m.backend(ls.rec.Backend)
	if err != nil {
		return nil, err
	}
	sb, err := be.Create(ctx, spec)
	if err != nil {
		return nil, err
	}
	if ls.seed != "" {
		if err := seedSandbox(ctx, sb, ls.seed); err != nil {
			_ = sb.Destroy(context.Background())
			return nil, err
		}
	}
	return sb, nil
}

// failReset stops a sandbox whose reset failed as failed, the way every
// stop goes (its StopHooks, its sandbox.stop event, its record: a module
// holding something for it lets go), and returns the reset's error. A
// resetting sandbox has no backend sandbox left to destroy.
func (m *Manager) failReset(ctx context.Context, id string, err error) error {
	m.rec.BestEffort("sandbox "+id+": stop it as failed", m.stop(context.WithoutCancel(ctx), id, sandbox.StopFailed))
	return fmt.Errorf("reset %s: %w", id, err)
}

// resumeReset makes the new backend sandbox the live one (running, its
// write scope applied again, its end watched) and returns its record to
// store; a sandbox stopped during its reset is not resumed.
func (m *Manager) resumeReset(ctx context.Context, id string, ls *live, sb runtime.Sandbox) (*store.Sandbox, error) {
	m.mu.Lock()
	if cur, still := m.live[id]; !still || cur != ls || ls.state != sandbox.Resetting {
		// destroyed (or expired) while it was being reset
		m.mu.Unlock()
		_ = sb.Destroy(context.Background())
		return nil, fmt.Errorf("sandbox %s was stopped during its reset: %w", id, errdefs.ErrConflict)
	}
	ls.sb = sb
	_ = ls.transition(sandbox.Running)
	if len(ls.scope) > 0 {
		// The write scope holds for the sandbox's life, resets included.
		if err := writescope.Apply(ctx, sb, ls.scope); err != nil {
			m.mu.Unlock()
			m.rec.BestEffort("sandbox "+id+": destroy it", m.Destroy(context.Background(), id))
			return nil, fmt.Errorf("reset %s: %w", id, err)
		}
	}
	isoJSON, _ := json.Marshal(sb.Info().Isolation)
	ls.rec.Isolation, ls.rec.State = isoJSON, "running"
	rec := *ls.rec
	m.mu.Unlock()
	go m.watch(ls, sb)
	return &rec, nil
}
