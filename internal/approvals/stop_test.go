package approvals

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/store"
)

// An approval ends with its sandbox: a held command of a destroyed
// sandbox can never run, and once sat in the operator's queue, pending,
// until its deadline (issue 19). The waiting exec returns at once; the
// other sandbox's approval stays.
func TestApprovalsEndWithTheirSandbox(t *testing.T) {
	r := newRig(t, Config{}, "")
	id, other := r.sandbox(t), r.sandbox(t)
	if _, _, err := r.sh(t, id, "rm -rf a", -1); !errors.Is(err, errdefs.ErrPending) {
		t.Fatalf("not waited: %v", err)
	}
	if _, _, err := r.sh(t, other, "rm -rf a", -1); !errors.Is(err, errdefs.ErrPending) {
		t.Fatalf("other sandbox: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := r.sh(t, id, "rm -rf b", time.Hour)
		done <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if l, _ := r.a.List(operator, id, store.ApprovalPending); len(l) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the waiting hold is not pending")
		}
	}
	if err := r.m.Destroy(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "its sandbox stopped") {
			t.Fatalf("the waiting exec: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting exec still waits for a sandbox that is gone")
	}
	if l, _ := r.a.List(operator, id, store.ApprovalPending); len(l) != 0 {
		t.Errorf("pending after the sandbox stopped: %+v", l)
	}
	ended, _ := r.a.List(operator, id, store.ApprovalExpired)
	if len(ended) != 2 || ended[0].DecidedBy != "airlock" || !strings.Contains(ended[0].Reason, "its sandbox stopped") {
		t.Errorf("ended: %+v", ended)
	}
	if n := len(r.events(t, "approval.expire")); n != 2 {
		t.Errorf("%d approval.expire events", n)
	}
	stops := r.events(t, "sandbox.stop")
	if len(stops) == 0 || !strings.Contains(string(stops[len(stops)-1].Payload), `"approvals_ended":2`) {
		t.Errorf("sandbox.stop does not count the ended approvals: %+v", stops)
	}
	if l, _ := r.a.List(operator, other, store.ApprovalPending); len(l) != 1 {
		t.Errorf("the other sandbox's approval: %+v", l)
	}
}
