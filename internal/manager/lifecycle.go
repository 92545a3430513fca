package manager

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/store"
)

// What a daemon start does about its predecessor, and what a task keeps
// of a sandbox that stops before the task is finished.

// lostExecError is the error of an exec whose daemon went away while it ran.
const lostExecError = "lost: the daemon stopped before the command ended (its exit status is unknown)"

// reapLost ends what a previous daemon left running: its sandboxes died
// with it (stopped, "lost"), and so did their commands (ended, "lost").
// Both are recorded (exec.end and sandbox.stop, reason "lost") before
// the records change: a start that dies in between records them again
// rather than never.
func (m *Manager) reapLost(ctx context.Context) error {
	ctx = WithActor(ctx, "airlock")
	now := time.Now().UTC()
	sbs, bySandbox, n, err := m.leftRunning(ctx)
	if err != nil {
		return err
	}
	for _, sb := range sbs {
		if err := m.recordLost(ctx, sb, bySandbox[sb.ID], now); err != nil {
			return err
		}
	}
	ids, err := m.cfg.Store.MarkRunningStopped(ctx, StopLost, now)
	if err != nil {
		return err
	}
	if len(ids) > 0 || n > 0 {
		m.cfg.Logf("%d sandboxes and %d commands of a previous daemon were lost: %s", len(ids), n, strings.Join(ids, " "))
	}
	return nil
}

// leftRunning returns the sandboxes a previous daemon left running or
// paused, then those (already stopped) with commands still "running"
// (left by a daemon from before this reaping), the unended commands by
// sandbox, and how many there are.
func (m *Manager) leftRunning(ctx context.Context) ([]*store.Sandbox, map[string][]*store.Exec, int, error) {
	var sbs []*store.Sandbox
	for _, state := range []string{store.StateRunning, "paused"} {
		l, err := m.cfg.Store.ListSandboxes(ctx, state)
		if err != nil {
			return nil, nil, 0, err
		}
		sbs = append(sbs, l...)
	}
	execs, err := m.cfg.Store.UnendedExecs(ctx)
	if err != nil {
		return nil, nil, 0, err
	}
	bySandbox := map[string][]*store.Exec{}
	for _, e := range execs {
		bySandbox[e.SandboxID] = append(bySandbox[e.SandboxID], e)
	}
	seen := map[string]bool{}
	for _, sb := range sbs {
		seen[sb.ID] = true
	}
	var stopped []string
	for id := range bySandbox {
		if !seen[id] {
			stopped = append(stopped, id)
		}
	}
	sort.Strings(stopped)
	for _, id := range stopped {
		sb, err := m.cfg.Store.GetSandbox(ctx, id)
		if err != nil {
			return nil, nil, 0, err
		}
		sbs = append(sbs, sb)
	}
	return sbs, bySandbox, len(execs), nil
}

// recordLost records one sandbox's lost commands (exec.end, then their
// records) and, unless it was already stopped, its sandbox.stop.
func (m *Manager) recordLost(ctx context.Context, sb *store.Sandbox, execs []*store.Exec, now time.Time) error {
	taskID := sb.Labels["task"]
	for _, e := range execs {
		if err := m.record(ctx, audit.Entry{SandboxID: sb.ID, TaskID: taskID, ExecID: e.ID, Kind: "exec.end",
			Payload: map[string]any{"reason": StopLost, "error": lostExecError, "ended": now}}); err != nil {
			return err
		}
		if err := m.cfg.Store.FinishExec(ctx, e.ID, now, nil, lostExecError); err != nil && !errors.Is(err, errdefs.ErrConflict) {
			return err
		}
	}
	if sb.State == store.StateStopped {
		return nil
	}
	return m.record(ctx, audit.Entry{SandboxID: sb.ID, TaskID: taskID, Kind: "sandbox.stop", Payload: map[string]any{"reason": StopLost}})
}

// ShutdownParallel is how many sandboxes Shutdown stops at once: each
// stop of a task's sandbox may take its diff (up to tasks.StopDiffTimeout), and
// one after the other they could outlast a service manager's stop timeout.
const ShutdownParallel = 4

// stopAll stops the sandboxes ids, ShutdownParallel at a time.
func (m *Manager) stopAll(ctx context.Context, ids []string, reason string) error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	sem := make(chan struct{}, ShutdownParallel)
	for _, id := range ids {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := m.stop(ctx, id, reason); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("stop %s: %w", id, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
