package manager

import (
	"context"
	"time"
)

// OneShotIdle is how long a one-shot sandbox waits for its command: a
// client that dies between the create and the exec leaves nothing for
// longer ('airlock run' uploads its workspace in between).
var OneShotIdle = time.Minute

// armOneShot destroys one-shot sandbox id if no command was asked for
// within OneShotIdle.
func (m *Manager) armOneShot(id string, ls *live) {
	time.AfterFunc(OneShotIdle, func() {
		m.mu.Lock()
		idle := m.live[id] == ls && !ls.execd
		m.mu.Unlock()
		if idle {
			m.rec.BestEffort("sandbox "+id+": destroy the idle one-shot sandbox", m.DestroyAsync(context.Background(), id))
		}
	})
}

// endOneShot destroys a one-shot sandbox once its first command ended
// (x got as far as the sandbox), without waiting for the teardown: the
// exec's answer is what its caller waits for.
func (m *Manager) endOneShot(ctx context.Context, x *execRun) {
	if x.ls == nil || !x.ls.oneShot || x.req.Background {
		return
	}
	m.rec.BestEffort("sandbox "+x.id+": destroy the one-shot sandbox", m.DestroyAsync(context.WithoutCancel(ctx), x.id))
}
