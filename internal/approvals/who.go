package approvals

import (
	"context"
	"fmt"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/tenant"
)

// Who may see and decide (issue 22). The API's guard already refuses a
// role below a route's and answers another project's object as a
// missing one; the module checks again, so that a door calling it
// without the guard reaches no more. What only the module knows is
// checked here alone: a key never decides a request it made itself.

// visible answers an object of kind another project owns as missing
// (the operator sees every project's).
func (a *Approvals) visible(ctx context.Context, kind tenant.Kind, id string) error {
	p := tenant.Of(ctx)
	if p.IsOperator() {
		return nil
	}
	project, err := a.st.OwnerOf(ctx, string(kind), id)
	if err != nil {
		return err
	}
	if !p.Sees(project) {
		return fmt.Errorf("%s %q: %w", kind, id, errdefs.ErrNotFound)
	}
	return nil
}

// mayAct refuses a caller below role.
func mayAct(ctx context.Context, role tenant.Role, what string) error {
	if p := tenant.Of(ctx); !p.Role.AtLeast(role) {
		return fmt.Errorf("%s needs the %s role (this key is %s): %w", what, role, p.Role, errdefs.ErrDenied)
	}
	return nil
}

// notOwnRequest refuses a key deciding ap when that key asked for it: a
// reviewer key may run execs too (reviewer >= agent), and approving its
// own would be no review at all. Keys are told apart by id: a rotated
// key is a new key. The operator (the unix socket) is exempt: the host
// decides at its own terminal (airlock run's "approve it here?").
func (a *Approvals) notOwnRequest(ctx context.Context, ap *store.Approval) error {
	p := tenant.Of(ctx)
	if p.IsOperator() {
		return nil
	}
	if p.KeyID == "" || ap.RequestedBy == "apikey:"+p.KeyID || ap.RequestedBy == a.c.Actor(ctx) {
		return fmt.Errorf("approval %s was requested by %s, the key deciding it: a reviewer never decides its own request (another reviewer, an admin or the operator may): %w",
			ap.ID, ap.RequestedBy, errdefs.ErrDenied)
	}
	return nil
}
