package approvals

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/tenant"
)

// Lift applies the sandbox's grants to an ask, and an active break-glass
// override to anything short of allow (hook.PolicyLift).
func (a *Approvals) Lift(ctx context.Context, sandboxID string, d *policy.Decision) error {
	if err := a.attached(); err != nil {
		return err
	}
	now := a.c.Now()
	if d.Action == policy.Ask {
		gs, err := a.st.ActiveGrants(ctx, sandboxID, now)
		if err != nil {
			return err
		}
		var pg []policy.Grant
		for _, g := range gs {
			pg = append(pg, grantOf(g))
		}
		d.ApplyGrants(pg, now)
	}
	if d.Action != policy.Allow {
		bgs, err := a.st.BreakGlasses(ctx, sandboxID, true, now)
		if err != nil {
			return err
		}
		if len(bgs) > 0 {
			bg := bgs[0]
			d.BreakGlass = bg.ID
			d.Reason = fmt.Sprintf("BREAK-GLASS %s by %s (%s) overrode: %s", bg.ID, bg.Actor, bg.Reason, d.Reason)
			d.Action = policy.Allow
		}
	}
	return nil
}

func grantOf(g *store.Grant) policy.Grant {
	pg := policy.Grant{ID: g.ID, Scope: policy.GrantScope(g.Scope), Line: g.Line, Cwd: g.Cwd, Expires: g.Expires}
	for _, c := range g.Classes {
		pg.Classes = append(pg.Classes, policy.Class(c))
	}
	return pg
}

// BreakGlass is an operator override as the API shows it.
type BreakGlass struct {
	ID        string    `json:"id"`
	SandboxID string    `json:"sandbox_id"`
	Actor     string    `json:"actor"`
	Reason    string    `json:"reason"`
	Created   time.Time `json:"created"`
	Expires   time.Time `json:"expires"`
}

// BreakGlass lets every command of one running sandbox through, denials
// included, for d (0: DefaultGrant; at most MaxBreakGlass). It is loud:
// logged when made and with every command it lets through (the core
// logs those), and marked in each exec's decision.
func (a *Approvals) BreakGlass(ctx context.Context, id, reason string, d time.Duration) (*BreakGlass, error) {
	if err := a.attached(); err != nil {
		return nil, err
	}
	if strings.TrimSpace(reason) == "" {
		return nil, fmt.Errorf("break-glass needs a reason: %w", errdefs.ErrInvalid)
	}
	if d == 0 {
		d = DefaultGrant
	}
	if d < 0 || d > MaxBreakGlass {
		return nil, fmt.Errorf("break-glass lasts more than 0 and at most %s: %w", MaxBreakGlass, errdefs.ErrInvalid)
	}
	if err := mayAct(ctx, tenant.Admin, "break-glass"); err != nil {
		return nil, err
	}
	if err := a.visible(ctx, tenant.Sandbox, id); err != nil {
		return nil, err
	}
	if _, err := a.c.Runtime(ctx, id); err != nil {
		return nil, err
	}
	var taskID string
	if li, ok := a.c.Live(id); ok {
		taskID = li.TaskID
	}
	now := a.c.Now()
	b := &store.BreakGlass{ID: newID("bg-"), SandboxID: id, Actor: a.c.Actor(ctx), Reason: reason, Created: now, Expires: now.Add(d)}
	if err := a.st.PutBreakGlass(ctx, b); err != nil {
		return nil, err
	}
	a.c.Logf("BREAK-GLASS %s: %s overrides the policy of sandbox %s until %s: %s", b.ID, b.Actor, id, b.Expires.Format(time.RFC3339), reason)
	if err := a.c.Record(ctx, audit.Entry{SandboxID: id, TaskID: taskID, Kind: "operator.breakglass", Payload: map[string]any{
		"break_glass": b.ID, "reason": reason, "expires": b.Expires}}); err != nil {
		return nil, err
	}
	return &BreakGlass{ID: b.ID, SandboxID: id, Actor: b.Actor, Reason: reason, Created: now, Expires: b.Expires}, nil
}
