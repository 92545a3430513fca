package approvals

import (
	"context"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/store"
)

// OnStop ends the stopped sandbox's pending approvals (hook.StopHook):
// an approval of a sandbox that is gone can never run its command, and
// left pending it sat in the operator's queue until its deadline. Each is
// expired, recorded (approval.expire, with why) and its waiting exec
// told. A store error leaves that approval pending, where its deadline
// still ends it; the payload counts what was ended.
func (a *Approvals) OnStop(ctx context.Context, ev hook.StopEvent) map[string]any {
	if a.attached() != nil {
		return nil
	}
	ended, err := a.endPending(ctx, ev.SandboxID, "its sandbox stopped ("+ev.Reason+")")
	if err != nil {
		a.c.Logf("approvals of stopped sandbox %s: %v", ev.SandboxID, err)
		return map[string]any{"approvals_error": err.Error()}
	}
	if ended == 0 {
		return nil
	}
	return map[string]any{"approvals_ended": ended}
}

// endLeftovers ends, at start, what a previous daemon left pending (its
// sandboxes died with it; the daemon restarting once left them in the
// operator's queue until their deadline).
func (a *Approvals) endLeftovers(ctx context.Context) {
	n, err := a.endPending(ctx, "", "its sandbox was lost with the previous daemon")
	if err != nil {
		a.c.Logf("approvals left by a previous daemon: %v", err)
	}
	if n > 0 {
		a.c.Logf("%d approvals left pending by a previous daemon ended", n)
	}
}

// endPending expires the pending approvals of sandbox id ("": every
// sandbox's), recorded with why, and tells their waiting execs; it
// returns how many it ended. A store error leaves an approval pending,
// where its deadline still ends it.
func (a *Approvals) endPending(ctx context.Context, id, why string) (int, error) {
	pending, err := a.st.ListApprovals(ctx, id, store.ApprovalPending)
	if err != nil {
		return 0, err
	}
	ended := 0
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
	return ended, nil
}
