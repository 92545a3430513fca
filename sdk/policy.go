package sdk

import (
	"context"
	"encoding/json"
	"net/url"
	"time"

	"github.com/airlock-dev/airlock/wire"
)

// Policy classes and actions, as the daemon names them.
const (
	ActionAllow = wire.ActionAllow
	ActionAsk   = wire.ActionAsk
	ActionDeny  = wire.ActionDeny
)

// PolicyRule tightens the policy for the commands it matches (see the
// daemon's policy documentation); Action is "ask" or "deny".
type PolicyRule = wire.PolicyRule

// PolicyLayer is a sandbox's or task's own policy over the daemon's:
// class actions ("read": "allow", "dependency": "ask", ...), the action
// for writes outside the scope, the write scope, rules, an egress layer
// and install scripts.
type PolicyLayer = wire.PolicyLayer

// ExecPolicy is the policy's decision on one exec, in short.
type ExecPolicy = wire.ExecPolicy

// Decision is what a sandbox's policy decides for a command: the action,
// a reason safe to show, every rule that matched, and the analysis
// (classes, files written, hosts, credentials) it rests on.
type Decision = wire.Decision

// PolicyMatch is one rule that matched.
type PolicyMatch = wire.PolicyMatch

// Prompt is what an approver is shown of a held command.
type Prompt = wire.Prompt

// Approval is a command held for a human.
type Approval = wire.Approval

// ApproveOptions narrow an approval: Scope "command" (the default: this
// exact command line in this directory) or "class" (commands held only by
// the same classes), for For (default 15m, at most 24h).
type ApproveOptions struct {
	Scope  string
	For    time.Duration
	Reason string
}

// BreakGlass is an operator override of a sandbox's policy.
type BreakGlass = wire.BreakGlass

// SandboxPolicy returns a sandbox's effective policy (as JSON) and its
// version.
func (c *Client) SandboxPolicy(ctx context.Context, id string) (version string, pol json.RawMessage, err error) {
	p, err := sandboxPath(id, "policy")
	if err != nil {
		return "", nil, err
	}
	var out wire.PolicyAnswer
	if err := c.call(ctx, "GET", p, nil, nil, &out); err != nil {
		return "", nil, err
	}
	return out.Version, out.Policy, nil
}

// CheckCommand asks what a sandbox's policy would decide for argv in cwd,
// without running it.
func (c *Client) CheckCommand(ctx context.Context, id string, argv []string, cwd string) (*Decision, error) {
	p, err := sandboxPath(id, "policy", "check")
	if err != nil {
		return nil, err
	}
	if len(argv) == 0 {
		return nil, invalidf("no command given")
	}
	var d Decision
	if err := c.call(ctx, "POST", p, nil, wire.CheckRequest{Argv: argv, Cwd: cwd}, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// Approvals lists approvals, oldest first; sandbox and state ("pending",
// "approved", "denied", "expired") filter when not empty.
func (c *Client) Approvals(ctx context.Context, sandbox, state string) ([]Approval, error) {
	q := url.Values{}
	if sandbox != "" {
		q.Set("sandbox", sandbox)
	}
	if state != "" {
		q.Set("state", state)
	}
	var out wire.ApprovalList
	if err := c.call(ctx, "GET", "/v1/approvals", q, nil, &out); err != nil {
		return nil, err
	}
	return out.Approvals, nil
}

func approvalPath(id string, rest ...string) (string, error) {
	if id == "" {
		return "", invalidf("empty approval id")
	}
	p := "/v1/approvals/" + url.PathEscape(id)
	for _, r := range rest {
		p += "/" + r
	}
	return p, nil
}

// GetApproval returns one approval.
func (c *Client) GetApproval(ctx context.Context, id string) (*Approval, error) {
	p, err := approvalPath(id)
	if err != nil {
		return nil, err
	}
	var a Approval
	if err := c.call(ctx, "GET", p, nil, nil, &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// Approve lets a held command run, and grants the same command (or
// class) in that sandbox until the grant expires. On the unix socket, or
// over TCP with a reviewer (or admin) key of the approval's project;
// never with the key that made the request (IsDenied).
func (c *Client) Approve(ctx context.Context, id string, o ApproveOptions) (*Approval, error) {
	p, err := approvalPath(id, "approve")
	if err != nil {
		return nil, err
	}
	if o.For < 0 {
		return nil, invalidf("negative grant duration %s", o.For)
	}
	var a Approval
	body := wire.ApproveRequest{Scope: o.Scope, ForSeconds: ceilDiv(o.For, time.Second), Reason: o.Reason}
	if err := c.call(ctx, "POST", p, nil, body, &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// Deny refuses a held command; reason is shown to the agent. Who may
// approve it may deny it (Approve).
func (c *Client) Deny(ctx context.Context, id, reason string) (*Approval, error) {
	p, err := approvalPath(id, "deny")
	if err != nil {
		return nil, err
	}
	var a Approval
	if err := c.call(ctx, "POST", p, nil, wire.DenyRequest{Reason: reason}, &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// BreakGlassSandbox overrides a sandbox's policy for d (default 15m, at
// most 4h): every command runs, and each is marked in the record. On
// the unix socket, or over TCP with an admin key of the sandbox's project.
func (c *Client) BreakGlassSandbox(ctx context.Context, id, reason string, d time.Duration) (*BreakGlass, error) {
	p, err := sandboxPath(id, "breakglass")
	if err != nil {
		return nil, err
	}
	if d < 0 {
		return nil, invalidf("negative duration %s", d)
	}
	var b BreakGlass
	if err := c.call(ctx, "POST", p, nil, wire.BreakGlassRequest{Reason: reason, ForSeconds: ceilDiv(d, time.Second)}, &b); err != nil {
		return nil, err
	}
	return &b, nil
}
