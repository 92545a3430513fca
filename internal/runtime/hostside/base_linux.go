package hostside

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/kernel/cgroups"
	"github.com/airlock-dev/airlock/internal/kernel/thawguard"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/runtime/agent/client"
	"github.com/airlock-dev/airlock/internal/runtime/agent/proto"
)

// Base is what one sandbox holds on the host that every backend holds the
// same way, and its teardown. A backend's Create fills the fields in as
// its steps take them (a nil one was never taken); they do not change
// afterwards. A Base must not be copied.
type Base struct {
	ID     string
	Dir    *StateDir
	Slot   *Slot // nil for a backend that takes none
	Cgroup *cgroups.Group
	Conn   *proto.Conn // the agent's channel, host end
	// image is the sandbox's disk image, kept open (PendingDisk.Take),
	// mount its disk's mount (KeepMount) and watch its agent's inotify
	// instance (KeepWatch), until the teardown closes them (closeLater);
	// nil: none.
	image, mount, watch *os.File
	// Logf logs operational messages (a lifetime reached, a thaw guard
	// that would not stop); nil discards them.
	Logf func(format string, args ...any)
	// Trace times the teardown's stages (AIRLOCK_TRACE); nil: no trace.
	Trace func(start time.Time, what string)

	// freezer pauses and resumes the group, with a thaw guard while it
	// is paused on v1 (package thawguard)
	freezer thawguard.Freezer

	lifeMu    sync.Mutex
	lifeTimer *time.Timer

	doneOnce    sync.Once
	done        chan struct{}
	destroyOnce sync.Once
	destroyErr  error
}

// NewBase starts the Base of sandbox id.
func NewBase(id string, logf func(format string, args ...any), trace func(start time.Time, what string)) *Base {
	return &Base{ID: id, Logf: logf, Trace: trace, done: make(chan struct{})}
}

func (b *Base) trace(t0 time.Time, what string) {
	if b.Trace != nil {
		b.Trace(t0, what)
	}
}

// Done is closed once the sandbox has stopped: its processes are gone or
// its agent's channel is.
func (b *Base) Done() <-chan struct{} { return b.done }

// MarkDone closes Done.
func (b *Base) MarkDone() { b.doneOnce.Do(func() { close(b.done) }) }

// Stopped says whether Done is closed.
func (b *Base) Stopped() bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}

// logf logs an operational message about the sandbox.
func (b *Base) logf(format string, args ...any) {
	if b.Logf != nil {
		b.Logf("sandbox %s: "+format, append([]any{b.ID}, args...)...)
	}
}

// StartLifetime destroys the sandbox (with destroy) after d; Teardown
// stops the timer.
func (b *Base) StartLifetime(d time.Duration, destroy func()) {
	b.lifeMu.Lock()
	defer b.lifeMu.Unlock()
	b.lifeTimer = time.AfterFunc(d, func() {
		if b.Logf != nil {
			b.Logf("sandbox %s reached its lifetime of %s; destroying", b.ID, d)
		}
		destroy()
	})
}

// Pause freezes every process in the sandbox's cgroup; exe is the airlock
// binary that a thaw guard runs (on v1, with dieWithOwner).
func (b *Base) Pause(exe string, dieWithOwner bool) error {
	if b.Stopped() {
		return client.ErrStopped
	}
	if err := b.freezer.Freeze(b.Cgroup, exe, dieWithOwner); err != nil {
		return fmt.Errorf("pause sandbox %s: %w", b.ID, err)
	}
	return nil
}

// Resume thaws a paused sandbox.
func (b *Base) Resume() error {
	if b.Stopped() {
		return client.ErrStopped
	}
	if err := b.freezer.Thaw(b.Cgroup, b.logf); err != nil {
		return fmt.Errorf("resume sandbox %s: %w", b.ID, err)
	}
	return nil
}

// Destroy runs Teardown once; every call returns its result.
func (b *Base) Destroy(stop func() error) error {
	b.destroyOnce.Do(func() { b.destroyErr = b.Teardown(stop) })
	return b.destroyErr
}

// Teardown gives back everything the sandbox holds, in the package's one
// order (see the package doc); stop is the backend's stage 3, which ends
// every process of the sandbox and waits for them. It is safe on a partly
// made sandbox: each stage skips what was never taken. Call it through
// Destroy, which runs it once.
func (b *Base) Teardown(stop func() error) error {
	var errs []error
	t0 := time.Now()
	b.lifeMu.Lock()
	if b.lifeTimer != nil {
		b.lifeTimer.Stop()
	}
	b.lifeMu.Unlock()
	if b.Cgroup != nil {
		b.freezer.Release(b.Cgroup, b.logf)
	}
	if err := stop(); err != nil {
		errs = append(errs, err)
	}
	b.trace(t0, "teardown: processes gone")
	if b.Conn != nil {
		b.Conn.Close()
	}
	if b.Cgroup != nil {
		if err := b.Cgroup.Destroy(); err != nil {
			errs = append(errs, err)
		}
	}
	b.trace(t0, "teardown: cgroups gone")
	if b.Dir != nil {
		if err := b.Dir.Remove(); err != nil {
			errs = append(errs, err)
		}
	}
	if b.Slot != nil {
		b.Slot.Release()
	}
	if b.Dir != nil {
		b.Dir.Unlock()
	}
	closeLater(b.mount) // first: its unmount is what lets go of the image
	closeLater(b.image)
	closeLater(b.watch)
	b.MarkDone()
	b.trace(t0, "teardown: done")
	return errors.Join(errs...)
}

// Usage is the sandbox's cgroup counters as runtime.Usage (a
// runtime.Meter's, for the backends that hold a Base), its page cache
// included.
func (b *Base) Usage() (runtime.Usage, error) {
	if b.Cgroup == nil {
		return runtime.Usage{}, fmt.Errorf("sandbox %s has no cgroup to meter: %w", b.ID, errdefs.ErrUnsupported)
	}
	st, err := b.Cgroup.Stats()
	if err != nil {
		return runtime.Usage{}, err
	}
	pc, err := b.Cgroup.PageCache()
	if err != nil {
		return runtime.Usage{}, err
	}
	return runtime.Usage{CPUTime: time.Duration(st.CPUUsageNS), MemoryBytes: int64(st.MemoryCurrent), PageCacheBytes: int64(pc), Pids: int64(st.Pids)}, nil
}
