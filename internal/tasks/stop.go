package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/bundle"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/store"
)

// Names in a task's directory. A diff's work directory and a kept diff's
// temporary file are the daemon's own while it runs: any found at start
// were left by a daemon that was killed.
const (
	keptDiffName    = "stopped-diff.json"
	keptDiffTemp    = "stopped-diff-*.tmp"
	diffWorkPattern = "work-*"
)

// cleanLeftovers removes the diff copies and temporary files that a
// killed daemon left in the task directories.
func (tk *Tasks) cleanLeftovers() {
	if tk.cfg.Dir == "" {
		return
	}
	for _, pat := range []string{diffWorkPattern, keptDiffTemp} {
		left, _ := filepath.Glob(filepath.Join(tk.cfg.Dir, "t-*", pat))
		for _, p := range left {
			if err := os.RemoveAll(p); err != nil {
				tk.c.Logf("remove %s (left by a killed daemon): %v", p, err)
			}
		}
		if len(left) > 0 {
			tk.c.Logf("removed %d %s left in task directories by a killed daemon", len(left), pat)
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

// keepDiff takes the diff of an open task whose sandbox is stopping
// (it is no longer live: nothing new runs in it) and keeps it in the
// task's directory. A paused sandbox is thawed first: its files are read
// through its agent, which is frozen with it. Returns what goes into the
// sandbox.stop event.
func (tk *Tasks) keepDiff(ctx context.Context, ev hook.StopEvent) map[string]any {
	sb, reason := ev.Sandbox, ev.Reason
	rec, err := tk.c.Store().GetTask(ctx, ev.TaskID)
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
	if p, ok := sb.(runtime.Pauser); ok && ev.Prev == sandbox.Paused {
		err = p.Resume(ctx)
	}
	if err == nil {
		f, ok := sb.(runtime.Files)
		if !ok {
			err = fmt.Errorf("backend %s has no file access: %w", sb.Info().Backend, errdefs.ErrUnsupported)
		} else {
			var d *Diff
			if d, err = tk.diffFiles(ctx, f, rec, &sp); err == nil {
				kd.Diff = d.redacted(tk.c.Redactor())
			}
		}
	}
	if err != nil {
		kd.Error = err.Error()
		tk.c.Logf("task %s: its diff could not be taken as its sandbox stopped (%s): %v", rec.ID, reason, err)
	}
	kd.Taken = time.Now().UTC()
	if werr := tk.writeKeptDiff(rec.ID, kd); werr != nil {
		tk.c.Logf("task %s: keep its diff: %v", rec.ID, werr)
		return map[string]any{"diff_error": werr.Error()}
	}
	if kd.Error != "" {
		return map[string]any{"diff_error": kd.Error}
	}
	return map[string]any{"diff_kept": len(kd.Diff.Files)}
}

func (tk *Tasks) writeKeptDiff(taskID string, kd *keptDiff) error {
	b, err := json.Marshal(kd)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(tk.dir(taskID), keptDiffTemp)
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
		err = os.Rename(f.Name(), filepath.Join(tk.dir(taskID), keptDiffName))
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}

// workspaceGone reports whether an open task's sandbox has stopped, and
// then what was kept of its workspace (d, nil if nothing). A sandbox that
// is still stopping (its diff being taken) is a conflict: try again.
func (tk *Tasks) workspaceGone(ctx context.Context, rec *store.Task) (*WorkspaceGone, *Diff, error) {
	if _, live := tk.c.Live(rec.SandboxID); live {
		return nil, nil, nil
	}
	sbRec, err := tk.c.Store().GetSandbox(ctx, rec.SandboxID)
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
	b, err := os.ReadFile(filepath.Join(tk.dir(rec.ID), keptDiffName))
	switch {
	case errors.Is(err, os.ErrNotExist):
		g.DiffError = "no diff was taken as the sandbox stopped"
		if sbRec.StopReason == sandbox.StopLost {
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
