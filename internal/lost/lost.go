// Package lost is what a daemon does at its start about its
// predecessor: the sandboxes and commands the store still lists as
// running died with the daemon that ran them. It ends them on the record
// (the audit log first, then the store) and holds nothing: the sandbox
// core calls End once, before it takes any work.
package lost

import (
	"context"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/store"
)

// Reason is the stop reason of a sandbox, and the end reason of a
// command, whose daemon went away.
const Reason = "lost"

// Recorder appends an event to the audit record (record before act: an
// error stops End before the store changes).
type Recorder func(ctx context.Context, e audit.Entry) error

// ExecError is the error of an exec whose daemon went away while it ran.
const ExecError = "lost: the daemon stopped before the command ended (its exit status is unknown)"

// End ends what a previous daemon left running: its sandboxes died with
// it (stopped, "lost"), and so did their commands (ended, "lost"). Both
// are recorded (exec.end and sandbox.stop, reason "lost") before the
// records change: a start that dies in between records them again
// rather than never.
func End(ctx context.Context, st *store.Store, record Recorder, logf func(string, ...any)) error {
	now := time.Now().UTC()
	sbs, bySandbox, n, err := leftRunning(ctx, st)
	if err != nil {
		return err
	}
	for _, sb := range sbs {
		if err := recordLost(ctx, st, record, sb, bySandbox[sb.ID], now); err != nil {
			return err
		}
	}
	ids, err := st.MarkRunningStopped(ctx, Reason, now)
	if err != nil {
		return err
	}
	if len(ids) > 0 || n > 0 {
		logf("%d sandboxes and %d commands of a previous daemon were lost: %s", len(ids), n, strings.Join(ids, " "))
	}
	return nil
}

// leftRunning returns the sandboxes a previous daemon left running or
// paused, then those (already stopped) with commands still "running"
// (left by a daemon from before this reaping), the unended commands by
// sandbox, and how many there are.
func leftRunning(ctx context.Context, st *store.Store) ([]*store.Sandbox, map[string][]*store.Exec, int, error) {
	var sbs []*store.Sandbox
	for _, state := range []string{store.StateRunning, "paused"} {
		l, err := st.ListSandboxes(ctx, state)
		if err != nil {
			return nil, nil, 0, err
		}
		sbs = append(sbs, l...)
	}
	execs, err := st.UnendedExecs(ctx)
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
		sb, err := st.GetSandbox(ctx, id)
		if err != nil {
			return nil, nil, 0, err
		}
		sbs = append(sbs, sb)
	}
	return sbs, bySandbox, len(execs), nil
}

// recordLost records one sandbox's lost commands (exec.end, then their
// records) and, unless it was already stopped, its sandbox.stop.
func recordLost(ctx context.Context, st *store.Store, record Recorder, sb *store.Sandbox, execs []*store.Exec, now time.Time) error {
	taskID := sb.Labels["task"]
	for _, e := range execs {
		if err := record(ctx, audit.Entry{SandboxID: sb.ID, TaskID: taskID, ExecID: e.ID, Kind: "exec.end",
			Payload: map[string]any{"reason": Reason, "error": ExecError, "ended": now}}); err != nil {
			return err
		}
		if err := st.FinishExec(ctx, e.ID, now, nil, ExecError); err != nil && !errors.Is(err, errdefs.ErrConflict) {
			return err
		}
	}
	if sb.State == store.StateStopped {
		return nil
	}
	return record(ctx, audit.Entry{SandboxID: sb.ID, TaskID: taskID, Kind: "sandbox.stop", Payload: map[string]any{"reason": Reason}})
}
