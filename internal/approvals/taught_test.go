package approvals

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/store"
)

// An attack: a caller in sandbox A teaches the daemon's redactor
// (secret-named variables of one exec) values that are the approvals'
// field names, their state words, another sandbox's id, another
// approval's id and a piece of every timestamp. Sandbox B's approval,
// as the agent (not an approver) lists it, keeps every field: on the
// old JSON round trip the keys and those values were redacted, and the
// list failed or lost B's ids, state and classes. A's own secret is
// still hidden where it is a value.
func TestTaughtValuesLeaveOtherApprovalsWhole(t *testing.T) {
	r := newRig(t, Config{}, "")
	victim, attacker := r.sandbox(t), r.sandbox(t)
	_, pe, _ := r.sh(t, victim, "rm -rf junk", -1)
	if pe == nil {
		t.Fatal("the victim's command was not held")
	}
	before, err := r.a.Get(agent, pe.Approval)
	if err != nil {
		t.Fatal(err)
	}
	const secret = "attacker-secret-9f3b2a7c"
	stamp := before.Created.UTC().Format("2006-01-02T")
	taught := []string{"DEPLOY_TOKEN=" + secret, "API_TOKEN=sandbox_id", "GITHUB_TOKEN=pending", "DB_PASSWORD=" + victim,
		"NPM_TOKEN=" + pe.Approval, "AWS_SECRET=" + stamp, "SLACK_TOKEN=destructive", "API_KEY=requested_by", "PG_PASSWORD=classes"}
	if _, pe2, _ := r.sh(t, attacker, "rm -rf "+secret, -1, taught...); pe2 == nil {
		t.Fatal("the attacker's command was not held")
	}
	list, err := r.a.List(agent, victim, store.ApprovalPending)
	if err != nil || len(list) != 1 {
		t.Fatalf("the victim's pending approvals: %+v %v", list, err)
	}
	got := list[0]
	if got.ID != pe.Approval || got.SandboxID != victim || got.State != store.ApprovalPending || got.RequestedBy != "apikey:k-1" ||
		!got.Created.Equal(before.Created) || !got.Deadline.Equal(before.Deadline) {
		t.Errorf("the victim's approval after the values were taught: %+v (before %+v)", got, before)
	}
	if p := got.Prompt; p == nil || p.Command != "sh -c 'rm -rf junk'" || !slices.Contains(p.Classes, policy.Destructive) ||
		!slices.Contains(p.Held, policy.Destructive) || p.Policy == "" || p.Policy != before.Prompt.Policy {
		t.Errorf("its prompt: %+v", got.Prompt)
	}
	all, err := r.a.List(agent, "", "")
	if err != nil || len(all) != 2 {
		t.Fatalf("every approval: %+v %v", all, err)
	}
	b, _ := json.Marshal(all)
	if strings.Contains(string(b), secret) {
		t.Errorf("the attacker's secret is shown: %s", b)
	}
	for _, ap := range all {
		if ap.SandboxID == attacker && (ap.Prompt == nil || !strings.Contains(ap.Prompt.Command, "[REDACTED:")) {
			t.Errorf("the attacker's own approval: %+v", ap.Prompt)
		}
	}
	// The request event is redacted too, its prompt's fields intact.
	for _, ev := range r.events(t, "approval.request") {
		if strings.Contains(string(ev.Payload), secret) {
			t.Errorf("a request event shows the secret: %s", ev.Payload)
		}
	}
}
