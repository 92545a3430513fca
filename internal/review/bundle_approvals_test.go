package review

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/store"
)

// A bundle's approvals come from the store (the approvals module wrote
// them): oldest first, a pending one past its deadline expired, the
// command and reason redacted, the prompt's classes and effect kept.
func TestBundleApprovalsFromTheStore(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, nil)
	sb := r.sandbox(t)
	const secret = "bundle-approval-secret-81f3"
	r.red.Add(secret)
	now := time.Now().UTC()
	prompt, _ := json.Marshal(map[string]any{"command": "rm -rf " + secret, "effect": "deletes files", "classes": []string{"destructive"}})
	decided := now.Add(-time.Minute)
	for _, a := range []*store.Approval{
		{ID: "ap-1", SandboxID: sb, Line: "rm -rf x", Request: prompt, RequestedBy: "agent", State: store.ApprovalPending, Created: now.Add(-2 * time.Hour), Deadline: now.Add(-time.Hour)},
		{ID: "ap-2", SandboxID: sb, Line: "rm -rf y", Request: json.RawMessage(`{"classes":[]}`), RequestedBy: "agent", State: store.ApprovalDenied, Created: now.Add(-time.Hour), Deadline: now.Add(time.Hour),
			Decided: &decided, DecidedBy: "operator", Reason: "no " + secret},
	} {
		if err := r.st.PutApproval(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	got, err := r.rv.bundleApprovals(ctx, sb)
	if err != nil || len(got) != 2 {
		t.Fatalf("bundle approvals: %+v %v", got, err)
	}
	a, b := got[0], got[1]
	if a.ID != "ap-1" || a.State != store.ApprovalExpired || strings.Contains(a.Command, secret) || !strings.HasPrefix(a.Command, "rm -rf ") || a.Effect != "deletes files" || len(a.Classes) != 1 {
		t.Errorf("first: %+v", a)
	}
	if b.ID != "ap-2" || b.State != store.ApprovalDenied || b.DecidedBy != "operator" || b.Decided == nil || strings.Contains(b.Reason, secret) || b.Classes != nil || b.Command != "" {
		t.Errorf("second: %+v", b)
	}
}
