package manager

import (
	"context"
	"time"

	"github.com/airlock-dev/airlock/internal/audit"
)

// essentialKinds must reach the record even when the log disk is full
// (audit.Log.RecordEssential writes them into the reserved space): what
// was destroyed, and that the daemon stopped.
var essentialKinds = map[string]bool{"sandbox.stop": true, "daemon.stop": true}

// DefaultAuditRetry is how often a stopped audit log (a full disk) is
// tried again.
const DefaultAuditRetry = 5 * time.Second

// writeAudit records e, in the reserve if it is essential.
func (m *Manager) writeAudit(ctx context.Context, e audit.Entry, essential bool) error {
	var err error
	if essential || essentialKinds[e.Kind] {
		_, err = m.cfg.Audit.RecordEssential(ctx, e)
	} else {
		_, err = m.cfg.Audit.Record(ctx, e)
	}
	return err
}

// retryAudit restarts a stopped audit log (throttled: audit.Retry).
func (m *Manager) retryAudit() {
	if m.auditRetry != nil {
		m.auditRetry.Try()
	}
}

// startAuditRetry tries a stopped log every AuditRetry until Shutdown.
func (m *Manager) startAuditRetry() {
	if m.cfg.Audit == nil {
		return
	}
	every := m.cfg.AuditRetry
	if every <= 0 {
		every = DefaultAuditRetry
	}
	m.auditRetry.Start(every)
}

func (m *Manager) stopAuditRetry() {
	if m.auditRetry != nil {
		m.auditRetry.Stop()
	}
}
