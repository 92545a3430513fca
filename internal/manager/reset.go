package manager

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// Reset starts a sandbox over from its template: every process is killed
// and every file it wrote (workspace, home, /tmp, caches, shell history)
// is gone; its id, record, TTL and exec records stay. A task's checkout
// is gone too.
func (m *Manager) Reset(ctx context.Context, id string) (*Sandbox, error) {
	m.mu.Lock()
	ls, ok := m.live[id]
	if !ok {
		m.mu.Unlock()
		if _, err := m.cfg.Store.GetSandbox(ctx, id); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("sandbox %s is stopped: %w", id, errdefs.ErrConflict)
	}
	old := ls.sb
	// Nothing may use it meanwhile; watch ignores its end.
	if err := ls.transition(Resetting); err != nil {
		m.mu.Unlock()
		return nil, err
	}
	m.mu.Unlock()
	if err := old.Destroy(ctx); err != nil {
		m.cfg.Logf("reset %s: destroy: %v", id, err)
	}
	spec := ls.spec
	spec.ID = id
	be, err := m.backend(ls.rec.Backend)
	var sb runtime.Sandbox
	if err == nil {
		sb, err = be.Create(ctx, spec)
	}
	if err == nil && ls.seed != "" {
		if err = seedSandbox(ctx, sb, ls.seed); err != nil {
			_ = sb.Destroy(context.Background())
		}
	}
	m.mu.Lock()
	if err != nil {
		delete(m.live, id)
		if ls.ttl != nil {
			ls.ttl.Stop()
		}
		if ls.state != Stopped {
			_ = ls.transition(Stopped)
		}
		now := time.Now().UTC()
		ls.rec.State, ls.rec.Stopped, ls.rec.StopReason = "stopped", &now, StopFailed
		rec := *ls.rec
		m.mu.Unlock()
		m.bestEffort("sandbox "+id+": record it stopped", m.cfg.Store.UpdateSandbox(context.Background(), &rec))
		return nil, fmt.Errorf("reset %s: %w", id, err)
	}
	if cur, still := m.live[id]; !still || cur != ls || ls.state != Resetting {
		// destroyed (or expired) while it was being reset
		m.mu.Unlock()
		_ = sb.Destroy(context.Background())
		return nil, fmt.Errorf("sandbox %s was stopped during its reset: %w", id, errdefs.ErrConflict)
	}
	ls.sb = sb
	_ = ls.transition(Running)
	if len(ls.scope) > 0 {
		// The write scope holds for the sandbox's life, resets included.
		if err := restrictWrites(ctx, sb, ls.scope); err != nil {
			m.mu.Unlock()
			m.bestEffort("sandbox "+id+": destroy it", m.Destroy(context.Background(), id))
			return nil, fmt.Errorf("reset %s: %w", id, err)
		}
	}
	isoJSON, _ := json.Marshal(sb.Info().Isolation)
	ls.rec.Isolation, ls.rec.State = isoJSON, "running"
	rec := *ls.rec
	m.mu.Unlock()
	go m.watch(ls, sb)
	if err := m.cfg.Store.UpdateSandbox(ctx, &rec); err != nil {
		return nil, err
	}
	m.bestEffort("sandbox "+id+": record its reset", m.record(ctx, audit.Entry{SandboxID: id, TaskID: ls.taskID, Kind: "sandbox.reset", Payload: map[string]any{"template_version": rec.TemplateVersion}}))
	return m.shownSandbox(&rec)
}
