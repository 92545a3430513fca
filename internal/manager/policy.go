package manager

import (
	"context"
	"fmt"
	"slices"

	"github.com/airlock-dev/airlock/internal/hook"
	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/store"
)

// gate decides an exec before anything reaches the sandbox. It returns
// the decision to record when the command may run, or the error that
// stopped it (the refusal is recorded here).
func (m *Manager) gate(ctx context.Context, id string, ls *live, req sandbox.ExecRequest, taskTest bool, cwd string) (*policy.Decision, error) {
	a := ls.pol.AnalyzeArgv(req.Argv, cwd)
	if len(a.Secrets) > 0 {
		// Using a secret granted to this sandbox is not secret access.
		a = a.WithGranted(m.hooks.GrantedVars(ctx, id))
	}
	d := ls.pol.Decide(a)
	if taskTest && d.Action != policy.Allow {
		// The task's own test command was set by whoever started the task.
		d.Matches = append([]policy.Match{{Rule: "task:test", Action: policy.Allow, Command: -1, Reason: "the task's test command"}}, d.Matches...)
		d.Action, d.Reason = policy.Allow, "allowed: the task's test command"
	}
	if err := m.hooks.Lift(ctx, id, d); err != nil {
		return nil, err
	}
	if d.BreakGlass != "" {
		m.cfg.Logf("BREAK-GLASS %s: sandbox %s runs %q by override (%s)", d.BreakGlass, id, m.cfg.Redactor.String(a.Line), m.cfg.Redactor.String(d.Reason))
	}
	switch d.Action {
	case policy.Allow:
		return d, nil
	case policy.Deny:
		m.recordRefusal(ctx, id, req, cwd, d, d.Reason)
		return nil, sandbox.NewPolicyError("policy_denied", d.Reason, d, "")
	}
	return m.ask(ctx, id, ls, req, cwd, d)
}

// recordRefusal keeps a refused command in the exec record, with its
// decision, as a command that never started.
func (m *Manager) recordRefusal(ctx context.Context, id string, req sandbox.ExecRequest, cwd string, d *policy.Decision, msg string) {
	now := m.now()
	dj := mustJSON(d) // PutExec redacts it (redacted.RawJSON: values, not the field names)
	argv := make([]string, len(req.Argv))
	for i, a := range req.Argv {
		argv[i] = m.cfg.Redactor.String(a)
	}
	msg = m.cfg.Redactor.String(msg)
	rec := &store.Exec{ID: newExecID(), SandboxID: id, Argv: argv, Cwd: cwd, EnvNames: envNames(req.Env),
		Started: now, Ended: &now, Error: msg, Decision: dj}
	if err := m.recs.PutExec(context.WithoutCancel(ctx), rec); err != nil {
		m.cfg.Logf("record refused exec in %s: %v", id, err)
	}
	_ = m.rec.Record(context.WithoutCancel(ctx), audit.Entry{SandboxID: id, TaskID: m.taskOf(id), ExecID: rec.ID, Kind: "exec.refused",
		Payload: map[string]any{"argv": argv, "cwd": cwd, "env_names": rec.EnvNames, "reason": msg, "decision": sandbox.DecisionPayload(d)}})
}

// ask is what becomes of a command the policy holds for a human: the
// Holder's wait, then the policy's decision again; without a Holder, a
// denial that says why.
func (m *Manager) ask(ctx context.Context, id string, ls *live, req sandbox.ExecRequest, cwd string, d *policy.Decision) (*policy.Decision, error) {
	if m.hooks.Holder == nil {
		msg := d.Reason + " (held for approval, but this daemon has no approvals: nothing can approve it)"
		m.recordRefusal(ctx, id, req, cwd, d, msg)
		return nil, sandbox.NewPolicyError("policy_denied", msg, d, "")
	}
	x := hook.HeldExec{ExecCall: hook.ExecCall{SandboxID: id, TaskID: ls.taskID, Argv: slices.Clone(req.Argv), Cwd: cwd, Env: slices.Clone(req.Env)},
		Decision: d, Wait: req.ApprovalWait, NoWait: req.NoWait}
	apID, err := m.hooks.Holder.Hook.Hold(ctx, x)
	if err != nil {
		return nil, err
	}
	// Decide again: the grant just made must cover it, and nothing else
	// (a newer deny) may have changed.
	again := ls.pol.Decide(ls.pol.AnalyzeArgv(req.Argv, cwd))
	if err := m.hooks.Lift(ctx, id, again); err != nil {
		return nil, err
	}
	if again.Action != policy.Allow {
		msg := fmt.Sprintf("approval %s was given but does not cover the command: %s", apID, again.Reason)
		m.recordRefusal(ctx, id, req, cwd, again, msg)
		return nil, sandbox.NewPolicyError("approval_denied", msg, again, apID)
	}
	return again, nil
}
