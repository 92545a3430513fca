package sandbox

import (
	"context"
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/wire"
)

type actorKey struct{}

// WithActor names who makes the requests of ctx ("operator:alice",
// "apikey:k-...") for the record.
func WithActor(ctx context.Context, actor string) context.Context {
	return context.WithValue(ctx, actorKey{}, actor)
}

// ActorOf is who makes the requests of ctx (WithActor), "unknown" if
// unnamed.
func ActorOf(ctx context.Context) string {
	if a, _ := ctx.Value(actorKey{}).(string); a != "" {
		return a
	}
	return "unknown"
}

type clientKey struct{}

// WithClient names the program the requests of ctx are made through (an
// MCP client's name/version, from wire.ClientHeader: asserted, not
// authenticated), cleaned by wire.CleanClient; "" names none. The
// recorder adds it to every event of ctx.
func WithClient(ctx context.Context, name string) context.Context {
	if name = wire.CleanClient(name); name == "" {
		return ctx
	}
	return context.WithValue(ctx, clientKey{}, name)
}

// ClientOf is the program named by WithClient, "" if none.
func ClientOf(ctx context.Context) string {
	c, _ := ctx.Value(clientKey{}).(string)
	return c
}

type approverKey struct{}

// AsApprover marks the caller of ctx as one who may decide approvals (the
// operator, on the daemon's unix socket). The approvals module shows such
// a caller a held command as it would run, credentials included (it asks
// IsApprover); any other caller (an API key: the agent) sees it redacted
// (issue 17.8).
func AsApprover(ctx context.Context) context.Context {
	return context.WithValue(ctx, approverKey{}, true)
}

// IsApprover says whether the caller of ctx may decide approvals
// (AsApprover).
func IsApprover(ctx context.Context) bool {
	v, _ := ctx.Value(approverKey{}).(bool)
	return v
}

// PolicyError is a command the policy stopped: denied, held for approval
// (not waited for), refused by a human, or not approved in time. Its
// message is safe to show the agent.
type PolicyError struct {
	// Code: policy_denied, approval_pending, approval_denied, approval_timeout.
	Code     string           `json:"code"`
	Message  string           `json:"message"`
	Rules    []string         `json:"rules,omitempty"`
	Approval string           `json:"approval_id,omitempty"`
	Decision *policy.Decision `json:"-"`
}

func (e *PolicyError) Error() string { return e.Message }

// Unwrap gives the error kind: denied, pending or timeout.
func (e *PolicyError) Unwrap() error {
	switch e.Code {
	case "approval_pending":
		return errdefs.ErrPending
	case "approval_timeout":
		return errdefs.ErrTimeout
	}
	return errdefs.ErrDenied
}

// NewPolicyError is the error of a command stopped with code (see
// PolicyError), its rules those of d that held or refused it.
func NewPolicyError(code, msg string, d *policy.Decision, approval string) *PolicyError {
	e := &PolicyError{Code: code, Message: msg, Decision: d, Approval: approval}
	if d != nil {
		for _, m := range d.Matches {
			if m.Action == d.Action || (code != "policy_denied" && m.Action != policy.Allow) {
				e.Rules = appendUniq(e.Rules, m.Rule)
			}
		}
	}
	return e
}

// DecisionPayload is a decision as the audit record shows it (the
// rules that decided, the grant or break-glass, what was analysed).
func DecisionPayload(d *policy.Decision) map[string]any {
	if d == nil {
		return nil
	}
	p := map[string]any{"action": d.Action, "reason": d.Reason, "policy": d.Policy, "classes": d.Analysis.Classes}
	var rules []string
	for _, mt := range d.Matches {
		if mt.Action == d.Action || d.Grant != nil || d.BreakGlass != "" {
			rules = appendUniq(rules, mt.Rule)
		}
	}
	p["rules"] = rules
	if len(d.Grant) > 0 {
		p["grant"] = d.Grant
	}
	if d.BreakGlass != "" {
		p["break_glass"] = d.BreakGlass
	}
	if len(d.Analysis.Writes) > 0 {
		p["writes"] = d.Analysis.Writes
	}
	if len(d.Analysis.Hosts) > 0 {
		p["hosts"] = d.Analysis.Hosts
	}
	if len(d.Analysis.Secrets) > 0 {
		p["secrets"] = d.Analysis.Secrets
	}
	return p
}

// Policy is the effective policy of a new sandbox of project: the
// daemon's file f (nil: the built-in defaults) for its template and the
// templates it was made from (lineage: oldest first, the template last),
// the file's section for its project, then the caller's layer (which,
// from a caller that may only tighten, must not relax anything).
func Policy(f *policy.File, lineage []string, project string, layer *policy.Layer, tightenOnly bool, source string) (*policy.Policy, error) {
	return PolicyOf(f, lineage, project, nil, layer, tightenOnly, source)
}

// PolicyOf is Policy with the project's own layer (own, its admin's:
// nil, none) applied after the file's section for the project and before
// the caller's layer. own was checked against the file when it was set;
// where a template's section is stricter than it, only what tightens
// applies (policy.Tightened), and the source says what did not
// ("project-policy:NAME", then " (not over the template: ...)"), so a
// project's layer never loosens a sandbox's policy.
func PolicyOf(f *policy.File, lineage []string, project string, own, layer *policy.Layer, tightenOnly bool, source string) (*policy.Policy, error) {
	pol, err := f.ForTemplates(lineage)
	if err != nil {
		return nil, err
	}
	pol = f.ForProject(pol, project)
	if own != nil {
		t, left := pol.Tightened(*own)
		src := "project-policy:" + project
		if len(left) > 0 {
			src += " (not over the template: " + strings.Join(left, ", ") + ")"
		}
		if pol, err = pol.With(t, src); err != nil {
			return nil, fmt.Errorf("the project's policy: %w", err)
		}
	}
	if layer == nil {
		return pol, nil
	}
	if err := layer.Check(); err != nil {
		return nil, err
	}
	if tightenOnly {
		if err := pol.Relaxes(*layer); err != nil {
			return nil, err
		}
	}
	return pol.With(*layer, source)
}
