package manager

import (
	"context"
	"fmt"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
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

// record writes an audit event (when the daemon keeps an audit log). The
// actor comes from ctx.
func (m *Manager) record(ctx context.Context, e audit.Entry) error {
	if m.cfg.Audit == nil {
		return nil
	}
	if e.Actor == "" {
		e.Actor = sandbox.ActorOf(ctx)
	}
	return m.recordAs(ctx, e, false)
}

// recordAs writes an event, into the log's reserve if essential.
func (m *Manager) recordAs(ctx context.Context, e audit.Entry, essential bool) error {
	if err := m.writeAudit(ctx, e, essential); err != nil {
		m.cfg.Logf("AUDIT WRITE FAILED (%s): %v", e.Kind, err)
		return fmt.Errorf("audit log: %v: %w", err, errdefs.ErrLimitExceeded)
	}
	return nil
}

func (m *Manager) recordAsync(ctx context.Context, e audit.Entry) {
	if m.cfg.Audit == nil {
		return
	}
	if e.Actor == "" {
		e.Actor = sandbox.ActorOf(ctx)
	}
	// An event after its act (bestEffort's rule), logged as every failed
	// audit write is.
	m.cfg.Audit.RecordAsync(ctx, e, func(err error) {
		if err != nil {
			m.writes.lost.Add(1)
			m.cfg.Logf("AUDIT WRITE FAILED (%s): %v", e.Kind, err)
		}
	})
}

// auditHealthy fails closed: with a broken audit log nothing new runs.
func (m *Manager) auditHealthy() error {
	if m.cfg.Audit == nil {
		return nil
	}
	m.retryAudit()
	if err := m.cfg.Audit.Err(); err != nil {
		return fmt.Errorf("the audit log cannot be written (%v): nothing runs until it can: %w", err, errdefs.ErrLimitExceeded)
	}
	return nil
}

// Healthy reports why the daemon cannot take work, or nil: today, an
// audit log that can no longer be written (a full log disk). The health
// endpoint shows it, so that the operator learns of it before a user does.
func (m *Manager) Healthy() error { return m.auditHealthy() }

// RecordAPI records one API call (the API layer calls it for every
// request that changes something).
func (m *Manager) RecordAPI(ctx context.Context, method, path string, status int) {
	m.bestEffort("record "+method+" "+path, m.record(ctx, audit.Entry{Kind: "api.request", Payload: map[string]any{"method": method, "path": path, "status": status}}))
}

// Record lets the daemon's wiring add events of its own (daemon start
// and stop, operator actions).
func (m *Manager) Record(ctx context.Context, e audit.Entry) error { return m.record(ctx, e) }

func (m *Manager) taskOf(id string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ls := m.live[id]; ls != nil {
		return ls.taskID
	}
	return ""
}
