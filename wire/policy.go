package wire

import (
	"encoding/json"
	"time"
)

// Policy actions (PolicyRule.Action, Decision.Action, ...).
const (
	ActionAllow = "allow"
	ActionAsk   = "ask"
	ActionDeny  = "deny"
)

// PolicyRule tightens the policy for the commands it matches
// (docs/policy.md).
type PolicyRule struct {
	// ID names the rule in decisions and records.
	ID string `json:"id"`
	// Command is a glob over one simple command as the analysis shows it.
	Command string `json:"command,omitempty"`
	// Class matches commands that have this class.
	Class string `json:"class,omitempty"`
	// Path is a glob over the paths a command writes.
	Path string `json:"path,omitempty"`
	// Host is a glob over the network destinations a command names.
	Host string `json:"host,omitempty"`
	// Action is "ask" or "deny".
	Action string `json:"action"`
	// Reason is shown with the decision.
	Reason string `json:"reason,omitempty"`
}

// PolicyLayer is a sandbox's or task's own policy over the daemon's.
type PolicyLayer struct {
	// Classes are actions by class ("read": "allow", "dependency": "ask").
	Classes map[string]string `json:"classes,omitempty"`
	// OutsideScope is the action for a write outside the scope.
	OutsideScope string `json:"outside_scope,omitempty"`
	// Scope are the path globs (relative to /workspace) the agent may
	// change; empty: anywhere in /workspace.
	Scope []string `json:"scope,omitempty"`
	// Rules tighten the policy for the commands they match.
	Rules []PolicyRule `json:"rules,omitempty"`
	// Egress is an egress policy layer (docs/policy.md): where the
	// sandbox's traffic may go.
	Egress json.RawMessage `json:"egress,omitempty"`
	// InstallScripts "deny" makes package managers skip install scripts;
	// "allow" is the default.
	InstallScripts string `json:"install_scripts,omitempty"`
}

// PolicyAnswer is the answer of GET /v1/sandboxes/{id}/policy.
type PolicyAnswer struct {
	// Version is the effective policy's version.
	Version string `json:"version"`
	// Policy is the effective policy (class actions, scope, rules, the
	// layers that made it), as docs/policy.md describes it.
	Policy json.RawMessage `json:"policy"`
}

// CheckRequest is the body of POST /v1/sandboxes/{id}/policy/check.
type CheckRequest struct {
	// Argv is the command line to decide on (required).
	Argv []string `json:"argv"`
	// Cwd is its working directory.
	Cwd string `json:"cwd,omitempty"`
}

// Decision is what a sandbox's policy decides for a command line.
type Decision struct {
	// Action is "allow", "ask" or "deny".
	Action string `json:"action"`
	// Reason is one line, safe to show the agent.
	Reason string `json:"reason"`
	// Matches are every rule that matched.
	Matches []PolicyMatch `json:"matches"`
	// OutOfScope are the writes outside the scope.
	OutOfScope []string `json:"out_of_scope,omitempty"`
	// Analysis is what the decision rests on: every simple command, its
	// classes, writes, hosts, credentials (docs/policy.md).
	Analysis json.RawMessage `json:"analysis"`
	// Policy is the policy's version.
	Policy string `json:"policy"`
	// Grant names the approvals that turned ask into allow.
	Grant []string `json:"grant,omitempty"`
	// BreakGlass names the operator override that allowed what the policy
	// did not.
	BreakGlass string `json:"break_glass,omitempty"`
}

// PolicyMatch is one rule that matched.
type PolicyMatch struct {
	// Rule is "class:NAME", "scope", or a rule's id.
	Rule string `json:"rule"`
	// Action is the rule's.
	Action string `json:"action"`
	// Command indexes the analysis's commands.
	Command int `json:"command"`
	// Class is the class that matched, for a class rule.
	Class string `json:"class,omitempty"`
	// Reason is the rule's.
	Reason string `json:"reason"`
}

// Prompt is what an approver is shown of a held command.
type Prompt struct {
	// Command is the command line.
	Command string `json:"command"`
	// Argv is the command.
	Argv []string `json:"argv"`
	// Cwd is its working directory.
	Cwd string `json:"cwd"`
	// Classes are its classes.
	Classes []string `json:"classes"`
	// Held are the classes that held it.
	Held []string `json:"held_classes,omitempty"`
	// Writes are the files it writes.
	Writes []string `json:"writes,omitempty"`
	// Network are the destinations it names.
	Network []string `json:"network,omitempty"`
	// Credentials are the credentials it touches.
	Credentials []string `json:"credentials,omitempty"`
	// Effect is its expected effect, in words.
	Effect string `json:"effect"`
	// Reason is the policy's.
	Reason string `json:"reason"`
	// Rules are the ids of the rules that held it.
	Rules []string `json:"rules"`
	// Policy is the policy's version.
	Policy string `json:"policy"`
}

// Approval is a command held for a human.
type Approval struct {
	// ID names the approval.
	ID string `json:"id"`
	// SandboxID is the sandbox the command is for.
	SandboxID string `json:"sandbox_id"`
	// TaskID is that sandbox's task, if any.
	TaskID string `json:"task_id,omitempty"`
	// State is "pending", "approved", "denied" or "expired".
	State string `json:"state"`
	// Prompt is what the approver is shown.
	Prompt *Prompt `json:"prompt"`
	// RequestedBy is the actor that sent the command.
	RequestedBy string `json:"requested_by"`
	// Created is when it was held.
	Created time.Time `json:"created"`
	// Deadline is when it expires undecided.
	Deadline time.Time `json:"deadline"`
	// Decided is when it was decided; absent while pending.
	Decided time.Time `json:"decided,omitzero"`
	// DecidedBy is the approver.
	DecidedBy string `json:"decided_by,omitempty"`
	// Reason is the approver's.
	Reason string `json:"reason,omitempty"`
	// GrantID names the grant an approval made.
	GrantID string `json:"grant_id,omitempty"`
}

// ApprovalList is the answer of GET /v1/approvals.
type ApprovalList struct {
	// Approvals, oldest first.
	Approvals []Approval `json:"approvals"`
}

// ApproveRequest is the body of POST /v1/approvals/{id}/approve (all
// optional).
type ApproveRequest struct {
	// Scope is "command" (the default: this command line in this
	// directory) or "class" (commands held only by the same classes).
	Scope string `json:"scope,omitempty"`
	// ForSeconds is how long the grant lasts; 0: 15 minutes; at most 24h.
	ForSeconds int64 `json:"for_seconds,omitempty"`
	// Reason is recorded with the decision.
	Reason string `json:"reason,omitempty"`
}

// DenyRequest is the body of POST /v1/approvals/{id}/deny.
type DenyRequest struct {
	// Reason is required and shown to the agent.
	Reason string `json:"reason"`
}

// BreakGlassRequest is the body of POST /v1/sandboxes/{id}/breakglass.
type BreakGlassRequest struct {
	// Reason is required and recorded.
	Reason string `json:"reason"`
	// ForSeconds is how long it lasts; 0: 15 minutes; at most 4h.
	ForSeconds int64 `json:"for_seconds,omitempty"`
}

// BreakGlass is an operator override of a sandbox's policy.
type BreakGlass struct {
	// ID names it.
	ID string `json:"id"`
	// SandboxID is the sandbox it is for.
	SandboxID string `json:"sandbox_id"`
	// Actor is the operator who made it.
	Actor string `json:"actor"`
	// Reason is theirs.
	Reason string `json:"reason"`
	// Created is when it was made.
	Created time.Time `json:"created"`
	// Expires is when it ends.
	Expires time.Time `json:"expires"`
}
