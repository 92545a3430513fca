package manager

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// stop destroys a live sandbox and records why, in steps: take it out of
// the live set (and its network), the modules' StopHooks, Destroy, then
// its sandbox.stop event and record.
func (m *Manager) stop(ctx context.Context, id, reason string) error {
	ls, sb, prev, release := m.takeLive(id)
	if ls == nil {
		if _, err := m.cfg.Store.GetSandbox(ctx, id); err != nil {
			return err
		}
		// already stopped, or being stopped (a one-shot sandbox's end, a
		// second delete): deleting twice is fine, once it is stopped
		return m.awaitStop(ctx, id)
	}
	defer release()
	if m.hooks.Network != nil {
		m.hooks.Network.RemoveSandbox(id)
	}
	return m.teardown(ctx, id, reason, ls, sb, prev)
}

// teardown is the rest of stop once the sandbox is out of the live set:
// the StopHooks, Destroy, its sandbox.stop event and record.
func (m *Manager) teardown(ctx context.Context, id, reason string, ls *live, sb runtime.Sandbox, prev sandbox.State) error {
	if ls.quota != nil {
		defer ls.quota() // its project's quotas, once it is torn down
	}
	payload := map[string]any{"reason": reason}
	for _, h := range m.hooks.Stop {
		for k, v := range h.Hook.OnStop(context.WithoutCancel(ctx), hook.StopEvent{SandboxID: id, TaskID: ls.taskID, Reason: reason, Prev: prev, Sandbox: sb}) {
			payload[k] = v
		}
	}
	var derr error
	if sb != nil {
		derr = sb.Destroy(ctx)
	}
	now := time.Now().UTC()
	m.mu.Lock()
	ls.rec.State, ls.rec.Stopped, ls.rec.StopReason = "stopped", &now, reason
	rec := *ls.rec
	m.mu.Unlock()
	if derr != nil {
		payload["error"] = derr.Error()
	}
	m.rec.BestEffort("sandbox "+id+": record its stop", m.rec.Record(context.WithoutCancel(ctx), audit.Entry{SandboxID: id, TaskID: ls.taskID, Kind: "sandbox.stop", Payload: payload}))
	if err := m.cfg.Store.UpdateSandbox(context.Background(), &rec); err != nil {
		return errors.Join(derr, err)
	}
	return derr
}

// takeLive takes a sandbox out of the live set (Stopped, its TTL
// stopped) and returns it (nil: not live), the backend sandbox to
// destroy (nil while a reset is under way: it cleans up itself), its
// state before, and release: its processes run until Destroy is done (a
// task's diff comes first), so its share of the host and its place
// under Caps.Sandboxes stay reserved until release.
func (m *Manager) takeLive(id string) (ls *live, sb runtime.Sandbox, prev sandbox.State, release func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ls, ok := m.live[id]
	if !ok {
		return nil, nil, prev, nil
	}
	delete(m.live, id)
	if ls.ttl != nil {
		ls.ttl.Stop()
	}
	if m.stopping == nil {
		m.stopping = map[string]chan struct{}{}
	}
	stopped := make(chan struct{})
	m.stopping[id] = stopped
	prev = ls.state
	_ = ls.transition(sandbox.Stopped) // legal from every live state
	if prev != sandbox.Resetting {
		sb = ls.sb
	}
	m.reserved.Pids += ls.cost.Pids
	m.reserved.Ptys += ls.cost.Ptys
	return ls, sb, prev, func() {
		m.mu.Lock()
		m.reserved.Pids -= ls.cost.Pids
		m.reserved.Ptys -= ls.cost.Ptys
		delete(m.stopping, id)
		m.mu.Unlock()
		close(stopped)
	}
}

// awaitStop waits until a teardown of id under way (takeLive's) has
// ended: a Destroy that finds the sandbox already leaving the live set
// answers once it is stopped, not before.
func (m *Manager) awaitStop(ctx context.Context, id string) error {
	m.mu.Lock()
	stopped := m.stopping[id]
	m.mu.Unlock()
	if stopped == nil {
		return nil
	}
	select {
	case <-stopped:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Destroy stops a sandbox; its record stays.
func (m *Manager) Destroy(ctx context.Context, id string) error {
	return m.stop(ctx, id, sandbox.StopDestroyed)
}

// DestroyAsync is Destroy answered once the sandbox is out of the live set
// and off its network (no command can start in it, and its share of the
// host stays reserved until its teardown ends); the teardown goes on in
// the background, recorded as Destroy's is, and Shutdown waits for it.
// It is why a one-shot 'airlock run' through the daemon exits without
// waiting the tens of milliseconds a teardown takes.
func (m *Manager) DestroyAsync(ctx context.Context, id string) error {
	ls, sb, prev, release := m.takeLive(id)
	if ls == nil {
		if _, err := m.cfg.Store.GetSandbox(ctx, id); err != nil {
			return err
		}
		return nil
	}
	m.mu.Lock()
	m.teardowns++
	m.mu.Unlock()
	if m.hooks.Network != nil {
		m.hooks.Network.RemoveSandbox(id)
	}
	go func() {
		defer func() {
			m.mu.Lock()
			m.teardowns--
			m.teardownsCond().Broadcast()
			m.mu.Unlock()
		}()
		defer release()
		err := m.teardown(context.WithoutCancel(ctx), id, sandbox.StopDestroyed, ls, sb, prev)
		m.rec.BestEffort("sandbox "+id+": background teardown", err)
	}()
	return nil
}

// Shutdown destroys every live sandbox (the daemon is stopping), a few
// at a time (ShutdownParallel); open tasks keep their diffs.
func (m *Manager) Shutdown(ctx context.Context) error {
	if m.hooks.Pool != nil {
		m.hooks.Pool.Drain(ctx) // no refill races the stops below
	}
	m.mu.Lock()
	ids := make([]string, 0, len(m.live))
	for id := range m.live {
		ids = append(ids, id)
	}
	m.mu.Unlock()
	sort.Strings(ids)
	if m.cfg.Audit != nil {
		defer m.cfg.Audit.Flush() // nothing recorded is lost at shutdown
	}
	m.rec.Stop()
	err := m.stopAll(ctx, ids, sandbox.StopShutdown)
	m.mu.Lock()
	for m.teardowns > 0 { // DestroyAsync's
		m.teardownsCond().Wait()
	}
	m.mu.Unlock()
	if m.hooks.Network != nil {
		m.hooks.Network.Close(ctx) // the refusal counts still open
	}
	return err
}

// teardownsCond is m.teardownsDone, made on first use (m.mu held).
func (m *Manager) teardownsCond() *sync.Cond {
	if m.teardownsDone == nil {
		m.teardownsDone = sync.NewCond(&m.mu)
	}
	return m.teardownsDone
}
