package approvals

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/hook"
	"github.com/airlock-dev/airlock/internal/redacted"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/store"
)

// Prompt is what an approver is shown.
type Prompt struct {
	Command     string         `json:"command"`
	Argv        []string       `json:"argv"`
	Cwd         string         `json:"cwd"`
	Classes     []policy.Class `json:"classes" redact:"keep"`
	Held        []policy.Class `json:"held_classes,omitempty" redact:"keep"`
	Writes      []string       `json:"writes,omitempty"`
	Network     []string       `json:"network,omitempty"`
	Credentials []string       `json:"credentials,omitempty"`
	Effect      string         `json:"effect"`
	Reason      string         `json:"reason"`
	Rules       []string       `json:"rules"`
	Policy      string         `json:"policy" redact:"keep"`
}

func promptOf(x hook.HeldExec) *Prompt {
	d := x.Decision
	a := d.Analysis
	p := &Prompt{Command: a.Line, Argv: x.Argv, Cwd: x.Cwd, Classes: a.Classes, Held: d.HeldClasses(), Writes: a.Writes,
		Network: a.Hosts, Credentials: a.Secrets, Reason: d.Reason, Policy: d.Policy}
	for _, kv := range x.Env {
		name, _, _ := strings.Cut(kv, "=")
		if policy.SecretName(name) {
			p.Credentials = appendUniq(p.Credentials, "env "+name)
		}
	}
	var effects []string
	for _, c := range a.Commands {
		if slices.ContainsFunc(c.Classes, func(cl policy.Class) bool { return cl != policy.Read }) {
			effects = appendUniq(effects, c.Why)
		}
	}
	if len(effects) > 6 {
		effects = append(effects[:6], fmt.Sprintf("and %d more", len(effects)-6))
	}
	p.Effect = strings.Join(effects, "; ")
	for _, m := range d.Matches {
		if m.Action != policy.Allow {
			p.Rules = appendUniq(p.Rules, m.Rule)
		}
	}
	return p
}

// Hold records a pending approval for x and waits (bounded) for a human
// (hook.Holder). It returns the approval's id once a human approved
// (the core then decides again); a denial or an expiry is recorded as
// the exec's refusal and returned as a *sandbox.PolicyError. A duplicate
// of a pending hold (join.go) joins its approval instead of making one.
func (a *Approvals) Hold(ctx context.Context, x hook.HeldExec) (string, error) {
	if err := a.attached(); err != nil {
		return "", err
	}
	wait := x.Wait
	if wait == 0 {
		wait = a.wait
	}
	if wait > sandbox.MaxApprovalWait || x.NoWait {
		wait = sandbox.MaxApprovalWait
	}
	d := x.Decision
	// The approver sees the command as it would run, and its grant
	// matches exactly that line: a redacted one would hide from the
	// approver what any client can declare a secret (a host, a script),
	// and match other commands that redact alike. The record and the log
	// are redacted; the database keeps the line (README).
	pj, _ := json.Marshal(promptOf(x))
	ap, h, joined, err := a.open(ctx, x, pj, wait)
	if err != nil {
		return "", err
	}
	if err := a.recordHold(ctx, x, ap, joined); err != nil {
		if h != nil {
			a.forget(ap.ID, h)
		}
		return "", err
	}
	if x.NoWait {
		return "", sandbox.NewPolicyError("approval_pending", fmt.Sprintf("held for approval %s: %s", ap.ID, d.Reason), d, ap.ID)
	}
	if joined { // a joined approval ends at its deadline, whatever this exec asked
		wait = min(wait, ap.Deadline.Sub(a.c.Now()))
	}
	state, err := a.await(ctx, x, ap, wait, h)
	if err != nil {
		return "", err
	}
	return a.outcome(ctx, x, ap.ID, state)
}

// recordHold puts a hold on the record and in the log (a joined one
// says so: one approval, several requests).
func (a *Approvals) recordHold(ctx context.Context, x hook.HeldExec, ap *store.Approval, joined bool) error {
	red := a.c.Redactor()
	shown, err := redacted.Scrubbed(red, promptOf(x))
	if err != nil {
		return err
	}
	payload := map[string]any{"approval": ap.ID, "prompt": shown, "deadline": ap.Deadline}
	how := "holds"
	if joined {
		payload["joined"], how = true, "holds again (joined)"
	}
	if err := a.c.Record(ctx, audit.Entry{SandboxID: x.SandboxID, TaskID: x.TaskID, Kind: "approval.request", Payload: payload}); err != nil {
		return err
	}
	a.c.Logf("approval %s: sandbox %s %s %q (%s)", ap.ID, x.SandboxID, how, red.String(ap.Line), red.String(x.Decision.Reason))
	return nil
}

// outcome is what a held exec gets once approval id was decided to
// state: its id (approved: the core decides again), else its refusal,
// recorded, with the approver and their reason.
func (a *Approvals) outcome(ctx context.Context, x hook.HeldExec, id, state string) (string, error) {
	d := x.Decision
	cur, err := a.st.GetApproval(context.WithoutCancel(ctx), id)
	if err != nil {
		return "", err
	}
	if state == store.ApprovalExpired { // ended by airlock (its sandbox stopped, its deadline)
		msg := fmt.Sprintf("approval %s ended: %s", id, cur.Reason)
		a.c.RecordRefusal(ctx, x.ExecCall, d, msg)
		return "", sandbox.NewPolicyError("approval_timeout", msg, d, id)
	}
	if state != store.ApprovalApproved {
		msg := fmt.Sprintf("approval %s was denied by %s: %s", id, cur.DecidedBy, cur.Reason)
		a.c.RecordRefusal(ctx, x.ExecCall, d, msg)
		return "", sandbox.NewPolicyError("approval_denied", msg, d, id)
	}
	return id, nil
}

// await is the state ap was decided to, waiting at most wait (or until
// the caller goes away) on h. The last exec to give up expires it (as
// does any at its deadline), recorded as the exec's refusal (an
// approval_timeout error); while other execs still wait on it, it stays
// pending for them. A decision that raced in stands.
func (a *Approvals) await(ctx context.Context, x hook.HeldExec, ap *store.Approval, wait time.Duration, h *hold) (string, error) {
	t := time.NewTimer(max(wait, 0))
	defer t.Stop()
	select {
	case <-h.done:
		a.forget(ap.ID, h)
		return h.state, nil
	case <-t.C:
	case <-ctx.Done():
	}
	select {
	case <-h.done:
		a.forget(ap.ID, h)
		return h.state, nil
	default:
	}
	others := a.forget(ap.ID, h)
	bg := context.WithoutCancel(ctx)
	if !others || !a.c.Now().Before(ap.Deadline) {
		if err := a.st.DecideApproval(bg, ap.ID, store.ApprovalExpired, a.c.Now(), "airlock", "not decided in time", ""); err != nil {
			cur, gerr := a.st.GetApproval(bg, ap.ID)
			if gerr != nil {
				return "", gerr
			}
			return cur.State, nil
		}
		_ = a.c.Record(bg, audit.Entry{SandboxID: x.SandboxID, TaskID: x.TaskID, Actor: "airlock", Kind: "approval.expire",
			Payload: map[string]any{"approval": ap.ID, "waited": wait.String()}})
		a.notify(ap.ID, store.ApprovalExpired) // the others, at its deadline
	}
	msg := fmt.Sprintf("approval %s was not given within %s: %s", ap.ID, wait, x.Decision.Reason)
	a.c.RecordRefusal(ctx, x.ExecCall, x.Decision, msg)
	return "", sandbox.NewPolicyError("approval_timeout", msg, x.Decision, ap.ID)
}
