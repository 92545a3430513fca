// Package redacted is the daemon's store of sandbox and exec records seen
// through the redactor: every record that can carry agent-chosen text
// is redacted as a whole on its way in and again on its way out, so a
// secret learned after the record was written is hidden too. The core
// (internal/manager) reads and writes its records through it.
package redacted

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/sandbox"
	"github.com/airlock-dev/airlock/internal/store"
)

// Records is the store with the redactor its records pass through.
type Records struct {
	Store    *store.Store
	Redactor sandbox.Redactor
}

// Every record that can carry agent-chosen text (an exec's argv, working
// directory, variable names, error and file activity; a sandbox's labels;
// a task's prompt, repository and test command; an approval's prompt; a
// review bundle's contents) is redacted as a whole, not field by field: a
// secret put in a field nobody thought of (the cwd, issue 17.2) is hidden
// like one in argv. Only the daemon's own words are kept (field names,
// times, ids and states: Scrubbed), since any caller can teach the
// redactor a value. Exec records are redacted before they are stored;
// every record is redacted again when it is shown (a secret learned after
// the record was written is hidden too), and the bundle before it is
// written. Records the daemon must act on as they were asked (a task's
// test command, an approval's line) are stored as they are, and shown
// redacted.

// PutExec stores a new exec record, redacted but for its ids (the
// daemon's: a value taught as a secret that is a sandbox's id must not
// lose that sandbox its records).
func (r Records) PutExec(ctx context.Context, rec *store.Exec) error {
	out, err := Scrubbed(r.Redactor, rec)
	if err != nil {
		return err
	}
	out.ID, out.SandboxID = rec.ID, rec.SandboxID
	return r.Store.PutExec(ctx, out)
}

// EndExec stores how an exec ended, its status and error redacted.
func (r Records) EndExec(ctx context.Context, id string, ended time.Time, status json.RawMessage, errMsg string) error {
	if status != nil {
		var err error
		if status, err = RawJSON(r.Redactor, status); err != nil {
			return err
		}
	}
	return r.Store.FinishExec(ctx, id, ended, status, r.Redactor.String(errMsg))
}

// ShownExec is an exec record as the API and the bundle show it.
func (r Records) ShownExec(rec *store.Exec) (*sandbox.Exec, error) {
	return Scrubbed(r.Redactor, ExecView(rec))
}

// ShownSandbox is a sandbox record as the API shows it.
func (r Records) ShownSandbox(rec *store.Sandbox) (*sandbox.Sandbox, error) {
	return Scrubbed(r.Redactor, View(rec))
}

func ExecView(e *store.Exec) *sandbox.Exec {
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

// Execs lists a sandbox's exec records, oldest first, as the API shows
// them (hook.Core.Execs).
func (r Records) Execs(ctx context.Context, id string) ([]*sandbox.Exec, error) {
	if _, err := r.Store.GetSandbox(ctx, id); err != nil {
		return nil, err
	}
	recs, err := r.Store.ListExecs(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make([]*sandbox.Exec, 0, len(recs))
	for _, e := range recs {
		v, err := r.ShownExec(e)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// GetExec is the stored record of exec execID of sandbox id (not found:
// unknown, or another sandbox's).
func (r Records) GetExec(ctx context.Context, id, execID string) (*store.Exec, error) {
	e, err := r.Store.GetExec(ctx, execID)
	if err != nil {
		return nil, err
	}
	if e.SandboxID != id {
		return nil, fmt.Errorf("exec %s not found in sandbox %s: %w", execID, id, errdefs.ErrNotFound)
	}
	return e, nil
}

// Spec is what the store keeps of a sandbox's spec.
type Spec struct {
	Limits   runtime.Limits `json:"limits"`
	EnvNames []string       `json:"env_names,omitempty"`
	Policy   *policy.Policy `json:"policy,omitempty"`
}

// View is a sandbox record as the API shows it, not redacted (see
// ShownSandbox).
func View(rec *store.Sandbox) *sandbox.Sandbox {
	v := &sandbox.Sandbox{
		ID: rec.ID, Project: rec.Project, State: rec.State, Backend: rec.Backend, Template: rec.Template, TemplateVersion: rec.TemplateVersion,
		Labels: rec.Labels, Created: rec.Created, Expires: rec.Expires, Stopped: rec.Stopped, StopReason: rec.StopReason,
	}
	var sp Spec
	if json.Unmarshal(rec.Spec, &sp) == nil {
		v.Limits = sp.Limits
		if sp.Policy != nil {
			v.Policy, v.PolicySources = sp.Policy.Version(), sp.Policy.Sources
		}
	}
	_ = json.Unmarshal(rec.Isolation, &v.Isolation)
	return v
}
