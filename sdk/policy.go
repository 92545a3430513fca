package sdk

import (
	"context"
	"encoding/json"
	"net/url"
	"time"
)

// Policy classes and actions, as the daemon names them.
const (
	ActionAllow = "allow"
	ActionAsk   = "ask"
	ActionDeny  = "deny"
)

// PolicyRule tightens the policy for the commands it matches (see the
// daemon's policy documentation); Action is "ask" or "deny".
type PolicyRule struct {
	ID      string `json:"id"`
	Command string `json:"command,omitempty"`
	Class   string `json:"class,omitempty"`
	Path    string `json:"path,omitempty"`
	Host    string `json:"host,omitempty"`
	Action  string `json:"action"`
	Reason  string `json:"reason,omitempty"`
}

// PolicyLayer is a sandbox's or task's own policy over the daemon's:
// class actions ("read": "allow", "dependency": "ask", ...), the action
// for writes outside the scope, the write scope, and rules.
type PolicyLayer struct {
	Classes      map[string]string `json:"classes,omitempty"`
	OutsideScope string            `json:"outside_scope,omitempty"`
	Scope        []string          `json:"scope,omitempty"`
	Rules        []PolicyRule      `json:"rules,omitempty"`
}

// ExecPolicy is the policy's decision on one exec, in short.
type ExecPolicy struct {
	Action     string   `json:"action"`
	Classes    []string `json:"classes"`
	Rules      []string `json:"rules,omitempty"`
	Reason     string   `json:"reason"`
	Grant      []string `json:"grant,omitempty"`
	BreakGlass string   `json:"break_glass,omitempty"`
	Version    string   `json:"policy"`
}

// Decision is what a sandbox's policy decides for a command: the action,
// a reason safe to show, every rule that matched, and the analysis
// (classes, files written, hosts, credentials) it rests on.
type Decision struct {
	Action     string          `json:"action"`
	Reason     string          `json:"reason"`
	Matches    []PolicyMatch   `json:"matches"`
	OutOfScope []string        `json:"out_of_scope,omitempty"`
	Analysis   json.RawMessage `json:"analysis"`
	Policy     string          `json:"policy"`
	Grant      []string        `json:"grant,omitempty"`
	BreakGlass string          `json:"break_glass,omitempty"`
}

// PolicyMatch is one rule that matched.
type PolicyMatch struct {
	Rule    string `json:"rule"`
	Action  string `json:"action"`
	Command int    `json:"command"`
	Class   string `json:"class,omitempty"`
	Reason  string `json:"reason"`
}

// Prompt is what an approver is shown of a held command.
type Prompt struct {
	Command     string   `json:"command"`
	Argv        []string `json:"argv"`
	Cwd         string   `json:"cwd"`
	Classes     []string `json:"classes"`
	Held        []string `json:"held_classes,omitempty"`
	Writes      []string `json:"writes,omitempty"`
	Network     []string `json:"network,omitempty"`
	Credentials []string `json:"credentials,omitempty"`
	Effect      string   `json:"effect"`
	Reason      string   `json:"reason"`
	Rules       []string `json:"rules"`
	Policy      string   `json:"policy"`
}

// Approval is a command held for a human.
type Approval struct {
	ID          string    `json:"id"`
	SandboxID   string    `json:"sandbox_id"`
	TaskID      string    `json:"task_id,omitempty"`
	State       string    `json:"state"` // pending, approved, denied, expired
	Prompt      *Prompt   `json:"prompt"`
	RequestedBy string    `json:"requested_by"`
	Created     time.Time `json:"created"`
	Deadline    time.Time `json:"deadline"`
	Decided     time.Time `json:"decided,omitzero"`
	DecidedBy   string    `json:"decided_by,omitempty"`
	Reason      string    `json:"reason,omitempty"`
	GrantID     string    `json:"grant_id,omitempty"`
}

// ApproveOptions narrow an approval: Scope "command" (the default: this
// exact command line in this directory) or "class" (commands held only by
// the same classes), for For (default 15m, at most 24h).
type ApproveOptions struct {
	Scope  string
	For    time.Duration
	Reason string
}

// BreakGlass is an operator override of a sandbox's policy.
type BreakGlass struct {
	ID        string    `json:"id"`
	SandboxID string    `json:"sandbox_id"`
	Actor     string    `json:"actor"`
	Reason    string    `json:"reason"`
	Created   time.Time `json:"created"`
	Expires   time.Time `json:"expires"`
}

// SandboxPolicy returns a sandbox's effective policy (as JSON) and its
// version.
func (c *Client) SandboxPolicy(ctx context.Context, id string) (version string, pol json.RawMessage, err error) {
	p, err := sandboxPath(id, "policy")
	if err != nil {
		return "", nil, err
	}
	var out struct {
		Version string          `json:"version"`
		Policy  json.RawMessage `json:"policy"`
	}
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
	if err := c.call(ctx, "POST", p, nil, map[string]any{"argv": argv, "cwd": cwd}, &d); err != nil {
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
	var out struct {
		Approvals []Approval `json:"approvals"`
	}
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
// class) in that sandbox until the grant expires. Unix socket only.
func (c *Client) Approve(ctx context.Context, id string, o ApproveOptions) (*Approval, error) {
	p, err := approvalPath(id, "approve")
	if err != nil {
		return nil, err
	}
	if o.For < 0 {
		return nil, invalidf("negative grant duration %s", o.For)
	}
	var a Approval
	body := map[string]any{"scope": o.Scope, "for_seconds": ceilDiv(o.For, time.Second), "reason": o.Reason}
	if err := c.call(ctx, "POST", p, nil, body, &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// Deny refuses a held command; reason is shown to the agent. Unix socket
// only.
func (c *Client) Deny(ctx context.Context, id, reason string) (*Approval, error) {
	p, err := approvalPath(id, "deny")
	if err != nil {
		return nil, err
	}
	var a Approval
	if err := c.call(ctx, "POST", p, nil, map[string]any{"reason": reason}, &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// BreakGlassSandbox overrides a sandbox's policy for d (default 15m, at
// most 4h): every command runs, and each is marked in the record. Unix
// socket only.
func (c *Client) BreakGlassSandbox(ctx context.Context, id, reason string, d time.Duration) (*BreakGlass, error) {
	p, err := sandboxPath(id, "breakglass")
	if err != nil {
		return nil, err
	}
	if d < 0 {
		return nil, invalidf("negative duration %s", d)
	}
	var b BreakGlass
	if err := c.call(ctx, "POST", p, nil, map[string]any{"reason": reason, "for_seconds": ceilDiv(d, time.Second)}, &b); err != nil {
		return nil, err
	}
	return &b, nil
}
