package approvals

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/store"
)

// A held command waits for a human, runs once approved, and the grant
// lets exactly that command through again, and nothing else.
func TestHeldThenApproved(t *testing.T) {
	r := newRig(t, Config{}, "")
	id := r.sandbox(t)
	if _, _, err := r.sh(t, id, "mkdir -p junk/a keep", 0); err != nil {
		t.Fatal(err)
	}
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, _, err := r.sh(t, id, "rm -rf junk && echo removed", time.Minute)
		done <- result{out, err}
	}()
	ap := r.pending(t, id)
	p := ap.Prompt
	if p == nil || p.Command != "sh -c 'rm -rf junk && echo removed'" || !slices.Contains(p.Classes, policy.Destructive) ||
		!slices.Contains(p.Held, policy.Destructive) || !strings.Contains(p.Effect, "deletes") || p.Cwd != "/workspace" ||
		ap.RequestedBy != "apikey:k-1" || ap.SandboxID != id || len(p.Rules) == 0 {
		t.Fatalf("prompt: %+v %+v", ap, p)
	}
	select {
	case res := <-done:
		t.Fatalf("held exec returned before a decision: %+v", res)
	default:
	}
	approved, err := r.a.Approve(operator, ap.ID, ApproveRequest{Scope: policy.ScopeCommand, For: 10 * time.Minute, Reason: "cleanup is fine"})
	if err != nil || approved.State != store.ApprovalApproved || approved.DecidedBy != "operator:alice" || approved.GrantID == "" || approved.Reason != "cleanup is fine" {
		t.Fatalf("approve: %+v %v", approved, err)
	}
	if res := <-done; res.err != nil || !strings.Contains(res.out, "removed") {
		t.Fatalf("approved exec: %+v", res)
	}
	if len(r.events(t, "approval.request")) != 1 {
		t.Fatal("the hold is not on the record")
	}
	if _, err := r.a.Deny(operator, ap.ID, "too late"); !errors.Is(err, errdefs.ErrConflict) {
		t.Fatalf("deny after approve: %v", err)
	}
	if _, _, err := r.sh(t, id, "rm -rf junk && echo removed", -1); err != nil {
		t.Fatalf("the granted command again: %v", err)
	}
	_, pe, err := r.sh(t, id, "rm -rf keep", -1)
	if !errors.Is(err, errdefs.ErrPending) || pe == nil || pe.Code != "approval_pending" || pe.Approval == "" {
		t.Fatalf("a command outside the grant: %v %+v", err, pe)
	}
	var granted int
	for _, x := range r.execs(t, id) {
		if x.Policy != nil && slices.Equal(x.Policy.Grant, []string{approved.GrantID}) {
			granted++
		}
	}
	ev := r.events(t, "approval.approve")
	if granted != 2 || len(ev) != 1 || ev[0].Actor != "operator:alice" {
		t.Fatalf("execs under the grant: %d; approve events %+v", granted, ev)
	}
}

// Not waited for, a hold fails at once as pending and stays decidable; a
// denial needs a reason; a waiting exec a human denies fails with it.
func TestDenied(t *testing.T) {
	r := newRig(t, Config{}, "")
	id := r.sandbox(t)
	_, pe, err := r.sh(t, id, "rm -rf x", -1)
	if !errors.Is(err, errdefs.ErrPending) || pe == nil {
		t.Fatalf("no-wait exec: %v", err)
	}
	if _, err := r.a.Deny(operator, pe.Approval, "  "); !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("deny without a reason: %v", err)
	}
	d, err := r.a.Deny(operator, pe.Approval, "not in this task")
	if err != nil || d.State != store.ApprovalDenied || d.Reason != "not in this task" || d.DecidedBy != "operator:alice" {
		t.Fatalf("deny: %+v %v", d, err)
	}
	if _, err := r.a.Approve(operator, pe.Approval, ApproveRequest{}); !errors.Is(err, errdefs.ErrConflict) {
		t.Fatalf("approve after deny: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := r.sh(t, id, "touch ran; rm -rf z", time.Minute)
		done <- err
	}()
	ap := r.pending(t, id)
	if _, err := r.a.Deny(operator, ap.ID, "use git clean instead"); err != nil {
		t.Fatal(err)
	}
	err = <-done
	if !errors.As(err, &pe) || pe.Code != "approval_denied" || !errors.Is(err, errdefs.ErrDenied) || !strings.Contains(pe.Message, "use git clean instead") {
		t.Fatalf("denied wait: %v", err)
	}
	if r.exists(t, id, "/workspace/ran") {
		t.Fatal("a denied command ran")
	}
	execs := r.execs(t, id)
	if last := execs[len(execs)-1]; last.Status != nil || !strings.Contains(last.Error, "denied by operator:alice") {
		t.Fatalf("the refusal's record: %+v", last)
	}
	if len(r.events(t, "approval.deny")) != 2 || len(r.events(t, "exec.refused")) != 1 {
		t.Fatal("denials are not on the record")
	}
}

// A waiting exec nobody decides ends as a timeout and its approval
// expires; one not waited for expires at its deadline.
func TestExpired(t *testing.T) {
	r := newRig(t, Config{Wait: 50 * time.Millisecond}, "")
	id := r.sandbox(t)
	_, pe, err := r.sh(t, id, "rm -rf y", 0) // the module's default wait
	if !errors.Is(err, errdefs.ErrTimeout) || pe == nil || pe.Code != "approval_timeout" || !strings.Contains(pe.Message, "not given within 50ms") {
		t.Fatalf("timeout: %v", err)
	}
	ap, err := r.a.Get(operator, pe.Approval)
	if err != nil || ap.State != store.ApprovalExpired || ap.DecidedBy != "airlock" {
		t.Fatalf("timed-out approval: %+v %v", ap, err)
	}
	if _, err := r.a.Approve(operator, ap.ID, ApproveRequest{}); !errors.Is(err, errdefs.ErrConflict) {
		t.Fatalf("approving an expired approval: %v", err)
	}
	if ev := r.events(t, "approval.expire"); len(ev) != 1 || ev[0].Actor != "airlock" {
		t.Fatalf("expiry events: %+v", ev)
	}
	// Not waited for: open for sandbox.MaxApprovalWait, then expired.
	_, pe, _ = r.sh(t, id, "rm -rf w", -1)
	ap, _ = r.a.Get(operator, pe.Approval)
	if ap.Deadline.Sub(ap.Created) != sandbox.MaxApprovalWait {
		t.Fatalf("a no-wait approval's deadline: %+v", ap)
	}
	r.clk.advance(sandbox.MaxApprovalWait)
	if l, err := r.a.List(operator, id, store.ApprovalExpired); err != nil || len(l) != 2 {
		t.Fatalf("expired: %+v %v", l, err)
	}
	if l, _ := r.a.List(operator, id, store.ApprovalPending); len(l) != 0 {
		t.Fatalf("pending past the deadline: %+v", l)
	}
	if _, err := r.a.Deny(operator, pe.Approval, "late"); !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("deciding past the deadline: %v", err)
	}
	if cur, _ := r.st.GetApproval(context.Background(), pe.Approval); cur.State != store.ApprovalExpired {
		t.Fatalf("past its deadline, the record: %+v", cur)
	}
}

// A class grant covers that class for a while, in its sandbox only; a
// hold by a rule alone cannot be approved by class.
func TestClassGrant(t *testing.T) {
	r := newRig(t, Config{}, "rules: [{id: hold-echo, command: 'echo held *', action: ask}]\n")
	id := r.sandbox(t)
	_, pe, _ := r.sh(t, id, "rm -rf a", -1)
	ap, err := r.a.Approve(operator, pe.Approval, ApproveRequest{Scope: policy.ScopeClass, For: 5 * time.Minute})
	if err != nil || ap.State != store.ApprovalApproved {
		t.Fatalf("class approve: %+v %v", ap, err)
	}
	if _, _, err := r.sh(t, id, "rm -rf b c", -1); err != nil {
		t.Fatalf("same class under the grant: %v", err)
	}
	if _, _, err := r.sh(t, r.sandbox(t), "rm -rf b", -1); !errors.Is(err, errdefs.ErrPending) {
		t.Fatalf("the grant reached another sandbox: %v", err)
	}
	r.clk.advance(5*time.Minute + time.Second)
	if _, _, err := r.sh(t, id, "rm -rf b", -1); !errors.Is(err, errdefs.ErrPending) {
		t.Fatalf("an expired grant still applies: %v", err)
	}
	_, pe, _ = r.sh(t, id, "echo held here", -1)
	if pe == nil || !slices.Contains(pe.Rules, "hold-echo") {
		t.Fatalf("held by a rule: %+v", pe)
	}
	if _, err := r.a.Approve(operator, pe.Approval, ApproveRequest{Scope: policy.ScopeClass}); !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "hold-echo") {
		t.Fatalf("class approval of a rule's hold: %v", err)
	}
	for _, bad := range []ApproveRequest{{Scope: "global"}, {For: MaxGrant + time.Second}, {For: -time.Second}} {
		if _, err := r.a.Approve(operator, pe.Approval, bad); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("approve %+v: %v", bad, err)
		}
	}
	if _, err := r.a.Approve(operator, "ap-nope", ApproveRequest{}); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("unknown approval: %v", err)
	}
	ap, err = r.a.Approve(operator, pe.Approval, ApproveRequest{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := r.st.ActiveGrants(context.Background(), id, r.clk.Now())
	if err != nil || len(g) != 1 || g[0].ID != ap.GrantID || g[0].Expires.Sub(g[0].Created) != DefaultGrant || g[0].Line != "sh -c 'echo held here'" {
		t.Fatalf("the default grant: %+v %v", g, err)
	}
}

// Break-glass lets a denied command through, loudly, for a while.
func TestBreakGlass(t *testing.T) {
	r := newRig(t, Config{}, "")
	id := r.sandbox(t)
	if _, pe, _ := r.sh(t, id, "cat .env", -1); pe == nil || pe.Code != "policy_denied" {
		t.Fatalf("before break-glass: %+v", pe)
	}
	for _, c := range []struct {
		id, reason string
		d          time.Duration
		want       error
	}{{id, " ", 0, errdefs.ErrInvalid}, {id, "x", MaxBreakGlass + 1, errdefs.ErrInvalid}, {id, "x", -1, errdefs.ErrInvalid}, {"sb-nope", "x", 0, errdefs.ErrNotFound}} {
		if _, err := r.a.BreakGlass(operator, c.id, c.reason, c.d); !errors.Is(err, c.want) {
			t.Errorf("break-glass %+v: %v", c, err)
		}
	}
	bg, err := r.a.BreakGlass(operator, id, "incident 42: need the env", 0)
	if err != nil || bg.Actor != "operator:alice" || bg.Expires.Sub(bg.Created) != DefaultGrant || bg.SandboxID != id {
		t.Fatalf("break-glass: %+v %v", bg, err)
	}
	if _, _, err := r.sh(t, id, "cat .env 2>/dev/null; true", -1); err != nil {
		t.Fatalf("under break-glass: %v", err)
	}
	execs := r.execs(t, id)
	last := execs[len(execs)-1]
	if last.Policy == nil || last.Policy.BreakGlass != bg.ID || !strings.Contains(last.Policy.Reason, "BREAK-GLASS "+bg.ID+" by operator:alice") {
		t.Fatalf("the override is not in the record: %+v", last.Policy)
	}
	d, err := r.ex.Check(context.Background(), id, []string{"cat", ".env"}, "")
	if err != nil || d.Action != policy.Allow || d.BreakGlass != bg.ID {
		t.Fatalf("check under break-glass: %+v %v", d, err)
	}
	if ev := r.events(t, "operator.breakglass"); len(ev) != 1 || ev[0].Actor != "operator:alice" {
		t.Fatalf("break-glass events: %+v", ev)
	}
	r.clk.advance(DefaultGrant)
	if _, _, err := r.sh(t, id, "cat .env", -1); !errors.Is(err, errdefs.ErrDenied) {
		t.Fatalf("after the break-glass ended: %v", err)
	}
}

// An approver sees a held command as it would run; anyone else sees it
// redacted. The record and its audit event are redacted for everyone.
func TestApprovalShownRedacted(t *testing.T) {
	r := newRig(t, Config{}, "")
	id := r.sandbox(t)
	const secret = "held-secret-value-4c2d9e"
	_, pe, _ := r.sh(t, id, "rm -rf "+secret, -1, "DEPLOY_TOKEN="+secret)
	if pe == nil {
		t.Fatal("not held")
	}
	mine, err := r.a.Get(operator, pe.Approval)
	if err != nil || !strings.Contains(mine.Prompt.Command, secret) || !slices.Contains(mine.Prompt.Credentials, "env DEPLOY_TOKEN") {
		t.Fatalf("the approver's view: %+v %v", mine.Prompt, err)
	}
	theirs, err := r.a.Get(agent, pe.Approval)
	if err != nil || strings.Contains(theirs.Prompt.Command, secret) || !strings.Contains(theirs.Prompt.Command, "[REDACTED") {
		t.Fatalf("the agent's view: %+v %v", theirs.Prompt, err)
	}
	l, err := r.a.List(agent, "", "")
	if err != nil || len(l) != 1 || strings.Contains(strings.Join(l[0].Prompt.Argv, " "), secret) {
		t.Fatalf("the agent's list: %+v %v", l, err)
	}
	if ev := r.events(t, "approval.request"); len(ev) != 1 || strings.Contains(string(ev[0].Payload), secret) {
		t.Fatalf("the request event: %+v", ev)
	}
	if _, err := r.a.List(operator, "", "bogus"); !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("a bad state: %v", err)
	}
}

// Until manager.New attaches it, the module refuses every call.
func TestNotAttached(t *testing.T) {
	a := New(Config{})
	ctx := context.Background()
	_, err1 := a.List(ctx, "", "")
	_, err2 := a.Get(ctx, "ap-1")
	_, err3 := a.Approve(ctx, "ap-1", ApproveRequest{})
	_, err4 := a.Deny(ctx, "ap-1", "no")
	_, err5 := a.BreakGlass(ctx, "sb-1", "x", 0)
	_, err6 := a.Hold(ctx, hook.HeldExec{})
	err7 := a.Lift(ctx, "sb-1", &policy.Decision{})
	for i, err := range []error{err1, err2, err3, err4, err5, err6, err7} {
		if !errors.Is(err, errdefs.ErrUnsupported) {
			t.Errorf("call %d: %v", i+1, err)
		}
	}
	if a.Name() != "approvals" || a.wait != DefaultWait || New(Config{Wait: 2 * time.Hour}).wait != sandbox.MaxApprovalWait {
		t.Errorf("defaults: %q %s", a.Name(), a.wait)
	}
}

// Commands are held by one module: a second holder fails manager.New.
func TestOneHolder(t *testing.T) {
	cfg := managerConfig(t, "", nil, nil, New(Config{}), renamed{New(Config{})})
	if _, err := manager.New(context.Background(), cfg); !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "second approvals holder") {
		t.Fatalf("two holders: %v", err)
	}
}

type renamed struct{ *Approvals }

func (renamed) Name() string { return "approvals-2" }
