package manager

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/sandbox"
	"github.com/airlock-dev/airlock/internal/store"
)

// DestroyAsync answers before the teardown (fakeSandbox's Destroy takes
// 50 ms), the sandbox is out of the live set at once, the teardown is
// recorded as a destroy, and Shutdown waits for one still under way.
func TestDestroyAsyncAnswersBeforeTheTeardownAndShutdownWaits(t *testing.T) {
	m, st, _ := testManager(t, t.TempDir())
	ctx := context.Background()
	var in, max atomic.Int32
	rec := &store.Sandbox{ID: "sb-async", State: "running", Backend: "fake", Template: "host", Created: time.Now().UTC()}
	if err := st.PutSandbox(ctx, rec); err != nil {
		t.Fatal(err)
	}
	fs := &fakeSandbox{id: rec.ID, done: make(chan struct{}), inDestroy: &in, maxSeen: &max}
	m.live[rec.ID] = &live{sb: fs, rec: rec}
	start := time.Now()
	if err := m.DestroyAsync(ctx, rec.ID); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took >= 50*time.Millisecond {
		t.Errorf("DestroyAsync took %s: it waited for the teardown", took)
	}
	if m.LiveCount() != 0 {
		t.Errorf("the sandbox is still live after DestroyAsync")
	}
	if err := m.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-fs.done:
	default:
		t.Fatal("Shutdown returned before the background teardown ended")
	}
	got, err := st.GetSandbox(ctx, rec.ID)
	if err != nil || got.State != "stopped" || got.StopReason != sandbox.StopDestroyed {
		t.Errorf("record after the teardown: %+v %v", got, err)
	}
	// a second one is fine (already stopped); an unknown id is not found
	if err := m.DestroyAsync(ctx, rec.ID); err != nil {
		t.Errorf("destroying a stopped sandbox again: %v", err)
	}
	if err := m.DestroyAsync(ctx, "sb-none"); errdefs.Kind(err) != errdefs.Kind(errdefs.ErrNotFound) {
		t.Errorf("unknown sandbox: %v", err)
	}
}

// A Destroy that comes while another teardown of the sandbox is under
// way (a one-shot sandbox's end, then its client's delete on a signal)
// answers once the sandbox is stopped, not at once: its caller may
// promise that nothing of the sandbox is left.
func TestDestroyDuringATeardownWaitsForIt(t *testing.T) {
	m, st, _ := testManager(t, t.TempDir())
	ctx := context.Background()
	var in, max atomic.Int32
	rec := &store.Sandbox{ID: "sb-twice", State: "running", Backend: "fake", Template: "host", Created: time.Now().UTC()}
	if err := st.PutSandbox(ctx, rec); err != nil {
		t.Fatal(err)
	}
	fs := &fakeSandbox{id: rec.ID, done: make(chan struct{}), inDestroy: &in, maxSeen: &max}
	m.live[rec.ID] = &live{sb: fs, rec: rec}
	if err := m.DestroyAsync(ctx, rec.ID); err != nil {
		t.Fatal(err)
	}
	if err := m.Destroy(ctx, rec.ID); err != nil {
		t.Fatal(err)
	}
	got, err := st.GetSandbox(ctx, rec.ID)
	if err != nil || got.State != "stopped" {
		t.Errorf("Destroy answered before the teardown under way ended: %+v %v", got, err)
	}
}
