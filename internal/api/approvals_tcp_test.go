package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/cli/approvals"
	"github.com/airlock-dev/airlock/internal/tenant"
	"github.com/airlock-dev/airlock/sdk"
	"github.com/airlock-dev/airlock/wire"
)

// keyID is the id of project's key of role (newTenants names them).
func (tn *tenants) keyID(project string, role tenant.Role) string {
	tn.t.Helper()
	var keys wire.APIKeyList
	tn.must("", "GET", "/v1/apikeys", nil, 200, &keys)
	for _, k := range keys.APIKeys {
		if k.Name == project+"-"+string(role) {
			return k.ID
		}
	}
	tn.t.Fatalf("no key %s-%s", project, role)
	return ""
}

type tcpExec struct {
	code int
	e    wire.Error
}

// holdPush runs red's held command as key over TCP, waiting for a
// human; it returns the approval id (from key's own queue, as a reviewer
// sees it) and where the exec's answer comes.
func (tn *tenants) holdPush(key, sandboxID, reviewer string) (string, <-chan tcpExec) {
	tn.t.Helper()
	wait := int64(60)
	done := make(chan tcpExec, 1)
	go func() {
		code, b := tn.call(key, "POST", "/v1/sandboxes/"+sandboxID+"/exec", wire.ExecRequest{Argv: []string{"git", "push", "origin", "main"}, ApprovalWaitSeconds: &wait})
		var e wire.Error
		_ = json.Unmarshal(b, &e)
		done <- tcpExec{code, e}
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var l wire.ApprovalList
		tn.must(reviewer, "GET", "/v1/approvals?state=pending", nil, 200, &l)
		if len(l.Approvals) == 1 {
			if p := l.Approvals[0].Prompt; p == nil || p.Command != "git push origin main" {
				tn.t.Fatalf("the reviewer is not shown the command as it would run: %+v", p)
			}
			return l.Approvals[0].ID, done
		}
		if time.Now().After(deadline) {
			tn.t.Fatalf("no pending approval in the reviewer's queue: %+v", l)
		}
	}
}

// Over TCP: an agent key's exec waits on its approval; the project's
// reviewer key sees it in its queue, denies it, and the agent's exec
// fails with the reviewer's reason; held again, the reviewer approves it
// and the exec runs. Another project's reviewer sees an empty queue.
func TestReviewerDecidesOverTCP(t *testing.T) {
	tn := newTenants(t)
	agent, reviewer := tn.keys["proj-red"][tenant.Agent], tn.keys["proj-red"][tenant.Reviewer]
	var sb wire.Sandbox
	tn.must(agent, "POST", "/v1/sandboxes", wire.CreateSandboxRequest{}, 201, &sb)
	id, done := tn.holdPush(agent, sb.ID, reviewer)
	var blue wire.ApprovalList
	tn.must(tn.keys["proj-blue"][tenant.Reviewer], "GET", "/v1/approvals", nil, 200, &blue)
	if len(blue.Approvals) != 0 {
		t.Fatalf("blue's reviewer sees red's queue: %+v", blue)
	}
	var ap wire.Approval
	tn.must(reviewer, "POST", "/v1/approvals/"+id+"/deny", wire.DenyRequest{Reason: "not on main, open a PR"}, 200, &ap)
	revID := tn.keyID("proj-red", tenant.Reviewer)
	if ap.State != "denied" || ap.DecidedBy != "apikey:"+revID || ap.RequestedBy != "apikey:"+tn.keyID("proj-red", tenant.Agent) {
		t.Fatalf("the denial: %+v", ap)
	}
	res := <-done
	if res.code != 403 || res.e.Code != wire.CodeApprovalDenied || res.e.ApprovalID != id ||
		!strings.Contains(res.e.Message, "not on main, open a PR") || !strings.Contains(res.e.Message, "apikey:"+revID) {
		t.Fatalf("the waiting agent's answer: %+v", res)
	}
	id, done = tn.holdPush(agent, sb.ID, reviewer)
	tn.must(reviewer, "POST", "/v1/approvals/"+id+"/approve", wire.ApproveRequest{Reason: "ok"}, 200, &ap)
	if res := <-done; res.code != 200 {
		t.Fatalf("the approved exec: %+v", res)
	}
}

// Attack: a reviewer key runs a held command itself, then approves (or
// denies) it with the same key: refused, 403 denied, and the approval
// stays pending. An agent key cannot decide it; an admin key of the
// project (another key) can.
func TestReviewerCannotApproveItsOwnRequestOverTCP(t *testing.T) {
	tn := newTenants(t)
	reviewer := tn.keys["proj-red"][tenant.Reviewer]
	var sb wire.Sandbox
	tn.must(reviewer, "POST", "/v1/sandboxes", wire.CreateSandboxRequest{}, 201, &sb)
	noWait := int64(0)
	var held wire.Error
	tn.must(reviewer, "POST", "/v1/sandboxes/"+sb.ID+"/exec", wire.ExecRequest{Argv: []string{"git", "push", "origin", "main"}, ApprovalWaitSeconds: &noWait}, 403, &held)
	for _, c := range []struct {
		path string
		body any
	}{{"/approve", wire.ApproveRequest{}}, {"/deny", wire.DenyRequest{Reason: "withdrawn"}}} {
		var e wire.Error
		tn.must(reviewer, "POST", "/v1/approvals/"+held.ApprovalID+c.path, c.body, 403, &e)
		if e.Code != wire.CodeDenied || !strings.Contains(e.Message, "never decides its own request") {
			t.Errorf("%s of its own request: %+v", c.path, e)
		}
	}
	tn.must(tn.keys["proj-red"][tenant.Agent], "POST", "/v1/approvals/"+held.ApprovalID+"/approve", struct{}{}, 403, nil)
	var ap wire.Approval
	tn.must("", "GET", "/v1/approvals/"+held.ApprovalID, nil, 200, &ap)
	if ap.State != "pending" {
		t.Fatalf("after the refused decisions: %+v", ap)
	}
	tn.must(tn.keys["proj-red"][tenant.Admin], "POST", "/v1/approvals/"+held.ApprovalID+"/approve", struct{}{}, 200, &ap)
	if ap.State != "approved" || ap.DecidedBy != "apikey:"+tn.keyID("proj-red", tenant.Admin) {
		t.Fatalf("the admin's approval: %+v", ap)
	}
}

// Break-glass over TCP is an admin's, on its project's sandbox, and
// names the key.
func TestAdminBreaksGlassOverTCP(t *testing.T) {
	tn := newTenants(t)
	var sb wire.Sandbox
	tn.must(tn.keys["proj-red"][tenant.Agent], "POST", "/v1/sandboxes", wire.CreateSandboxRequest{}, 201, &sb)
	body := wire.BreakGlassRequest{Reason: "incident 42", ForSeconds: 60}
	tn.must(tn.keys["proj-red"][tenant.Reviewer], "POST", "/v1/sandboxes/"+sb.ID+"/breakglass", body, 403, nil)
	var bg wire.BreakGlass
	tn.must(tn.keys["proj-red"][tenant.Admin], "POST", "/v1/sandboxes/"+sb.ID+"/breakglass", body, 201, &bg)
	if bg.Actor != "apikey:"+tn.keyID("proj-red", tenant.Admin) || bg.Expires.Sub(bg.Created) != time.Minute {
		t.Fatalf("the admin's break-glass: %+v", bg)
	}
}

// The CLI's approvals, approve and deny against the daemon's TCP
// listener with --url and $AIRLOCK_API_KEY, as a reviewer, while an
// agent key's exec waits; and the SDK the same way.
func TestCLIDecidesOverTCP(t *testing.T) {
	tn := newTenants(t)
	agent, reviewer := tn.keys["proj-red"][tenant.Agent], tn.keys["proj-red"][tenant.Reviewer]
	var sb wire.Sandbox
	tn.must(agent, "POST", "/v1/sandboxes", wire.CreateSandboxRequest{}, 201, &sb)
	cli := func(verb func([]string, io.Writer, io.Writer) int, args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := verb(append(args, "--url", tn.tcp.URL), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	t.Setenv("AIRLOCK_API_KEY", "")
	if code, _, errOut := cli(approvals.CmdApprovals); code == 0 || !strings.Contains(errOut, "AIRLOCK_API_KEY") {
		t.Fatalf("--url without a key: %d %q", code, errOut)
	}
	t.Setenv("AIRLOCK_API_KEY", reviewer)
	id, done := tn.holdPush(agent, sb.ID, reviewer)
	if code, out, errOut := cli(approvals.CmdApprovals); code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "git push origin main") {
		t.Fatalf("airlock approvals --url: %d %q %q", code, out, errOut)
	}
	if code, _, errOut := cli(approvals.CmdApprovals, "--socket", "/nonexistent"); code == 0 || !strings.Contains(errOut, "exclude") {
		t.Errorf("--url with --socket: %d %q", code, errOut)
	}
	if code, out, errOut := cli(approvals.CmdDeny, id, "--reason", "run the tests first"); code != 0 || !strings.Contains(out, "denied "+id) {
		t.Fatalf("airlock deny --url: %d %q %q", code, out, errOut)
	}
	if res := <-done; res.e.Code != wire.CodeApprovalDenied || !strings.Contains(res.e.Message, "run the tests first") {
		t.Fatalf("the agent after the CLI's denial: %+v", res)
	}
	id, done = tn.holdPush(agent, sb.ID, reviewer)
	if code, out, errOut := cli(approvals.CmdApprove, id, "--for", "5m"); code != 0 || !strings.Contains(out, "approved "+id) {
		t.Fatalf("airlock approve --url: %d %q %q", code, out, errOut)
	}
	if res := <-done; res.code != 200 {
		t.Fatalf("the agent after the CLI's approval: %+v", res)
	}
	// The SDK: the same reviewer key, in another sandbox (the approval's
	// grant lets the command through in this one).
	tn.must(agent, "POST", "/v1/sandboxes", wire.CreateSandboxRequest{}, 201, &sb)
	cl, err := sdk.New(sdk.WithBaseURL(tn.tcp.URL), sdk.WithAPIKey(reviewer))
	if err != nil {
		t.Fatal(err)
	}
	id, done = tn.holdPush(agent, sb.ID, reviewer)
	list, err := cl.Approvals(context.Background(), sb.ID, "pending")
	if err != nil || len(list) != 1 || list[0].ID != id {
		t.Fatalf("the SDK's queue: %+v %v", list, err)
	}
	if _, err := cl.Deny(context.Background(), id, "not today"); err != nil {
		t.Fatal(err)
	}
	if res := <-done; !strings.Contains(res.e.Message, "not today") {
		t.Fatalf("the agent after the SDK's denial: %+v", res)
	}
}
