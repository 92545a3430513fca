package manager

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/airlock-dev/airlock/internal/hook"

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

// A sandbox stopped by a failed reset is stopped like any other: the
// modules' StopHooks run (a template hold, a task, the egress service
// let go of it) and its sandbox.stop is on the record (found writing
// templatehold's tests: the failed reset took it out of the live set
// without either, so its layers stayed held until the daemon stopped).
func TestFakeTierFailedResetRunsTheStopHooks(t *testing.T) {
	var be *failingBackend
	log := &hookLog{}
	p := &probe{name: "p", log: log}
	m, alog := fakeTierManagerWith(t, func(c *Config) {
		be = &failingBackend{Backend: c.Backend}
		c.Backend = be
		c.Modules = []hook.Module{p}
	})
	ctx := context.Background()
	sb, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	log.take()
	be.fail.Store(true)
	if _, err := m.Reset(ctx, sb.ID); err == nil {
		t.Fatal("the reset worked")
	}
	if got := log.take(); !slices.Equal(got, []string{"p.stop:" + sandbox.StopFailed}) {
		t.Errorf("stop hooks after a failed reset: %q", got)
	}
	if len(p.stops) != 1 || p.stops[0].Prev != sandbox.Resetting || p.stops[0].Sandbox != nil {
		t.Errorf("stop event %+v", p.stops)
	}
	stops := eventsOf(t, alog, sb.ID, "sandbox.stop")
	if len(stops) != 1 || !strings.Contains(string(stops[0].Payload), `"reason":"failed"`) {
		t.Errorf("sandbox.stop events %+v", stops)
	}
	got, err := m.Get(ctx, sb.ID)
	if err != nil || got.State != "stopped" || got.StopReason != sandbox.StopFailed {
		t.Errorf("after a failed reset: %+v, %v", got, err)
	}
	// Destroying it now is a no-op: the hooks do not run twice.
	if err := m.Destroy(ctx, sb.ID); err != nil || len(log.take()) != 0 {
		t.Errorf("destroy after a failed reset: %v", err)
	}
}
