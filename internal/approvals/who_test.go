package approvals

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/sandbox"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/tenant"
)

// keyCtx is the context of a key of project in role, as the API's TCP
// door makes it.
func keyCtx(project string, role tenant.Role, keyID string) context.Context {
	ctx := sandbox.WithActor(context.Background(), "apikey:"+keyID)
	if role.AtLeast(tenant.Reviewer) {
		ctx = sandbox.AsApprover(ctx)
	}
	return tenant.With(ctx, tenant.Principal{Project: project, Role: role, KeyID: keyID})
}

// Attack: a reviewer key (which may run execs: reviewer >= agent) runs
// a command the policy holds, then approves it, or denies it, with the
// same key. Both are refused and the approval stays pending; an agent
// key decides nothing, another project's reviewer finds no such
// approval; another reviewer of the project decides it.
func TestReviewerNeverDecidesItsOwnRequest(t *testing.T) {
	r := newRig(t, Config{}, "")
	id := r.sandbox(t) // project default
	mallory := keyCtx(tenant.Default, tenant.Reviewer, "k-mallory")
	_, _, err := r.m.Exec(mallory, id, sandbox.ExecRequest{Argv: []string{"sh", "-c", "rm -rf junk"}, NoWait: true}, nil, nil, nil)
	var pe *sandbox.PolicyError
	if !errors.As(err, &pe) || pe.Approval == "" {
		t.Fatalf("held: %v", err)
	}
	if _, err := r.a.Approve(mallory, pe.Approval, ApproveRequest{}); !errors.Is(err, errdefs.ErrDenied) || !strings.Contains(err.Error(), "never decides its own request") {
		t.Errorf("approving its own request: %v", err)
	}
	if _, err := r.a.Deny(mallory, pe.Approval, "withdrawn"); !errors.Is(err, errdefs.ErrDenied) {
		t.Errorf("denying its own request: %v", err)
	}
	if _, err := r.a.Approve(keyCtx(tenant.Default, tenant.Agent, "k-agent"), pe.Approval, ApproveRequest{}); !errors.Is(err, errdefs.ErrDenied) || !strings.Contains(err.Error(), "role") {
		t.Errorf("an agent key approving: %v", err)
	}
	blue := keyCtx("proj-blue", tenant.Admin, "k-blue")
	if _, err := r.a.Approve(blue, pe.Approval, ApproveRequest{}); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("another project's admin approving: %v", err)
	}
	if _, err := r.a.Get(blue, pe.Approval); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("another project's admin reading it: %v", err)
	}
	if l, err := r.a.List(blue, "", ""); err != nil || len(l) != 0 {
		t.Errorf("another project's list: %+v %v", l, err)
	}
	if cur, _ := r.st.GetApproval(context.Background(), pe.Approval); cur.State != store.ApprovalPending {
		t.Fatalf("after the refused decisions: %+v", cur)
	}
	ap, err := r.a.Approve(keyCtx(tenant.Default, tenant.Reviewer, "k-bob"), pe.Approval, ApproveRequest{Reason: "fine"})
	if err != nil || ap.DecidedBy != "apikey:k-bob" || ap.RequestedBy != "apikey:k-mallory" {
		t.Fatalf("another reviewer approving: %+v %v", ap, err)
	}
	// The operator decides its own (airlock run asks at its terminal).
	_, _, err = r.m.Exec(operator, id, sandbox.ExecRequest{Argv: []string{"sh", "-c", "rm -rf other"}, NoWait: true}, nil, nil, nil)
	if !errors.As(err, &pe) {
		t.Fatalf("held: %v", err)
	}
	if _, err := r.a.Approve(operator, pe.Approval, ApproveRequest{}); err != nil {
		t.Errorf("the operator approving its own request: %v", err)
	}
}

// Break-glass is an admin's, on its project's sandboxes, recorded with
// the key.
func TestBreakGlassIsAnAdmins(t *testing.T) {
	r := newRig(t, Config{}, "")
	id := r.sandbox(t)
	if _, err := r.a.BreakGlass(keyCtx(tenant.Default, tenant.Reviewer, "k-rev"), id, "incident", 0); !errors.Is(err, errdefs.ErrDenied) {
		t.Errorf("a reviewer's break-glass: %v", err)
	}
	if _, err := r.a.BreakGlass(keyCtx("proj-blue", tenant.Admin, "k-blue"), id, "incident", 0); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("another project's admin's break-glass: %v", err)
	}
	bg, err := r.a.BreakGlass(keyCtx(tenant.Default, tenant.Admin, "k-admin"), id, "incident 7", 0)
	if err != nil || bg.Actor != "apikey:k-admin" || bg.Expires.Sub(bg.Created) != DefaultGrant {
		t.Fatalf("the admin's break-glass: %+v %v", bg, err)
	}
	if ev := r.events(t, "operator.breakglass"); len(ev) != 1 || ev[0].Actor != "apikey:k-admin" {
		t.Errorf("its record: %+v", ev)
	}
}
