package manager

import (
	"context"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/sandbox"
)

// What a sandbox's time to live ending does: it is destroyed (stopped as
// expired), unless it was created to pause then (PauseOnExpiry, the E2B
// door's onTimeout "pause"). Such a sandbox is frozen as Pause freezes
// it and stays paused, with no timer of its own, until it is resumed or
// destroyed; the daemon's maximum lifetime still destroys it, paused or
// not, since nothing else bounds a paused sandbox's hold on the host.

// expiry is a live sandbox's rule for the end of its time to live.
type expiry struct {
	pause bool          // pause, not destroy (CreateRequest.PauseOnExpiry)
	ttl   time.Duration // the create's: a resume from an expiry pause runs it again
	// paused: the sandbox is paused because its time to live ended (not
	// by Pause), so Resume gives it a new time to live.
	paused bool
}

// checkExpiry refuses a pause on expiry the sandbox's backend cannot do
// (fail closed: never a destroy where a pause was asked for).
func checkExpiry(req sandbox.CreateRequest, sb runtime.Sandbox) error {
	if _, ok := sb.(runtime.Pauser); req.PauseOnExpiry && !ok {
		return fmt.Errorf("a pause when the sandbox's time to live ends: this backend cannot pause: %w", errdefs.ErrUnsupported)
	}
	return nil
}

// armAt starts sandbox ls's timer for time at; m.mu held.
func (m *Manager) armAt(ls *live, at time.Time) {
	id := ls.rec.ID
	ls.ttl = time.AfterFunc(time.Until(at), func() { m.expire(id) })
}

// expire is the timer's work: sandbox id's time is up. It is paused if
// it was made to pause then, else (and at the maximum lifetime)
// destroyed as expired.
func (m *Manager) expire(id string) {
	if m.pauseExpired(id) {
		return
	}
	m.cfg.Logf("sandbox %s expired", id)
	m.rec.BestEffort("sandbox "+id+": stop it as expired", m.stop(context.Background(), id, sandbox.StopExpired))
}

// lifeLimit is when the maximum lifetime ends sandbox ls (ok false:
// there is none).
func (m *Manager) lifeLimit(ls *live) (time.Time, bool) {
	if ls.maxLife <= 0 {
		return time.Time{}, false
	}
	return ls.rec.Created.Add(ls.maxLife), true
}

// pauseExpired pauses sandbox id at the end of its time to live, when
// it was made to pause then; false: it is to be destroyed (not made to
// pause, or its maximum lifetime is over). A timer that fires early (or
// whose time to live was set again meanwhile) is armed again instead.
func (m *Manager) pauseExpired(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	ls, ok := m.live[id]
	if !ok || !ls.onExpiry.pause {
		return false
	}
	now := time.Now()
	limit, bounded := m.lifeLimit(ls)
	if bounded && !now.Before(limit) {
		return false
	}
	if ls.rec.Expires == nil || now.Before(*ls.rec.Expires) {
		m.armTTL(ls) // (none: a timer its SetTTL stopped too late)
		return true
	}
	switch ls.state {
	case sandbox.Running:
		p, _ := ls.sb.(runtime.Pauser) // checked at create (checkExpiry)
		if p == nil {
			return false
		}
		if err := p.Pause(context.Background()); err != nil {
			m.cfg.Logf("sandbox %s: pause at the end of its time to live: %v", id, err)
			return false
		}
		_ = ls.transition(sandbox.Paused) // Running may pause
	case sandbox.Paused: // paused by hand before: it stays so
	default: // being reset or finished: try again shortly
		ls.ttl = time.AfterFunc(time.Second, func() { m.expire(id) })
		return true
	}
	ls.onExpiry.paused = true
	ls.rec.State = sandbox.Paused.String()
	ls.ttl = nil
	if bounded {
		m.armAt(ls, limit)
	}
	rec := *ls.rec
	m.rec.BestEffort("sandbox "+id+": record its pause", m.cfg.Store.UpdateSandbox(context.Background(), &rec))
	m.rec.BestEffort("sandbox "+id+": record sandbox.pause", m.rec.Record(sandbox.WithActor(context.Background(), "airlock"), audit.Entry{SandboxID: id, TaskID: ls.taskID, Kind: "sandbox.pause",
		Payload: map[string]any{"reason": "timeout", "expired": rec.Expires}}))
	return true
}

// resumedFromExpiry gives a sandbox its create's time to live again,
// from now, when it was paused because that time ended (bounded by the
// maximum lifetime), as E2B's resume starts a new timeout; m.mu held.
// It returns the new end, for the record (nil: unchanged or none).
func (m *Manager) resumedFromExpiry(ls *live) *time.Time {
	if !ls.onExpiry.paused {
		return nil
	}
	ls.onExpiry.paused = false
	var exp *time.Time
	if ls.onExpiry.ttl > 0 {
		e := time.Now().UTC().Add(ls.onExpiry.ttl)
		exp = &e
	}
	if limit, ok := m.lifeLimit(ls); ok && (exp == nil || exp.After(limit)) {
		limit = limit.UTC()
		exp = &limit
	}
	ls.rec.Expires = exp
	m.armTTL(ls)
	return exp
}
