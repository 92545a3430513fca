package manager

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/store"
)

// Every record that can carry agent-chosen text (an exec's argv, working
// directory, variable names, error and file activity; a sandbox's labels;
// a task's prompt, repository and test command; an approval's prompt; a
// review bundle's contents) is redacted as a whole, not field by field: a
// secret put in a field nobody thought of (the cwd, issue 17.2) is hidden
// like one in argv. Exec records are redacted before they are stored;
// every record is redacted again when it is shown (a secret learned after
// the record was written is hidden too), and the bundle before it is
// written. Records the daemon must act on as they were asked (a task's
// test command, an approval's line) are stored as they are, and shown
// redacted.

// scrubbed returns a copy of v with every string in it, map keys
// included, passed through the redactor: one JSON round trip, so that a
// field added later is covered without anyone remembering it. Fields
// that JSON does not carry (json:"-") are not copied: v's type must not
// have any that matter. A record that cannot be redacted is an error (the
// caller fails closed), never shown as it was.
func scrubbed[T any](red sandbox.Redactor, v *T) (*T, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("redact record: %w", err)
	}
	out := new(T)
	if err := json.Unmarshal(red.JSON(b), out); err != nil {
		// A secret in a number became a string marker: a field of the
		// record is the secret itself.
		return nil, fmt.Errorf("redact record: a secret in a field that cannot hold a marker: %w", errdefs.ErrInvalid)
	}
	return out, nil
}

// putExec stores a new exec record, redacted.
func (m *Manager) putExec(ctx context.Context, rec *store.Exec) error {
	r, err := scrubbed(m.cfg.Redactor, rec)
	if err != nil {
		return err
	}
	// JSON gives a nil raw message back as "null": keep it absent.
	if rec.Status == nil {
		r.Status = nil
	}
	if rec.Decision == nil {
		r.Decision = nil
	}
	return m.cfg.Store.PutExec(ctx, r)
}

// endExec stores how an exec ended, its status and error redacted.
func (m *Manager) endExec(ctx context.Context, id string, ended time.Time, status json.RawMessage, errMsg string) error {
	if status != nil {
		status = m.cfg.Redactor.JSON(status)
	}
	return m.cfg.Store.FinishExec(ctx, id, ended, status, m.cfg.Redactor.String(errMsg))
}

// shownExec is an exec record as the API and the bundle show it.
func (m *Manager) shownExec(rec *store.Exec) (*sandbox.Exec, error) {
	return scrubbed(m.cfg.Redactor, execView(rec))
}

// shownSandbox is a sandbox record as the API shows it.
func (m *Manager) shownSandbox(rec *store.Sandbox) (*sandbox.Sandbox, error) {
	return scrubbed(m.cfg.Redactor, view(rec))
}

func execView(e *store.Exec) *sandbox.Exec {
	v := &sandbox.Exec{ID: e.ID, SandboxID: e.SandboxID, Argv: e.Argv, Cwd: e.Cwd, EnvNames: e.EnvNames, Started: e.Started, Ended: e.Ended, Error: e.Error,
		Policy: sandbox.ExecPolicyOf(e.Decision)}
	if len(e.Status) > 0 {
		var st runtime.ExitStatus
		if json.Unmarshal(e.Status, &st) == nil {
			v.Status = &st
		}
	}
	return v
}

// execs lists a sandbox's exec records, oldest first, as the API shows
// them (Core.Execs).
func (m *Manager) execs(ctx context.Context, id string) ([]*sandbox.Exec, error) {
	if _, err := m.cfg.Store.GetSandbox(ctx, id); err != nil {
		return nil, err
	}
	recs, err := m.cfg.Store.ListExecs(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make([]*sandbox.Exec, 0, len(recs))
	for _, r := range recs {
		v, err := m.shownExec(r)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// getExec is the stored record of exec execID of sandbox id (not found:
// unknown, or another sandbox's).
func (m *Manager) getExec(ctx context.Context, id, execID string) (*store.Exec, error) {
	e, err := m.cfg.Store.GetExec(ctx, execID)
	if err != nil {
		return nil, err
	}
	if e.SandboxID != id {
		return nil, fmt.Errorf("exec %s not found in sandbox %s: %w", execID, id, errdefs.ErrNotFound)
	}
	return e, nil
}
