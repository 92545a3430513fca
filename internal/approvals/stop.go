package approvals

import (
	"context"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/store"
)

// OnStop ends the stopped sandbox's pending approvals (manager.StopHook):
// an approval of a sandbox that is gone can never run its command, and
// left pending it sat in the operator's queue until its deadline. Each is
// expired, recorded (approval.expire, with why) and its waiting exec
// told. A store error leaves that approval pending, where its deadline
// still ends it; the payload counts what was ended.
func (a *Approvals) OnStop(ctx context.Context, ev manager.StopEvent) map[string]any {
	if a.attached() != nil {
		return nil
	}
	pending, err := a.st.ListApprovals(ctx, ev.SandboxID, store.ApprovalPending)
	if err != nil {
		a.c.Logf("approvals of stopped sandbox %s: %v", ev.SandboxID, err)
		return map[string]any{"approvals_error": err.Error()}
	}
	ended := 0
	why := "its sandbox stopped (" + ev.Reason + ")"
	for _, ap := range pending {
		if err := a.st.DecideApproval(ctx, ap.ID, store.ApprovalExpired, a.c.Now(), "airlock", why, ""); err != nil {
			continue // decided meanwhile, or the store failed: its deadline ends it
		}
		ended++
		if err := a.c.Record(ctx, audit.Entry{SandboxID: ap.SandboxID, TaskID: ap.TaskID, Actor: "airlock", Kind: "approval.expire",
			Payload: map[string]any{"approval": ap.ID, "reason": why}}); err != nil {
			a.c.Logf("approval %s: record its end: %v", ap.ID, err) // the store has it expired
		}
		a.notify(ap.ID, store.ApprovalExpired)
	}
	if ended == 0 {
		return nil
	}
	return map[string]any{"approvals_ended": ended}
}
