package manager

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/policy"
)

// The surface an approvals module (internal/approvals) attaches through.
// The core keeps the policy gate: it decides allow, deny or ask, and
// nothing runs that the policy, with its lifts, does not allow. Modules
// may lift a decision (PolicyLift: an approval's grant, a break-glass
// override); one module may hold an "ask" for a human (Holder), after
// which the core decides again. With no Holder an "ask" is refused as
// denied: a daemon without approvals never runs what its policy wants a
// human to see, and never leaves it waiting for nobody.

// PolicyLift is a module whose records may relax a decision.
type PolicyLift interface {
	// Lift may change d in place (its Action, Reason, Grant, BreakGlass)
	// for sandbox sandboxID after the policy decided and before the core
	// acts on it: at every exec (and again once a held one is approved),
	// policy check and file operation, in module order. An error fails
	// that call closed.
	Lift(ctx context.Context, sandboxID string, d *policy.Decision) error
}

// Holder is the module that holds a command the policy asks a human
// about. At most one module may be a Holder (attach refuses a second).
type Holder interface {
	// Hold records the held command x and waits (bounded) for a human.
	// nil: a human approved it, as approval approvalID; the core then
	// decides again, lifts included, and runs it only if that allows it.
	// An error: it does not run. A refusal of the holder's (denied, not
	// decided in time) is recorded by the holder (Core.RecordRefusal)
	// and returned as a *PolicyError.
	Hold(ctx context.Context, x HeldExec) (approvalID string, err error)
}

// HeldExec is a command the policy holds, as the Holder sees it.
type HeldExec struct {
	// ExecCall is the command as the caller sent it (Env: the caller's
	// own, secret-named ones are credentials for the approver to see).
	ExecCall
	// Decision is the policy's "ask", with its analysis and matches.
	Decision *policy.Decision
	// Wait is how long the caller waits for a human (0: the holder's
	// default; at most MaxApprovalWait). NoWait: it does not wait, the
	// exec fails at once as approval_pending and the approval stays open
	// for MaxApprovalWait (the agent retries once it is approved).
	Wait   time.Duration
	NoWait bool
}

// RecordRefusal keeps a command that will not run in the exec record,
// with decision d and the message msg (redacted), and records
// exec.refused: what the core does with a denial, for a module that
// refuses one.
func (c *Core) RecordRefusal(ctx context.Context, x ExecCall, d *policy.Decision, msg string) {
	c.m.recordRefusal(ctx, x.SandboxID, sandbox.ExecRequest{Argv: x.Argv, Env: x.Env}, x.Cwd, d, msg)
}

// Lift lets the PolicyLift modules relax d for sandbox id, in module
// order, as the core does at every exec: for a module that decides
// with the sandbox's policy itself (the file API). An error fails that
// call closed.
func (c *Core) Lift(ctx context.Context, id string, d *policy.Decision) error {
	return c.m.lift(ctx, id, d)
}

// IsApprover says whether the caller of ctx may decide approvals
// (AsApprover); others see held commands redacted.
func (c *Core) IsApprover(ctx context.Context) bool { return sandbox.IsApprover(ctx) }

// attachApprovals takes mod's PolicyLift and Holder abilities.
func (m *Manager) attachApprovals(name string, mod Module) error {
	if h, ok := mod.(PolicyLift); ok {
		m.lifts = append(m.lifts, named[PolicyLift]{name, h})
	}
	h, ok := mod.(Holder)
	if !ok {
		return nil
	}
	if m.holder != nil {
		return fmt.Errorf("module %s: a second approvals holder (%s holds commands already): %w", name, m.holder.name, errdefs.ErrInvalid)
	}
	m.holder = &named[Holder]{name, h}
	return nil
}

// lift lets the PolicyLift modules relax d, in module order.
func (m *Manager) lift(ctx context.Context, id string, d *policy.Decision) error {
	for _, h := range m.lifts {
		if err := h.hook.Lift(ctx, id, d); err != nil {
			return err
		}
	}
	return nil
}

// ask is what becomes of a command the policy holds for a human: the
// Holder's wait, then the policy's decision again; without a Holder, a
// denial that says why.
func (m *Manager) ask(ctx context.Context, id string, ls *live, req sandbox.ExecRequest, cwd string, d *policy.Decision) (*policy.Decision, error) {
	if m.holder == nil {
		msg := d.Reason + " (held for approval, but this daemon has no approvals: nothing can approve it)"
		m.recordRefusal(ctx, id, req, cwd, d, msg)
		return nil, sandbox.NewPolicyError("policy_denied", msg, d, "")
	}
	x := HeldExec{ExecCall: ExecCall{SandboxID: id, TaskID: ls.taskID, Argv: slices.Clone(req.Argv), Cwd: cwd, Env: slices.Clone(req.Env)},
		Decision: d, Wait: req.ApprovalWait, NoWait: req.NoWait}
	apID, err := m.holder.hook.Hold(ctx, x)
	if err != nil {
		return nil, err
	}
	// Decide again: the grant just made must cover it, and nothing else
	// (a newer deny) may have changed.
	again := ls.pol.Decide(policy.AnalyzeArgv(req.Argv, cwd))
	if err := m.lift(ctx, id, again); err != nil {
		return nil, err
	}
	if again.Action != policy.Allow {
		msg := fmt.Sprintf("approval %s was given but does not cover the command: %s", apID, again.Reason)
		m.recordRefusal(ctx, id, req, cwd, again, msg)
		return nil, sandbox.NewPolicyError("approval_denied", msg, again, apID)
	}
	return again, nil
}
