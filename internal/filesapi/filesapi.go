// Package filesapi is the policed file API, a feature module of the
// sandbox core: the agent's access to a sandbox's files (the API's and
// the E2B door's callers) under the same policy as its commands (write
// scope, secrets), every write and refusal on the audit record. The
// daemon's own uses (checkout, diff, snapshot) go around it, through
// hook.Core.Files.
package filesapi

import (
	"context"
	"fmt"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// API is the module. Attach it to the manager (Config.Modules) before
// any call: unattached, every call is refused as unsupported.
type API struct{ c hook.Core }

// New returns the module, not yet attached.
func New() *API { return &API{} }

// Name is the module's name.
func (*API) Name() string { return "files" }

// Attach keeps the core's handle.
func (a *API) Attach(c hook.Core) error {
	a.c = c
	return nil
}

// AgentFiles gives a running sandbox's files under its policy: each
// operation judged on its clean path (and a tar's on every entry),
// lifted by the approvals modules, refused while its task is being
// finished (writes), recorded. A sandbox that is not running is the
// core's error (stopped, paused: a conflict; unknown: not found).
func (a *API) AgentFiles(ctx context.Context, id string) (runtime.Files, error) {
	if a.c == nil {
		return nil, fmt.Errorf("the file API is not attached to a sandbox core: %w", errdefs.ErrUnsupported)
	}
	f, err := a.c.Files(ctx, id)
	if err != nil {
		return nil, err
	}
	li, ok := a.c.Live(id)
	if !ok {
		return nil, fmt.Errorf("sandbox %s is stopped: %w", id, errdefs.ErrConflict)
	}
	return &policedFiles{Files: f, c: a.c, id: id, taskID: li.TaskID, pol: li.Policy}, nil
}

// policedFiles is one sandbox's files under its policy (as made at
// create: a live sandbox's policy does not change).
type policedFiles struct {
	runtime.Files
	c      hook.Core
	id     string
	taskID string
	pol    *policy.Policy
}

func (f *policedFiles) check(ctx context.Context, op, p string, write bool) error {
	_, err := f.decide(ctx, op, p, write, true)
	return err
}

// decide is check, which records an allowed write only when record is
// set; it returns the break-glass that allowed it, if one did. A write
// while the task is being finished is refused before the policy is
// asked: the task's files are being read for its result.
func (f *policedFiles) decide(ctx context.Context, op, p string, write, record bool) (string, error) {
	if write {
		if s, _ := f.c.State(ctx, f.id); s == sandbox.Finishing {
			return "", sandbox.FinishingError(f.taskID)
		}
	}
	cmd := policy.Command{Argv: []string{"files:" + op, p}, Classes: []policy.Class{policy.Read}, Why: "file API " + op}
	if write {
		cmd.Classes = []policy.Class{policy.Write}
		cmd.Writes = []string{p}
	}
	d := f.pol.Decide(f.pol.FileAnalysis(cmd))
	if err := f.c.Lift(ctx, f.id, d); err != nil {
		return "", err
	}
	if d.BreakGlass != "" {
		f.c.Logf("BREAK-GLASS %s: sandbox %s file %s %s by override", d.BreakGlass, f.id, op, p)
	}
	if d.Action == policy.Allow {
		if write && record {
			return d.BreakGlass, f.record(ctx, "file."+op, map[string]any{"path": p, "break_glass": d.BreakGlass})
		}
		return d.BreakGlass, nil
	}
	_ = f.record(ctx, "file.refused", map[string]any{"op": op, "path": p, "decision": sandbox.DecisionPayload(d)})
	msg := d.Reason
	if d.Action == policy.Ask {
		msg += " (file operations are not held for approval: run the change as a command)"
	}
	return "", sandbox.NewPolicyError("policy_denied", msg, d, "")
}

// record appends one event of this sandbox (record before act: an
// error means it is not recorded).
func (f *policedFiles) record(ctx context.Context, kind string, payload map[string]any) error {
	return f.c.Record(ctx, audit.Entry{SandboxID: f.id, TaskID: f.taskID, Kind: kind, Payload: payload})
}
