package manager

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// failingBackend fails Create once fail is set (a reset's second Create).
type failingBackend struct {
	runtime.Backend
	fail atomic.Bool
}

func (b *failingBackend) Create(ctx context.Context, spec runtime.Spec) (runtime.Sandbox, error) {
	if b.fail.Load() {
		return nil, errors.New("backend refused")
	}
	return b.Backend.Create(ctx, spec)
}

// A reset whose new sandbox cannot be made stops the sandbox as failed:
// out of the live set, its record stopped, the error naming the reset.
// A reset that works leaves it running with the same id.
func TestFakeTierResetSteps(t *testing.T) {
	var be *failingBackend
	m, _ := fakeTierManagerWith(t, func(c *Config) {
		be = &failingBackend{Backend: c.Backend}
		c.Backend = be
	})
	ctx := context.Background()
	sb, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	again, err := m.Reset(ctx, sb.ID)
	if err != nil || again.ID != sb.ID || again.State != "running" {
		t.Fatalf("reset: %+v, %v", again, err)
	}
	be.fail.Store(true)
	if _, err := m.Reset(ctx, sb.ID); err == nil || !strings.Contains(err.Error(), "reset "+sb.ID+": backend refused") {
		t.Fatalf("failed reset: %v", err)
	}
	if m.LiveCount() != 0 {
		t.Errorf("%d live after a failed reset", m.LiveCount())
	}
	got, err := m.Get(ctx, sb.ID)
	if err != nil || got.State != "stopped" || got.StopReason != sandbox.StopFailed {
		t.Errorf("after a failed reset: %+v, %v", got, err)
	}
	if _, err := m.Reset(ctx, sb.ID); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("reset of a stopped sandbox: %v", err)
	}
	if _, err := m.Reset(ctx, "nonexistent"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("reset of no sandbox: %v", err)
	}
}
