package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/bundle"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
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
	var sbs []*store.Sandbox
	for _, state := range []string{store.StateRunning, "paused"} {
		l, err := m.cfg.Store.ListSandboxes(ctx, state)
		if err != nil {
			return err
		}
		sbs = append(sbs, l...)
	}
	execs, err := m.cfg.Store.UnendedExecs(ctx)
	if err != nil {
		return err
	}
	bySandbox := map[string][]*store.Exec{}
	for _, e := range execs {
		bySandbox[e.SandboxID] = append(bySandbox[e.SandboxID], e)
	}
	seen := map[string]bool{}
	for _, sb := range sbs {
		seen[sb.ID] = true
	}
	// Commands still "running" in a sandbox already stopped (left by a
	// daemon from before this reaping).
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
			return err
		}
		sbs = append(sbs, sb)
	}
	for _, sb := range sbs {
		lost := sb.State != store.StateStopped
		taskID := sb.Labels["task"]
		for _, e := range bySandbox[sb.ID] {
			if err := m.record(ctx, audit.Entry{SandboxID: sb.ID, TaskID: taskID, ExecID: e.ID, Kind: "exec.end",
				Payload: map[string]any{"reason": StopLost, "error": lostExecError, "ended": now}}); err != nil {
				return err
			}
			if err := m.cfg.Store.FinishExec(ctx, e.ID, now, nil, lostExecError); err != nil && !errors.Is(err, errdefs.ErrConflict) {
				return err
			}
		}
		if lost {
			if err := m.record(ctx, audit.Entry{SandboxID: sb.ID, TaskID: taskID, Kind: "sandbox.stop", Payload: map[string]any{"reason": StopLost}}); err != nil {
				return err
			}
		}
	}
	ids, err := m.cfg.Store.MarkRunningStopped(ctx, StopLost, now)
	if err != nil {
		return err
	}
	if len(ids) > 0 || len(execs) > 0 {
		m.cfg.Logf("%d sandboxes and %d commands of a previous daemon were lost: %s", len(ids), len(execs), strings.Join(ids, " "))
	}
	return nil
}

// Names in a task's directory. A diff's work directory and a kept diff's
// temporary file are the daemon's own while it runs: any found at start
// were left by a daemon that was killed.
const (
	keptDiffName    = "stopped-diff.json"
	keptDiffTemp    = "stopped-diff-*.tmp"
	diffWorkPattern = "work-*"
)

// cleanTaskLeftovers removes the diff copies and temporary files that a
// killed daemon left in the task directories.
func (m *Manager) cleanTaskLeftovers() {
	if m.cfg.TaskDir == "" {
		return
	}
	for _, pat := range []string{diffWorkPattern, keptDiffTemp} {
		left, _ := filepath.Glob(filepath.Join(m.cfg.TaskDir, "t-*", pat))
		for _, p := range left {
			if err := os.RemoveAll(p); err != nil {
				m.cfg.Logf("remove %s (left by a killed daemon): %v", p, err)
			}
		}
		if len(left) > 0 {
			m.cfg.Logf("removed %d %s left in task directories by a killed daemon", len(left), pat)
		}
	}
}

// StopDiffTimeout bounds taking a task's diff as its sandbox stops.
const StopDiffTimeout = time.Minute

// keptDiff is what a task keeps of its workspace when its sandbox stops
// before the task is finished.
type keptDiff struct {
	Diff   *Diff     `json:"diff,omitempty"` // redacted
	Error  string    `json:"error,omitempty"`
	Reason string    `json:"reason"`
	Taken  time.Time `json:"taken"`
}

// keepTaskDiff takes the diff of an open task whose sandbox is stopping
// (it is no longer in m.live: nothing new runs in it) and keeps it in the
// task's directory. A paused sandbox is thawed first: its files are read
// through its agent, which is frozen with it. Returns what goes into the
// sandbox.stop event.
func (m *Manager) keepTaskDiff(ctx context.Context, ls *live, sb runtime.Sandbox, paused bool, reason string) map[string]any {
	rec, err := m.cfg.Store.GetTask(ctx, ls.taskID)
	if err != nil || rec.State != "open" {
		return nil // finished (its bundle has it), or not yet a task
	}
	var sp taskSpec
	if err := json.Unmarshal(rec.Spec, &sp); err != nil {
		return map[string]any{"diff_error": err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, StopDiffTimeout)
	defer cancel()
	kd := &keptDiff{Reason: reason}
	if p, ok := sb.(runtime.Pauser); ok && paused {
		err = p.Resume(ctx)
	}
	if err == nil {
		f, ok := sb.(runtime.Files)
		if !ok {
			err = fmt.Errorf("backend %s has no file access: %w", sb.Info().Backend, errdefs.ErrUnsupported)
		} else {
			var d *Diff
			if d, err = m.diffFiles(ctx, f, rec, &sp); err == nil {
				kd.Diff = d.redacted(m.cfg.Redactor)
			}
		}
	}
	if err != nil {
		kd.Error = err.Error()
		m.cfg.Logf("task %s: its diff could not be taken as its sandbox stopped (%s): %v", rec.ID, reason, err)
	}
	kd.Taken = time.Now().UTC()
	if werr := m.writeKeptDiff(rec.ID, kd); werr != nil {
		m.cfg.Logf("task %s: keep its diff: %v", rec.ID, werr)
		return map[string]any{"diff_error": werr.Error()}
	}
	if kd.Error != "" {
		return map[string]any{"diff_error": kd.Error}
	}
	return map[string]any{"diff_kept": len(kd.Diff.Files)}
}

func (m *Manager) writeKeptDiff(taskID string, kd *keptDiff) error {
	b, err := json.Marshal(kd)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(m.taskDir(taskID), keptDiffTemp)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(m.taskDir(taskID), keptDiffName))
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}

// workspaceGone reports whether an open task's sandbox has stopped, and
// then what was kept of its workspace (d, nil if nothing). A sandbox that
// is still stopping (its diff being taken) is a conflict: try again.
func (m *Manager) workspaceGone(ctx context.Context, rec *store.Task) (*WorkspaceGone, *Diff, error) {
	m.mu.Lock()
	_, live := m.live[rec.SandboxID]
	m.mu.Unlock()
	if live {
		return nil, nil, nil
	}
	sbRec, err := m.cfg.Store.GetSandbox(ctx, rec.SandboxID)
	if err != nil {
		return nil, nil, err
	}
	if sbRec.State != store.StateStopped {
		return nil, nil, fmt.Errorf("task %s: its sandbox is stopping (its diff is being kept): try again in a minute: %w", rec.ID, errdefs.ErrConflict)
	}
	g := &WorkspaceGone{Reason: sbRec.StopReason}
	if sbRec.Stopped != nil {
		g.Stopped = *sbRec.Stopped
	}
	var kd keptDiff
	b, err := os.ReadFile(filepath.Join(m.taskDir(rec.ID), keptDiffName))
	switch {
	case errors.Is(err, os.ErrNotExist):
		g.DiffError = "no diff was taken as the sandbox stopped"
		if sbRec.StopReason == StopLost {
			g.DiffError = "the daemon that ran it went away"
		}
	case err != nil:
		g.DiffError = err.Error()
	case json.Unmarshal(b, &kd) != nil:
		g.DiffError = "the kept diff does not read: " + keptDiffName + " is damaged"
	case kd.Diff == nil:
		g.DiffError = kd.Error
	default:
		g.DiffKept = true
	}
	g.Note = fmt.Sprintf("the task's sandbox stopped (%s) at %s, before the task was finished: no tests ran on its final state", g.Reason, g.Stopped.Format(time.RFC3339))
	if g.DiffKept {
		g.Note += "; the patch is the one taken as the sandbox stopped"
		return g, kd.Diff, nil
	}
	g.Note += "; the agent's changes were lost with it (" + g.DiffError + "): the patch is empty"
	return g, nil, nil
}

// WorkspaceGone says why a task's workspace was gone when it was
// finished or exported (see bundle.WorkspaceGone).
type WorkspaceGone = bundle.WorkspaceGone

// ShutdownParallel is how many sandboxes Shutdown stops at once: each
// stop of a task's sandbox may take its diff (up to StopDiffTimeout), and
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
