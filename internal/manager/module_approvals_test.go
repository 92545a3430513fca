package manager

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/store"
)

// A daemon without an approvals module denies what its policy would
// hold for a human: the command never runs, and the refusal is recorded
// with the reason.
func TestAskWithoutApprovalsIsDenied(t *testing.T) {
	ctx := context.Background()
	m, log := fakeTierManager(t)
	sb, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, noWait := range []bool{false, true} {
		_, _, err := m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"sh", "-c", "touch ran; rm -rf x"}, NoWait: noWait}, nil, nil, nil)
		var pe *sandbox.PolicyError
		if !errors.As(err, &pe) || !errors.Is(err, errdefs.ErrDenied) || pe.Code != "policy_denied" || pe.Approval != "" ||
			!strings.Contains(pe.Message, "no approvals") || len(pe.Rules) == 0 {
			t.Fatalf("an ask without approvals (no wait %v): %v %+v", noWait, err, pe)
		}
	}
	fs, _ := m.Files(ctx, sb.ID)
	if _, err := fs.Stat(ctx, "/workspace/ran"); err == nil {
		t.Fatal("a held command ran without approvals")
	}
	execs, _ := m.recs.Execs(ctx, sb.ID)
	if len(execs) != 2 || execs[0].Status != nil || execs[0].Policy == nil || execs[0].Policy.Action != policy.Ask || !strings.Contains(execs[0].Error, "no approvals") {
		t.Fatalf("the refusal's record: %+v", execs)
	}
	evs, _ := log.Query(ctx, store.AuditFilter{SandboxID: sb.ID})
	var refused, requested int
	for _, e := range evs {
		switch e.Kind {
		case "exec.refused":
			refused++
		case "approval.request", "exec.start":
			requested++
		}
	}
	if refused != 2 || requested != 0 {
		t.Fatalf("audit: %d refused, %d started or requested", refused, requested)
	}
}

// yesHolder approves every hold at once, and lifts with lift.
type yesHolder struct {
	held []hook.HeldExec
	lift func(d *policy.Decision) error
}

func (*yesHolder) Name() string             { return "yes" }
func (*yesHolder) Attach(c hook.Core) error { return nil }
func (h *yesHolder) Hold(_ context.Context, x hook.HeldExec) (string, error) {
	h.held = append(h.held, x)
	return "ap-yes", nil
}
func (h *yesHolder) Lift(_ context.Context, _ string, d *policy.Decision) error { return h.lift(d) }

// The core decides again after a Holder's yes: an approval that made no
// grant covering the command does not run it. What the core lifts runs.
func TestHolderApprovalMustCover(t *testing.T) {
	ctx := context.Background()
	lifted := false
	h := &yesHolder{lift: func(d *policy.Decision) error {
		if lifted && d.Action == policy.Ask {
			d.Action, d.Reason = policy.Allow, "lifted"
		}
		return nil
	}}
	m, _ := fakeTierManagerWith(t, func(c *Config) { c.Modules = []hook.Module{h} })
	sb, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	req := sandbox.ExecRequest{Argv: []string{"sh", "-c", "rm -rf x"}, Env: []string{"A=1"}, Cwd: "/workspace"}
	_, _, err = m.Exec(ctx, sb.ID, req, nil, nil, nil)
	var pe *sandbox.PolicyError
	if !errors.As(err, &pe) || pe.Code != "approval_denied" || pe.Approval != "ap-yes" || !strings.Contains(pe.Message, "does not cover") {
		t.Fatalf("an approval that covers nothing: %v", err)
	}
	if len(h.held) != 1 || h.held[0].SandboxID != sb.ID || h.held[0].Cwd != "/workspace" || h.held[0].Env[0] != "A=1" || h.held[0].Decision.Action != policy.Ask {
		t.Fatalf("what the holder saw: %+v", h.held)
	}
	lifted = true
	if _, st, err := m.Exec(ctx, sb.ID, req, nil, nil, nil); err != nil || st.Code != 0 {
		t.Fatalf("a lifted command: %v", err)
	}
	// A lift that fails fails the exec and the check closed.
	h.lift = func(*policy.Decision) error { return errors.New("store down") }
	if _, _, err := m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"true"}}, nil, nil, nil); err == nil || !strings.Contains(err.Error(), "store down") {
		t.Fatalf("a failing lift: %v", err)
	}
	if err := (&core{m: m}).Lift(ctx, sb.ID, &policy.Decision{Action: policy.Ask}); err == nil || !strings.Contains(err.Error(), "store down") {
		t.Fatalf("a module's lift (a check's, a file operation's) past a failing lift: %v", err)
	}
}

// Core.RecordRefusal records a module's refusal like the core's own.
func TestCoreRecordRefusal(t *testing.T) {
	ctx := context.Background()
	var core hook.Core
	m, log := fakeTierManagerWith(t, func(c *Config) { c.Modules = []hook.Module{&coreTaker{&core}} })
	sb, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	core.RecordRefusal(ctx, hook.ExecCall{SandboxID: sb.ID, Argv: []string{"x"}, Cwd: "/workspace"}, &policy.Decision{Action: policy.Deny, Analysis: policy.AnalyzeArgv([]string{"x"}, "/workspace")}, "no")
	execs, _ := m.recs.Execs(ctx, sb.ID)
	evs, _ := log.Query(ctx, store.AuditFilter{SandboxID: sb.ID, Kind: "exec.refused"})
	if len(execs) != 1 || execs[0].Error != "no" || len(evs) != 1 || core.IsApprover(ctx) || !core.IsApprover(sandbox.AsApprover(ctx)) {
		t.Fatalf("refusal: %+v %+v", execs, evs)
	}
}

// coreTaker keeps its Core.
type coreTaker struct{ c *hook.Core }

func (*coreTaker) Name() string { return "core-taker" }
func (t *coreTaker) Attach(c hook.Core) error {
	*t.c = c
	return nil
}
