package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/reqcheck"
)

// Who asks travels in the context: an unnamed caller is "unknown" (never
// ""), and only a context marked so may decide approvals.
func TestActorAndApproverInContext(t *testing.T) {
	ctx := context.Background()
	if a := ActorOf(ctx); a != "unknown" {
		t.Errorf("unnamed actor %q, want unknown", a)
	}
	if IsApprover(ctx) {
		t.Error("a plain context may decide approvals")
	}
	if a := ActorOf(WithActor(ctx, "")); a != "unknown" {
		t.Errorf("empty actor %q, want unknown", a)
	}
	op := AsApprover(WithActor(ctx, "operator:alice"))
	if a := ActorOf(op); a != "operator:alice" || !IsApprover(op) {
		t.Errorf("operator: actor %q approver %v", a, IsApprover(op))
	}
	// An API key's context derived from nothing of the operator's is
	// not an approver, whatever it is named.
	key := WithActor(ctx, "apikey:k-1")
	if IsApprover(key) || ActorOf(key) != "apikey:k-1" {
		t.Errorf("api key: actor %q approver %v", ActorOf(key), IsApprover(key))
	}
	// A later name replaces the earlier, the approver mark stays.
	re := WithActor(op, "operator:bob")
	if ActorOf(re) != "operator:bob" || !IsApprover(re) {
		t.Errorf("renamed: actor %q approver %v", ActorOf(re), IsApprover(re))
	}
}

// Each code of a policy refusal is the error kind the doors map to a
// status; an unknown code is a denial (fail closed), never success.
func TestPolicyErrorKinds(t *testing.T) {
	for code, want := range map[string]error{
		"policy_denied":    errdefs.ErrDenied,
		"approval_denied":  errdefs.ErrDenied,
		"approval_pending": errdefs.ErrPending,
		"approval_timeout": errdefs.ErrTimeout,
		"something_new":    errdefs.ErrDenied,
	} {
		var err error = NewPolicyError(code, "no: "+code, nil, "")
		if !errors.Is(err, want) || err.Error() != "no: "+code {
			t.Errorf("%s: %v (is %v: %v)", code, err, want, errors.Is(err, want))
		}
		for _, other := range []error{errdefs.ErrDenied, errdefs.ErrPending, errdefs.ErrTimeout} {
			if other != want && errors.Is(err, other) {
				t.Errorf("%s is also %v", code, other)
			}
		}
		var pe *PolicyError
		if !errors.As(fmt.Errorf("exec: %w", err), &pe) || pe.Code != code {
			t.Errorf("%s: not found as a PolicyError through wrapping", code)
		}
	}
}

// The refusal shown to the agent carries its code, message, rules and
// approval id, never the decision (it holds the analysed command line).
func TestPolicyErrorJSONHidesTheDecision(t *testing.T) {
	d := &policy.Decision{Action: policy.Ask, Reason: "network", Analysis: &policy.Analysis{Line: "curl https://x/?token=hunter2"},
		Matches: []policy.Match{{Rule: "class:network", Action: policy.Ask}}}
	b, err := json.Marshal(NewPolicyError("approval_pending", "held", d, "ap-1"))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"code": "approval_pending", "message": "held", "rules": []any{"class:network"}, "approval_id": "ap-1"}
	if fmt.Sprint(got) != fmt.Sprint(want) || strings.Contains(string(b), "hunter2") {
		t.Errorf("shown %s, want %v", b, want)
	}
}

func matches(ms ...string) []policy.Match {
	var out []policy.Match
	for _, m := range ms {
		rule, act, _ := strings.Cut(m, "=")
		out = append(out, policy.Match{Rule: rule, Action: policy.Action(act)})
	}
	return out
}

// A denial names the rules that denied; a held or refused approval names
// every rule that did not simply allow (what the human was asked about).
// Each rule is named once.
func TestNewPolicyErrorNamesTheDecidingRules(t *testing.T) {
	d := &policy.Decision{Action: policy.Deny, Matches: matches("class:read=allow", "class:network=ask", "force-push=deny", "force-push=deny", "scope=deny")}
	if got := NewPolicyError("policy_denied", "denied", d, "").Rules; !slices.Equal(got, []string{"force-push", "scope"}) {
		t.Errorf("denied: rules %q", got)
	}
	d = &policy.Decision{Action: policy.Ask, Matches: matches("class:read=allow", "class:network=ask", "class:network=ask", "class:dependency=ask")}
	for _, code := range []string{"approval_pending", "approval_denied", "approval_timeout"} {
		if got := NewPolicyError(code, "held", d, "ap-1").Rules; !slices.Equal(got, []string{"class:network", "class:dependency"}) {
			t.Errorf("%s: rules %q", code, got)
		}
	}
	e := NewPolicyError("policy_denied", "denied", nil, "")
	if e.Rules != nil || e.Decision != nil {
		t.Errorf("no decision: %+v", e)
	}
}

// The audit payload of a decision: the deciding rules (all of them once a
// grant or a break-glass overrode the policy), and the analysis' writes,
// hosts and secrets only when there are some.
func TestDecisionPayload(t *testing.T) {
	if DecisionPayload(nil) != nil {
		t.Error("nil decision has a payload")
	}
	a := &policy.Analysis{Classes: []policy.Class{policy.Read, policy.Network}}
	d := &policy.Decision{Action: policy.Ask, Reason: "network", Policy: "v1", Analysis: a, Matches: matches("class:read=allow", "class:network=ask")}
	p := DecisionPayload(d)
	if !slices.Equal(p["rules"].([]string), []string{"class:network"}) || p["action"] != policy.Ask || p["reason"] != "network" || p["policy"] != "v1" {
		t.Errorf("payload %v", p)
	}
	for _, k := range []string{"grant", "break_glass", "writes", "hosts", "secrets"} {
		if _, ok := p[k]; ok {
			t.Errorf("%s present with nothing in it: %v", k, p)
		}
	}
	a.Writes, a.Hosts, a.Secrets = []string{"/workspace/x"}, []string{"example.test"}, []string{"/home/sandbox/.netrc"}
	for _, over := range []*policy.Decision{
		{Action: policy.Allow, Analysis: a, Matches: d.Matches, Grant: []string{"ap-1"}},
		{Action: policy.Allow, Analysis: a, Matches: d.Matches, BreakGlass: "bg-1"},
	} {
		p := DecisionPayload(over)
		if !slices.Equal(p["rules"].([]string), []string{"class:read", "class:network"}) {
			t.Errorf("overridden: rules %v", p["rules"])
		}
		if over.Grant != nil && !slices.Equal(p["grant"].([]string), []string{"ap-1"}) || over.BreakGlass != "" && p["break_glass"] != "bg-1" {
			t.Errorf("overridden: %v", p)
		}
		if !slices.Equal(p["writes"].([]string), a.Writes) || !slices.Equal(p["hosts"].([]string), a.Hosts) || !slices.Equal(p["secrets"].([]string), a.Secrets) {
			t.Errorf("analysis lost: %v", p)
		}
	}
}

// A stored decision is shown in short; one that is absent or unreadable
// (garbage, or without its analysis) shows as none, never as a guess.
func TestExecPolicyOf(t *testing.T) {
	for name, raw := range map[string]json.RawMessage{"nil": nil, "garbage": json.RawMessage(`{"action":`), "no analysis": json.RawMessage(`{"action":"allow"}`)} {
		if ep := ExecPolicyOf(raw); ep != nil {
			t.Errorf("%s: %+v", name, ep)
		}
	}
	d := policy.Decision{Action: policy.Deny, Reason: "force push", Policy: "v2", Analysis: &policy.Analysis{Classes: []policy.Class{policy.Network}},
		Matches: matches("class:network=ask", "force-push=deny")}
	raw, _ := json.Marshal(d)
	ep := ExecPolicyOf(raw)
	if ep == nil || ep.Action != policy.Deny || ep.Reason != "force push" || ep.Version != "v2" ||
		!slices.Equal(ep.Classes, []policy.Class{policy.Network}) || !slices.Equal(ep.Rules, []string{"force-push"}) {
		t.Fatalf("short %+v", ep)
	}
	d.Action, d.Grant = policy.Allow, []string{"ap-7"}
	raw, _ = json.Marshal(d)
	if ep := ExecPolicyOf(raw); !slices.Equal(ep.Rules, []string{"class:network", "force-push"}) || !slices.Equal(ep.Grant, []string{"ap-7"}) {
		t.Errorf("granted %+v", ep)
	}
}

// The effective policy: the file's for the template, then the caller's
// layer, which must be valid and, from a caller that may only tighten,
// must relax nothing.
func TestPolicyLayers(t *testing.T) {
	if p, err := Policy(nil, []string{"base"}, "", nil, true, "sandbox"); err != nil || p.Version() != policy.Defaults().Version() {
		t.Fatalf("no file, no layer: %v", err)
	}
	f := &policy.File{Templates: map[string]policy.Layer{"web": {Classes: map[policy.Class]policy.Action{policy.Build: policy.Ask}}}}
	p, err := Policy(f, []string{"web"}, "", nil, false, "sandbox")
	if err != nil || p.Classes[policy.Build] != policy.Ask || !slices.Equal(p.Sources, []string{"defaults", "file", "template:web"}) {
		t.Fatalf("template layer: %v %v %v", err, p.Classes[policy.Build], p.Sources)
	}
	relax := &policy.Layer{Classes: map[policy.Class]policy.Action{policy.Network: policy.Allow}}
	if _, err := Policy(f, []string{"web"}, "", relax, true, "apikey"); !errors.Is(err, errdefs.ErrDenied) || !strings.Contains(err.Error(), "network ask->allow") {
		t.Errorf("an agent relaxed the policy: %v", err)
	}
	if p, err := Policy(f, []string{"web"}, "", relax, false, "operator"); err != nil || p.Classes[policy.Network] != policy.Allow || p.Sources[len(p.Sources)-1] != "operator" {
		t.Errorf("an operator's relaxing layer: %v", err)
	}
	tighten := &policy.Layer{Classes: map[policy.Class]policy.Action{policy.Read: policy.Ask}}
	if p, err := Policy(f, []string{"web"}, "", tighten, true, "apikey"); err != nil || p.Classes[policy.Read] != policy.Ask {
		t.Errorf("an agent's tightening layer: %v", err)
	}
	for name, bad := range map[string]*policy.Layer{
		"class":  {Classes: map[policy.Class]policy.Action{"teleport": policy.Deny}},
		"action": {Classes: map[policy.Class]policy.Action{policy.Read: "maybe"}},
		"scope":  {Scope: []string{"../etc/**"}},
	} {
		for _, tightenOnly := range []bool{false, true} {
			if _, err := Policy(f, []string{"web"}, "", bad, tightenOnly, "x"); !errors.Is(err, errdefs.ErrInvalid) {
				t.Errorf("invalid %s layer (tighten only %v): %v", name, tightenOnly, err)
			}
		}
	}
}

// The values a redactor learns are those of secret-named variables only,
// up to MaxLearnedLen each; too many of them is an invalid request.
func TestSecretValues(t *testing.T) {
	long := strings.Repeat("x", MaxLearnedLen+1)
	vals, err := SecretValues([]string{"PATH=/bin", "GITHUB_TOKEN=ghp_abc", "NOEQUALS", "API_KEY=k=v", "HOME=/home/sandbox", "DB_PASSWORD=" + long,
		"SECRET=" + long[1:]})
	if err != nil || !slices.Equal(vals, []string{"ghp_abc", "k=v", long[1:]}) {
		t.Errorf("learned %d values %v: %v", len(vals), vals[:min(len(vals), 2)], err)
	}
	env := make([]string, 0, MaxLearned+1)
	for i := range MaxLearned {
		env = append(env, fmt.Sprintf("TOKEN_%d=v%d", i, i))
	}
	if vals, err := SecretValues(env); err != nil || len(vals) != MaxLearned {
		t.Errorf("%d secrets: %d learned, %v", MaxLearned, len(vals), err)
	}
	env = append(env, "ONE_MORE_TOKEN=v")
	if _, err := SecretValues(env); !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), fmt.Sprintf("%d secret-named variables", MaxLearned+1)) {
		t.Errorf("%d secrets: %v", MaxLearned+1, err)
	}
}

// The redactor of a core with none configured hides nothing and finds
// nothing, whatever it is taught.
func TestNopRedactorHidesNothing(t *testing.T) {
	var r Redactor = NopRedactor{}
	r.Add("hunter2")
	in := []byte(`{"a":"hunter2"}`)
	if out, changed := r.Redact(in); string(out) != string(in) || changed {
		t.Errorf("Redact: %s %v", out, changed)
	}
	if r.Find(in) != nil || r.String("hunter2") != "hunter2" || string(r.JSON(in)) != string(in) || r.LongestMatch() != 0 {
		t.Error("the nop redactor changed or found something")
	}
}

// Every exec field out of range is refused with ErrInvalid naming it,
// and the bounds themselves are accepted.
func TestCheckExecBounds(t *testing.T) {
	for field, req := range map[string]ExecRequest{
		"argv must name":                        {},
		"argv must name a":                      {Argv: []string{"", "x"}},
		"timeout_ms":                            {Argv: []string{"true"}, Timeout: -time.Millisecond},
		"timeout_ms: want":                      {Argv: []string{"true"}, Timeout: reqcheck.MaxDuration + 1},
		"output_limit":                          {Argv: []string{"true"}, OutputLimit: -1},
		"approval_wait_seconds":                 {Argv: []string{"true"}, ApprovalWait: -time.Second},
		"approval_wait_seconds: want 0 to 3600": {Argv: []string{"true"}, ApprovalWait: MaxApprovalWait + time.Second},
	} {
		if err := CheckExec(req); !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %v", field, err)
		}
	}
	ok := ExecRequest{Argv: []string{"sh", "-c", "true"}, Cwd: "/workspace", Env: []string{"A=b"}, Timeout: reqcheck.MaxDuration, ApprovalWait: MaxApprovalWait, OutputLimit: 0}
	if err := CheckExec(ok); err != nil {
		t.Errorf("bounds: %v", err)
	}
}

// CheckCreate returns the time to live it checked.
func TestCheckCreateTTL(t *testing.T) {
	if ttl, err := CheckCreate(CreateRequest{TTLSeconds: 90}, time.Hour); err != nil || ttl != 90*time.Second {
		t.Errorf("ttl %v: %v", ttl, err)
	}
	if _, err := CheckCreate(CreateRequest{TTLSeconds: -1}, time.Hour); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("negative ttl: %v", err)
	}
}

// The states the store records are spelled as the API shows them; a
// value outside the table is named as such, never as a real state.
func TestStateNames(t *testing.T) {
	want := map[State]string{Running: "running", Paused: "paused", Resetting: "resetting", Finishing: "finishing", Stopped: "stopped", State(42): "State(42)"}
	for s, name := range want {
		if s.String() != name {
			t.Errorf("%d: %q, want %q", int(s), s.String(), name)
		}
	}
	err := FinishingError("t-9")
	if !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), "task t-9 is being finished") {
		t.Errorf("finishing: %v", err)
	}
}

// A project's section of the policy file applies to its sandboxes only,
// after their templates', and the caller's layer still tightens it only.
func TestPolicyProjectSection(t *testing.T) {
	f, err := policy.Parse([]byte("version: 1\nclasses: {network: allow}\nprojects:\n  red:\n    classes: {network: deny}\n"))
	if err != nil {
		t.Fatal(err)
	}
	red, err := Policy(f, []string{"host"}, "red", nil, true, "sandbox")
	if err != nil || red.Classes[policy.Network] != policy.Deny || red.Sources[len(red.Sources)-1] != "project:red" {
		t.Fatalf("red: %+v %v", red, err)
	}
	blue, err := Policy(f, []string{"host"}, "blue", nil, true, "sandbox")
	if err != nil || blue.Classes[policy.Network] != policy.Allow || slices.Contains(blue.Sources, "project:red") {
		t.Fatalf("blue: %+v %v", blue, err)
	}
	relax := &policy.Layer{Classes: map[policy.Class]policy.Action{policy.Network: policy.Allow}}
	if _, err := Policy(f, []string{"host"}, "red", relax, true, "apikey"); !errors.Is(err, errdefs.ErrDenied) {
		t.Fatalf("a key relaxed its project's section: %v", err)
	}
	if _, err := policy.Parse([]byte("projects:\n  red:\n    classes: {network: maybe}\n")); !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("a bad project section: %v", err)
	}
}
