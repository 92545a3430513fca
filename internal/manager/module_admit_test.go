package manager

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/hook"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/sandbox"
)

// holding is an Admitter that counts what it holds and refuses past
// max live (0: never) and every exec when noExec.
type holding struct {
	held, execs atomic.Int32
	max         int32
	noExec      bool
	project     atomic.Value
}

func (*holding) Name() string           { return "holding" }
func (*holding) Attach(hook.Core) error { return nil }
func (h *holding) AdmitCreate(_ context.Context, project string, _ runtime.Limits) (func(), error) {
	h.project.Store(project)
	if n := h.held.Add(1); h.max > 0 && n > h.max {
		h.held.Add(-1)
		return nil, errdefs.ErrLimitExceeded
	}
	return func() { h.held.Add(-1) }, nil
}
func (h *holding) AdmitExec(context.Context, string) error {
	if h.noExec {
		return errdefs.ErrLimitExceeded
	}
	h.execs.Add(1)
	return nil
}

// The core asks the Admitter before it starts a sandbox and gives its
// reservation back once the teardown ends (DestroyAsync's too); a
// refused create starts nothing; a refused exec runs nothing and leaves
// no record.
func TestAdmitterHoldsFromCreateToTeardown(t *testing.T) {
	h := &holding{max: 1}
	m, _ := fakeTierManagerWith(t, func(c *Config) { c.Modules = append(c.Modules, h) })
	ctx := context.Background()
	sb, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if h.held.Load() != 1 || h.project.Load() != "default" {
		t.Fatalf("held %d for project %v", h.held.Load(), h.project.Load())
	}
	if _, err := m.Create(ctx, sandbox.CreateRequest{}); !errors.Is(err, errdefs.ErrLimitExceeded) || m.LiveCount() != 1 {
		t.Fatalf("past the admitter: %v, %d live", err, m.LiveCount())
	}
	if _, _, err := m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"true"}}, nil, io.Discard, io.Discard); err != nil || h.execs.Load() != 1 {
		t.Fatalf("exec: %v, %d admitted", err, h.execs.Load())
	}
	h.noExec = true
	if _, _, err := m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"true"}}, nil, io.Discard, io.Discard); !errors.Is(err, errdefs.ErrLimitExceeded) {
		t.Fatalf("refused exec: %v", err)
	}
	if execs, _ := m.cfg.Store.ListExecs(ctx, sb.ID); len(execs) != 1 {
		t.Errorf("%d exec records, want the one that ran", len(execs))
	}
	if err := m.DestroyAsync(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); h.held.Load() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still held after the teardown: %d", h.held.Load())
		}
	}
	if _, err := m.Create(ctx, sandbox.CreateRequest{}); err != nil {
		t.Errorf("after the teardown: %v", err)
	}
}
