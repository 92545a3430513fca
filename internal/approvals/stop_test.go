package approvals

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/manager"
	fakert "github.com/airlock-dev/airlock/internal/runtime/fake"
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

// A daemon that died left its approvals pending; the next one ends them
// at its start (none of its sandboxes lives on to run the command),
// recorded with why.
func TestApprovalsLeftByADeadDaemonEnd(t *testing.T) {
	ctx := context.Background()
	cfg := managerConfig(t, "", nil, nil, New(Config{}))
	m1, err := manager.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m1.Shutdown(context.Background()) })
	sb, err := m1.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := m1.Exec(agent, sb.ID, sandbox.ExecRequest{Argv: []string{"sh", "-c", "rm -rf x"}, NoWait: true}, nil, nil, nil); !errors.Is(err, errdefs.ErrPending) {
		t.Fatalf("not held: %v", err)
	}
	// m1 is not shut down: its daemon died. The next one starts on the
	// same store and log.
	next := New(Config{})
	cfg2 := cfg
	cfg2.Backend, cfg2.Modules = fakert.New(t.TempDir()), []hook.Module{next}
	m2, err := manager.New(ctx, cfg2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m2.Shutdown(context.Background()) })
	list, err := next.List(operator, sb.ID, "")
	if err != nil || len(list) != 1 || list[0].State != store.ApprovalExpired || !strings.Contains(list[0].Reason, "lost with the previous daemon") {
		t.Fatalf("the left approval: %+v %v", list, err)
	}
	evs, err := cfg.Audit.Query(ctx, store.AuditFilter{SandboxID: sb.ID, Kind: "approval.expire"})
	if err != nil || len(evs) != 1 {
		t.Errorf("approval.expire events: %d %v", len(evs), err)
	}
}
