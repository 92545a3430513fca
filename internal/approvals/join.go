package approvals

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/airlock-dev/airlock/internal/hook"
	"github.com/airlock-dev/airlock/internal/store"
)

// Duplicate requests share one approval: an agent that retries a held
// command, or runs it twice at once, puts one request in the reviewer's
// queue, and one decision answers every exec held on it. A duplicate is
// the same caller's (requested_by: a reviewer never decides a request it
// joined) exact prompt (line, cwd, classes, credentials, rules, policy)
// in the same sandbox, while that approval is pending and before its
// deadline. Another caller's identical command is its own approval.

// open is the approval x is held on, a duplicate's (joined) or a new
// one, with the hold to wait on (nil when x does not wait). Finding and
// putting are one step (a.holding): two concurrent holds make one.
func (a *Approvals) open(ctx context.Context, x hook.HeldExec, pj []byte, wait time.Duration) (ap *store.Approval, h *hold, joined bool, err error) {
	a.holding.Lock()
	defer a.holding.Unlock()
	actor, now := a.c.Actor(ctx), a.c.Now()
	dup, err := a.duplicate(ctx, x.SandboxID, actor, pj, now)
	if err != nil {
		return nil, nil, false, err
	}
	if dup != nil {
		if !x.NoWait {
			h = a.waiter(dup.ID)
			// A decision made between finding it and waiting told no one
			// of this exec: read it again.
			if cur, err := a.st.GetApproval(ctx, dup.ID); err == nil && cur.State != store.ApprovalPending {
				a.notify(dup.ID, cur.State)
			}
		}
		return dup, h, true, nil
	}
	ap = &store.Approval{ID: newID("ap-"), SandboxID: x.SandboxID, TaskID: x.TaskID, Line: x.Decision.Analysis.Line, Cwd: x.Cwd, Request: pj,
		RequestedBy: actor, State: store.ApprovalPending, Created: now, Deadline: now.Add(wait)}
	if !x.NoWait {
		h = a.waiter(ap.ID) // before the approval is there to decide
	}
	if err := a.st.PutApproval(ctx, ap); err != nil {
		if h != nil {
			a.forget(ap.ID, h)
		}
		return nil, nil, false, err
	}
	return ap, h, false, nil
}

// duplicate is sandbox id's pending approval of actor's request whose
// prompt is pj, if there is one.
func (a *Approvals) duplicate(ctx context.Context, sandboxID, actor string, pj []byte, now time.Time) (*store.Approval, error) {
	pending, err := a.st.ListApprovals(ctx, sandboxID, store.ApprovalPending)
	if err != nil {
		return nil, err
	}
	for _, ap := range pending {
		if ap.RequestedBy != actor || !now.Before(ap.Deadline) {
			continue
		}
		// The stored prompt, marshalled as pj was (the store keeps the
		// JSON's text, but compare what it says).
		var p Prompt
		if json.Unmarshal(ap.Request, &p) != nil {
			continue
		}
		if b, _ := json.Marshal(&p); bytes.Equal(b, pj) {
			return ap, nil
		}
	}
	return nil, nil
}
