package usage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/hook"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// core is the core as the module calls it: one running sandbox "sb"
// (rt), and "gone", not live; any other method panics.
type core struct {
	hook.Core
	rt runtime.Sandbox
}

func (c core) Runtime(_ context.Context, id string) (runtime.Sandbox, error) {
	if id != "sb" {
		return nil, fmt.Errorf("sandbox %s is stopped: %w", id, errdefs.ErrConflict)
	}
	return c.rt, nil
}

func (c core) Live(id string) (*hook.LiveInfo, bool) {
	if id != "sb" {
		return nil, false
	}
	return &hook.LiveInfo{}, true
}

// sandbox is a runtime sandbox; metered adds a Meter.
type sandbox struct {
	runtime.Sandbox
	lim runtime.Limits
}

func (s sandbox) Info() runtime.Info { return runtime.Info{Backend: "test", Limits: s.lim} }

type metered struct {
	sandbox
	use runtime.Usage
	err error
}

func (m metered) Usage() (runtime.Usage, error) { return m.use, m.err }

func TestSample(t *testing.T) {
	ctx := context.Background()
	if _, err := New().Sample(ctx, "sb"); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("unattached: %v", err)
	}
	if New().Live("sb") {
		t.Error("unattached: live")
	}
	var none *Usage // (a module the daemon did not make)
	if _, err := none.Sample(ctx, "sb"); !errors.Is(err, errdefs.ErrUnsupported) || none.Live("sb") {
		t.Errorf("nil: %v", err)
	}
	u := New()
	lim := runtime.Limits{MemoryBytes: 1 << 30, CPUs: 1.5}
	use := runtime.Usage{CPUTime: time.Second, MemoryBytes: 5 << 20, Pids: 3}
	_ = u.Attach(core{rt: metered{sandbox: sandbox{lim: lim}, use: use}})
	s, err := u.Sample(ctx, "sb")
	if err != nil || s.Usage != use || s.Limits != lim || time.Since(s.Time) > time.Minute {
		t.Errorf("sample: %+v %v", s, err)
	}
	if _, err := u.Sample(ctx, "gone"); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("not running: %v", err)
	}
	if !u.Live("sb") || u.Live("gone") {
		t.Error("live")
	}
	_ = u.Attach(core{rt: sandbox{}})
	if _, err := u.Sample(ctx, "sb"); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("a backend without a meter: %v", err)
	}
	_ = u.Attach(core{rt: metered{err: errors.New("cgroup gone")}})
	if _, err := u.Sample(ctx, "sb"); err == nil {
		t.Error("a failed reading: no error")
	}
}

type disked struct {
	sandbox
	use runtime.DiskUsage
	err error
}

func (d disked) DiskUsage(context.Context) (runtime.DiskUsage, error) { return d.use, d.err }

// Disk answers the backend's DiskMeter; without one it is unsupported,
// and the backend's own error is passed on as it came.
func TestDisk(t *testing.T) {
	ctx := context.Background()
	var none *Usage
	if _, err := none.Disk(ctx, "sb"); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("nil: %v", err)
	}
	if _, err := New().Disk(ctx, "sb"); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("unattached: %v", err)
	}
	u := New()
	use := runtime.DiskUsage{TotalBytes: 1 << 30, UsedBytes: 5 << 20, AvailBytes: 900 << 20, Inodes: 1000, InodesFree: 990}
	_ = u.Attach(core{rt: disked{use: use}})
	if d, err := u.Disk(ctx, "sb"); err != nil || d != use {
		t.Errorf("disk: %+v %v", d, err)
	}
	if _, err := u.Disk(ctx, "gone"); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("not running: %v", err)
	}
	broken := errors.New("agent gone")
	_ = u.Attach(core{rt: disked{err: broken}})
	if _, err := u.Disk(ctx, "sb"); !errors.Is(err, broken) {
		t.Errorf("the backend's error: %v", err)
	}
	_ = u.Attach(core{rt: sandbox{}})
	if _, err := u.Disk(ctx, "sb"); !errors.Is(err, errdefs.ErrUnsupported) || !strings.Contains(err.Error(), "test") {
		t.Errorf("a backend without a disk meter: %v", err)
	}
}
