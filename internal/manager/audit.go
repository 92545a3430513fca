package manager

import (
	"context"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/audit"
)

// learnSecrets teaches the redactor the values of secret-named variables
// (sandbox.SecretValues), in one batch: the redactor's index is rebuilt
// once per batch (one call per value made a request of thousands cost
// minutes of CPU).
func (m *Manager) learnSecrets(env []string) error {
	vals, err := sandbox.SecretValues(env)
	if err == nil && len(vals) > 0 {
		m.cfg.Redactor.Add(vals...)
	}
	return err
}

// Healthy reports why the daemon cannot take work, or nil: today, an
// audit log that can no longer be written (a full log disk). The health
// endpoint shows it, so that the operator learns of it before a user does.
func (m *Manager) Healthy() error { return m.rec.Healthy() }

// RecordAPI records one API call (the API layer calls it for every
// request that changes something).
func (m *Manager) RecordAPI(ctx context.Context, method, path string, status int) {
	m.rec.BestEffort("record "+method+" "+path, m.rec.Record(ctx, audit.Entry{Kind: "api.request", Payload: map[string]any{"method": method, "path": path, "status": status}}))
}

// Record lets the daemon's wiring add events of its own (daemon start
// and stop, operator actions).
func (m *Manager) Record(ctx context.Context, e audit.Entry) error { return m.rec.Record(ctx, e) }

func (m *Manager) taskOf(id string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ls := m.live[id]; ls != nil {
		return ls.taskID
	}
	return ""
}
