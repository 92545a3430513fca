package manager

import (
	"context"
	"fmt"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// Pause freezes a running sandbox (state "paused"); Resume thaws it.
func (m *Manager) Pause(ctx context.Context, id string) (*sandbox.Sandbox, error) {
	return m.setPaused(ctx, id, true)
}

// Resume thaws a paused sandbox.
func (m *Manager) Resume(ctx context.Context, id string) (*sandbox.Sandbox, error) {
	return m.setPaused(ctx, id, false)
}

func (m *Manager) setPaused(ctx context.Context, id string, pause bool) (*sandbox.Sandbox, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ls, ok := m.live[id]
	if !ok {
		if _, err := m.cfg.Store.GetSandbox(ctx, id); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("sandbox %s is stopped: %w", id, errdefs.ErrConflict)
	}
	if ls.state == sandbox.Resetting {
		return nil, fmt.Errorf("sandbox %s is being reset: %w", id, errdefs.ErrConflict)
	}
	p, ok := ls.sb.(runtime.Pauser)
	if !ok {
		return nil, fmt.Errorf("backend %s cannot pause: %w", m.cfg.Backend.Name(), errdefs.ErrUnsupported)
	}
	from, to := sandbox.Paused, sandbox.Running
	if pause {
		from, to = sandbox.Running, sandbox.Paused
	}
	want := to.String()
	if ls.state == to || (!pause && ls.state == sandbox.Finishing) {
		return nil, fmt.Errorf("sandbox %s is already %s: %w", id, want, errdefs.ErrConflict)
	}
	if ls.state != from {
		return nil, fmt.Errorf("sandbox %s is %s: %w", id, stateWhy(ls.state, to), errdefs.ErrConflict)
	}
	var err error
	if pause {
		err = p.Pause(ctx)
	} else {
		err = p.Resume(ctx)
	}
	if err != nil {
		return nil, err
	}
	_ = ls.transition(to) // checked above, under the same lock
	ls.rec.State = want
	payload := map[string]any{}
	if !pause {
		if exp := m.resumedFromExpiry(ls); exp != nil {
			payload["expires"] = exp // a new time to live (expiry.go)
		}
	}
	rec := *ls.rec
	if err := m.cfg.Store.UpdateSandbox(ctx, &rec); err != nil {
		return nil, err
	}
	kind := "sandbox.resume"
	if pause {
		kind = "sandbox.pause"
	}
	m.rec.BestEffort("sandbox "+id+": record "+kind, m.rec.Record(ctx, audit.Entry{SandboxID: id, TaskID: ls.taskID, Kind: kind, Payload: payload}))
	return m.recs.ShownSandbox(&rec)
}

// Paused says whether sandbox id is live and paused: read under the
// lock, with no store read, since the E2B door asks it of every call
// into a sandbox.
func (m *Manager) Paused(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	ls, ok := m.live[id]
	return ok && ls.state == sandbox.Paused
}
