// Package usage is a feature module of the sandbox core: what a live
// sandbox uses now, as its backend's cgroup counts it (CPU time, memory
// and its page cache, tasks), with the limits it runs under, its disk as
// statfs counts it, and whether a sandbox is still live (the core's live
// set, which a sandbox leaves before its processes are killed, so that
// who sees a command end can tell a kill of the sandbox from the
// command's own end).
package usage

import (
	"context"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/hook"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// Usage is the module. Attach it to the manager (Config.Modules) before
// any call: unattached, every call is refused as unsupported.
type Usage struct{ c hook.Core }

// New returns the module, not yet attached.
func New() *Usage { return &Usage{} }

// Name is the module's name.
func (*Usage) Name() string { return "usage" }

// Attach keeps the core's handle.
func (u *Usage) Attach(c hook.Core) error {
	u.c = c
	return nil
}

// Sample is one reading of a sandbox's use.
type Sample struct {
	Time time.Time
	runtime.Usage
	// Limits are the sandbox's limits (its backend's defaults resolved).
	Limits runtime.Limits
}

// Sample reads a running sandbox's counters. A sandbox that is not
// running (paused, stopped) is the core's error (a conflict; unknown: not
// found); a backend that does not meter its sandboxes is unsupported.
func (u *Usage) Sample(ctx context.Context, id string) (Sample, error) {
	if u == nil || u.c == nil {
		return Sample{}, fmt.Errorf("the usage module is not attached to a sandbox core: %w", errdefs.ErrUnsupported)
	}
	rt, err := u.c.Runtime(ctx, id)
	if err != nil {
		return Sample{}, err
	}
	m, ok := rt.(runtime.Meter)
	if !ok {
		return Sample{}, fmt.Errorf("sandbox %s: its backend (%s) does not report its usage: %w", id, rt.Info().Backend, errdefs.ErrUnsupported)
	}
	us, err := m.Usage()
	if err != nil {
		return Sample{}, err
	}
	return Sample{Time: time.Now().UTC(), Usage: us, Limits: rt.Info().Limits}, nil
}

// Disk reads a running sandbox's disk use (runtime.DiskMeter: the disk
// holding /workspace and the home). A backend without the ability is
// unsupported; otherwise as Sample.
func (u *Usage) Disk(ctx context.Context, id string) (runtime.DiskUsage, error) {
	if u == nil || u.c == nil {
		return runtime.DiskUsage{}, fmt.Errorf("the usage module is not attached to a sandbox core: %w", errdefs.ErrUnsupported)
	}
	rt, err := u.c.Runtime(ctx, id)
	if err != nil {
		return runtime.DiskUsage{}, err
	}
	dm, ok := rt.(runtime.DiskMeter)
	if !ok {
		return runtime.DiskUsage{}, fmt.Errorf("sandbox %s: its backend (%s) does not report its disk's use: %w", id, rt.Info().Backend, errdefs.ErrUnsupported)
	}
	return dm.DiskUsage(ctx)
}

// Live says whether sandbox id is live (running, paused, resetting or
// finishing); false once it is being stopped.
func (u *Usage) Live(id string) bool {
	if u == nil || u.c == nil {
		return false
	}
	_, ok := u.c.Live(id)
	return ok
}
