package approvals

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/tenant"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/redacted"
	"github.com/airlock-dev/airlock/internal/store"
)

// Approval is an approval as the API shows it.
type Approval struct {
	ID          string     `json:"id" redact:"keep"`
	SandboxID   string     `json:"sandbox_id" redact:"keep"`
	TaskID      string     `json:"task_id,omitempty" redact:"keep"`
	State       string     `json:"state" redact:"keep"`
	Prompt      *Prompt    `json:"prompt"`
	RequestedBy string     `json:"requested_by" redact:"keep"`
	Created     time.Time  `json:"created"`
	Deadline    time.Time  `json:"deadline"`
	Decided     *time.Time `json:"decided,omitempty"`
	DecidedBy   string     `json:"decided_by,omitempty" redact:"keep"`
	Reason      string     `json:"reason,omitempty"`
	GrantID     string     `json:"grant_id,omitempty" redact:"keep"`
}

func approvalView(a *store.Approval, now time.Time) *Approval {
	v := &Approval{ID: a.ID, SandboxID: a.SandboxID, TaskID: a.TaskID, State: a.State, RequestedBy: a.RequestedBy,
		Created: a.Created, Deadline: a.Deadline, Decided: a.Decided, DecidedBy: a.DecidedBy, Reason: a.Reason, GrantID: a.GrantID}
	_ = json.Unmarshal(a.Request, &v.Prompt)
	if v.State == store.ApprovalPending && !now.Before(a.Deadline) {
		v.State = store.ApprovalExpired
	}
	return v
}

// shown is v as ctx's caller may see it: an approver (sandbox.AsApprover,
// the operator) sees a held command as it would run, credentials
// included; anyone else (an API key: the agent) a copy with every string
// redacted (issue 17.8) but its ids and states, or an error, never the original.
func (a *Approvals) shown(ctx context.Context, v *Approval) (*Approval, error) {
	if a.c.IsApprover(ctx) {
		return v, nil
	}
	// The daemon's own words (ids, states, classes, field names) are
	// kept: any caller can teach the redactor a value (internal/redacted).
	return redacted.Scrubbed(a.c.Redactor(), v)
}

// List lists the approvals the caller sees (its project's; the
// operator's: every one), oldest first, by sandbox and state ("" for
// any).
func (a *Approvals) List(ctx context.Context, sandboxID, state string) ([]*Approval, error) {
	if err := a.attached(); err != nil {
		return nil, err
	}
	if state != "" && state != store.ApprovalPending && state != store.ApprovalApproved && state != store.ApprovalDenied && state != store.ApprovalExpired {
		return nil, fmt.Errorf("state %q: pending, approved, denied or expired: %w", state, errdefs.ErrInvalid)
	}
	q := state
	if state == store.ApprovalExpired {
		q = "" // pending past their deadline are expired too
	}
	list, err := a.st.ListProjectApprovals(ctx, sandboxID, q, tenant.Scope(ctx))
	if err != nil {
		return nil, err
	}
	now := a.c.Now()
	out := []*Approval{}
	for _, ap := range list {
		v, err := a.shown(ctx, approvalView(ap, now))
		if err != nil {
			return nil, err
		}
		if state == "" || v.State == state {
			out = append(out, v)
		}
	}
	return out, nil
}

// Get returns one approval.
func (a *Approvals) Get(ctx context.Context, id string) (*Approval, error) {
	if err := a.attached(); err != nil {
		return nil, err
	}
	if err := a.visible(ctx, tenant.Approval, id); err != nil {
		return nil, err
	}
	ap, err := a.st.GetApproval(ctx, id)
	if err != nil {
		return nil, err
	}
	return a.shown(ctx, approvalView(ap, a.c.Now()))
}

// ApproveRequest is a human's yes.
type ApproveRequest struct {
	// Scope: "command" (this exact command line in this directory, the
	// default) or "class" (any command whose held classes are these).
	Scope policy.GrantScope `json:"scope,omitempty"`
	// For is how long the grant lasts (default 15m, at most 24h).
	For time.Duration `json:"-"`
	// Reason is kept with the approval.
	Reason string `json:"reason,omitempty"`
}

// Approve grants a pending approval: the held exec runs, and the grant
// lets the same command (or class) through until it expires, in this
// sandbox only.
func (a *Approvals) Approve(ctx context.Context, id string, req ApproveRequest) (*Approval, error) {
	if err := a.attached(); err != nil {
		return nil, err
	}
	if req.Scope == "" {
		req.Scope = policy.ScopeCommand
	}
	if req.Scope != policy.ScopeCommand && req.Scope != policy.ScopeClass {
		return nil, fmt.Errorf("scope %q: command or class: %w", req.Scope, errdefs.ErrInvalid)
	}
	if req.For == 0 {
		req.For = DefaultGrant
	}
	if req.For < 0 || req.For > MaxGrant {
		return nil, fmt.Errorf("a grant lasts more than 0 and at most %s: %w", MaxGrant, errdefs.ErrInvalid)
	}
	ap, err := a.decidable(ctx, id)
	if err != nil {
		return nil, err
	}
	g, err := a.grantFor(ctx, ap, req)
	if err != nil {
		return nil, err
	}
	actor := a.c.Actor(ctx)
	if err := a.st.Approve(ctx, ap.ID, g.Created, actor, req.Reason, g); err != nil {
		return nil, err
	}
	a.c.Logf("approval %s approved by %s (%s for %s): %q", ap.ID, actor, req.Scope, req.For, a.c.Redactor().String(ap.Line))
	_ = a.c.Record(ctx, audit.Entry{SandboxID: ap.SandboxID, TaskID: ap.TaskID, Kind: "approval.approve", Payload: map[string]any{
		"approval": ap.ID, "grant": g.ID, "scope": g.Scope, "line": g.Line, "cwd": g.Cwd, "classes": g.Classes, "expires": g.Expires, "reason": req.Reason}})
	a.notify(ap.ID, store.ApprovalApproved)
	return a.Get(ctx, id)
}

// grantFor is the grant approving ap makes: its exact line in its
// directory, or the classes that held it (an approval held by a rule or
// the write scope, not a class, cannot be approved by class).
func (a *Approvals) grantFor(ctx context.Context, ap *store.Approval, req ApproveRequest) (*store.Grant, error) {
	var prompt Prompt
	_ = json.Unmarshal(ap.Request, &prompt)
	now := a.c.Now()
	g := &store.Grant{ID: newID("gr-"), SandboxID: ap.SandboxID, TaskID: ap.TaskID, ApprovalID: ap.ID, Scope: string(req.Scope),
		Created: now, Expires: now.Add(req.For), CreatedBy: a.c.Actor(ctx)}
	if req.Scope == policy.ScopeCommand {
		g.Line, g.Cwd = ap.Line, ap.Cwd
		return g, nil
	}
	if len(prompt.Held) == 0 {
		return nil, fmt.Errorf("approval %s is held by a rule or the write scope (%s), not by a class: approve the command: %w",
			ap.ID, strings.Join(prompt.Rules, ", "), errdefs.ErrInvalid)
	}
	for _, c := range prompt.Held {
		g.Classes = append(g.Classes, string(c))
	}
	return g, nil
}

// Deny refuses a pending approval; the held exec fails with the reason.
func (a *Approvals) Deny(ctx context.Context, id, reason string) (*Approval, error) {
	if err := a.attached(); err != nil {
		return nil, err
	}
	if strings.TrimSpace(reason) == "" {
		return nil, fmt.Errorf("a denial needs a reason (it is shown to the agent): %w", errdefs.ErrInvalid)
	}
	ap, err := a.decidable(ctx, id)
	if err != nil {
		return nil, err
	}
	actor := a.c.Actor(ctx)
	if err := a.st.DecideApproval(ctx, ap.ID, store.ApprovalDenied, a.c.Now(), actor, reason, ""); err != nil {
		return nil, err
	}
	a.c.Logf("approval %s denied by %s: %s", ap.ID, actor, reason)
	_ = a.c.Record(ctx, audit.Entry{SandboxID: ap.SandboxID, TaskID: ap.TaskID, Kind: "approval.deny", Payload: map[string]any{"approval": ap.ID, "reason": reason}})
	a.notify(ap.ID, store.ApprovalDenied)
	return a.Get(ctx, id)
}

// decidable is approval id if ctx's caller may decide it (a reviewer of
// its project, not the key that asked: who.go) and a human still may:
// pending and before its deadline (one past it is marked expired here).
func (a *Approvals) decidable(ctx context.Context, id string) (*store.Approval, error) {
	if err := mayAct(ctx, tenant.Reviewer, "deciding an approval"); err != nil {
		return nil, err
	}
	if err := a.visible(ctx, tenant.Approval, id); err != nil {
		return nil, err
	}
	ap, err := a.st.GetApproval(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := a.notOwnRequest(ctx, ap); err != nil {
		return nil, err
	}
	if ap.State != store.ApprovalPending {
		return nil, fmt.Errorf("approval %s is already %s: %w", id, ap.State, errdefs.ErrConflict)
	}
	if !a.c.Now().Before(ap.Deadline) {
		_ = a.st.DecideApproval(ctx, id, store.ApprovalExpired, a.c.Now(), "airlock", "not decided in time", "")
		return nil, fmt.Errorf("approval %s expired at %s: %w", id, ap.Deadline.Format(time.RFC3339), errdefs.ErrConflict)
	}
	return ap, nil
}
