package projects

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/tenant"
)

// Policy is project id's own policy layer (nil: none), for a caller who
// sees the project.
func (p *Projects) Policy(ctx context.Context, id string) (*policy.Layer, error) {
	if err := p.attached(); err != nil {
		return nil, err
	}
	r, err := p.st.GetProject(ctx, id)
	if err != nil || !tenant.Of(ctx).Sees(id) {
		return nil, fmt.Errorf("project %q: %w", id, errdefs.ErrNotFound)
	}
	return policy.LayerFromJSON(r.Policy)
}

// SetPolicy replaces project id's own policy layer (an empty layer: none)
// and records project.policy. It is the project's admin's (or the
// operator's), and it may only tighten: a layer that would relax the
// daemon's policy file for the project (its own layer and its section
// for the project) is refused, whoever sets it (the operator loosens a
// project in the file). Each create applies it after the file's section
// for the project, where a template's section stricter than it keeps
// what it set (sandbox.PolicyOf). What is live keeps its policy.
func (p *Projects) SetPolicy(ctx context.Context, id string, l policy.Layer) (*policy.Layer, error) {
	if err := p.attached(); err != nil {
		return nil, err
	}
	who := tenant.Of(ctx)
	if !who.IsOperator() && !(who.Role.AtLeast(tenant.Admin) && who.Project == id) {
		return nil, fmt.Errorf("project %q: %w", id, errdefs.ErrNotFound)
	}
	r, err := p.st.GetProject(ctx, id)
	if err != nil || r.Removed != nil {
		return nil, fmt.Errorf("project %q: %w", id, errdefs.ErrNotFound)
	}
	if err := l.Check(); err != nil {
		return nil, err
	}
	f := p.file()
	if err := f.ForProject(f.ForTemplate(""), id).Relaxes(l); err != nil {
		return nil, fmt.Errorf("a project's policy may only tighten the daemon's policy file for it: %w", err)
	}
	var raw json.RawMessage
	var out *policy.Layer
	if !l.IsZero() {
		if raw, err = json.Marshal(l); err != nil {
			return nil, err
		}
		out = &l
	}
	if err := p.record(ctx, audit.Entry{Kind: "project.policy", Payload: map[string]any{"project": id, "policy": out}}); err != nil {
		return nil, err
	}
	if err := p.st.SetProjectPolicy(ctx, id, raw); err != nil {
		return nil, err
	}
	return out, nil
}
