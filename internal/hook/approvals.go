package hook

import (
	"context"
	"time"

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
