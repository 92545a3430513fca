package manager

import (
	"fmt"
	"sync/atomic"
)

// What the core writes (the store, the audit log) follows one of two
// rules, each a helper here, so that no write's error is dropped:
//
//   - recordFirst, record before act: the write is what lets the act
//     happen (an exec's start, a sandbox's record, a file write's
//     "started"); its failure is the caller's error, returned before the
//     act: what is not on record does not happen.
//   - bestEffort, an event after its act: the act is done and stays done
//     (a sandbox stopped, an exec ended, output checkpointed), so the
//     failure cannot undo it; it is logged and counted, never ignored.

// recordFirst returns err, the write an act depends on, named by what
// ("": as it is); the caller acts only when it is nil.
func recordFirst(what string, err error) error {
	if err == nil || what == "" {
		return err
	}
	return fmt.Errorf("%s: %w", what, err)
}

// writeLog counts the writes bestEffort saw fail.
type writeLog struct{ lost atomic.Int64 }

// bestEffort logs and counts err, the failed write of what was already
// done (what names it: "sandbox ID: record its stop").
func (m *Manager) bestEffort(what string, err error) {
	if err == nil {
		return
	}
	m.writes.lost.Add(1)
	m.cfg.Logf("%s: %v", what, err)
}
