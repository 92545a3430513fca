package manager

import (
	"context"
	"sync/atomic"
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

// auditRetry tries to restart a stopped audit log, at most once a second
// (the health endpoint and every refused request ask), and records the
// outage once it can; then work is taken again, without a restart.
type auditRetry struct {
	last atomic.Int64 // unix nanoseconds of the last try
	stop chan struct{}
}

func (m *Manager) retryAudit() {
	if m.cfg.Audit == nil || m.cfg.Audit.Err() == nil {
		return
	}
	now := time.Now().UnixNano()
	last := m.auditRetry.last.Load()
	if now-last < int64(time.Second) || !m.auditRetry.last.CompareAndSwap(last, now) {
		return
	}
	if err := m.cfg.Audit.Recover(context.Background()); err != nil {
		m.cfg.Logf("audit log still stopped: %v", err)
		return
	}
	m.cfg.Logf("audit log running again (the outage is on the record)")
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
	stop := make(chan struct{})
	m.auditRetry.stop = stop
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				m.retryAudit()
			}
		}
	}()
}

func (m *Manager) stopAuditRetry() {
	if m.auditRetry.stop != nil {
		close(m.auditRetry.stop)
		m.auditRetry.stop = nil
	}
}
