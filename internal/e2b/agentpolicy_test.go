package e2b

import (
	"os"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/sandbox"
)

// The refusal an agent sees names its approval, how an operator decides
// one, and the policy section of docs/e2b.md, which must exist and hold
// a policy that parses and lets an E2B agent's first commands run while
// the catastrophic ones stay denied.
func TestRefusalPointsAtTheAgentPolicy(t *testing.T) {
	for _, pe := range []*sandbox.PolicyError{
		{Code: "approval_timeout", Message: "approval ap-7 was not given within 50s: unknown effect", Approval: "ap-7"},
		{Code: "approval_denied", Message: "approval ap-7 was denied by op: no", Approval: "ap-7"},
		{Code: "approval_pending", Message: "held for approval ap-7", Approval: "ap-7"},
	} {
		msg := startError(pe).Message
		for _, want := range []string{"airlock policy: ", "approval ap-7", "'airlock approve ", "docs/e2b.md", `"A policy for E2B agents"`} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: %q lacks %q", pe.Code, msg, want)
			}
		}
	}
	if msg := startError(&sandbox.PolicyError{Code: "policy_denied", Message: "secret access"}).Message; strings.Contains(msg, "approve") || !strings.Contains(msg, "docs/e2b.md") {
		t.Errorf("a denial: %q", msg)
	}
	doc, err := os.ReadFile("../../docs/e2b.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(doc), "\n## A policy for E2B agents\n")
	_, block, ok2 := strings.Cut(sec, "```yaml\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/e2b.md has no section \"A policy for E2B agents\" with a yaml policy")
	}
	f, err := policy.Parse([]byte(block))
	if err != nil {
		t.Fatalf("the documented policy: %v", err)
	}
	p := f.ForTemplate("host")
	for line, want := range map[string]policy.Action{
		"bash -i -l":                policy.Allow, // what sandbox.pty runs
		"git reset --hard":          policy.Allow,
		"python3 -c 'print(1)'":     policy.Allow,
		"pip install requests":      policy.Allow,
		"rm -rf /home/user":         policy.Deny,
		"rm -rf ~":                  policy.Deny,
		"git push --force origin x": policy.Deny,
		"cat ~/.ssh/id_rsa":         policy.Deny,
	} {
		if d := p.Decide(policy.AnalyzeArgv([]string{"/bin/bash", "-c", line}, "/workspace")); d.Action != want {
			t.Errorf("documented policy: %s: %s, want %s", line, d.Action, want)
		}
	}
}
