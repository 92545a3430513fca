package hostside

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/kernel/diskimg"
)

// youngAge is how long a state dir without info.json (or without a lock)
// counts as being created rather than abandoned.
const youngAge = 2 * time.Minute

// Reap removes the state, cgroups, processes and disk images of this
// layout's sandboxes whose owner process is gone (whose owner lock it can
// take), and cgroups and images whose state dir is gone. It never opens
// (never creates) a lock file, and leaves a young sandbox without
// info.json alone: it is being created. It returns the ids it reaped.
func (l *Layout) Reap() ([]string, error) {
	ents, err := os.ReadDir(l.SandboxesDir())
	if err != nil {
		return nil, err
	}
	var reaped []string
	var errs []error
	known := map[string]bool{}
	for _, e := range ents {
		// ".dead-ID": a sandbox being removed (its owner still holds the lock)
		id := strings.TrimPrefix(e.Name(), ".dead-")
		known[id] = true
		ok, err := l.reapOne(filepath.Join(l.SandboxesDir(), e.Name()), id)
		errs = append(errs, err)
		if ok {
			reaped = append(reaped, id)
		}
	}
	// disk images of sandboxes whose state dir is gone (the state dir is
	// made before the image, and the image is unlinked long before the
	// state dir goes)
	diskimg.ReapImages(l.DiskDir, func(id string) bool {
		_, err := os.Stat(filepath.Join(l.SandboxesDir(), id))
		return err == nil
	})
	orphans, err := l.reapCgroups(known)
	return append(reaped, orphans...), errors.Join(append(errs, err)...)
}

// reapOne reaps the sandbox whose state dir is dir if its owner is gone;
// ok says it did.
func (l *Layout) reapOne(dir, id string) (ok bool, err error) {
	young := true
	if st, err := os.Stat(dir); err == nil {
		young = time.Since(st.ModTime()) < youngAge
	}
	// Never create the lock: a missing one means the sandbox is being
	// created (or removed) right now, unless the dir is old.
	lock, err := openLock(filepath.Join(dir, "lock"))
	if err != nil && !(errors.Is(err, os.ErrNotExist) && !young) {
		return false, nil // owner alive, or too young to judge
	}
	if lock != nil {
		defer lock.Close()
	}
	if _, err := os.Stat(filepath.Join(dir, "info.json")); err != nil && young {
		return false, nil // still being created
	}
	var errs []error
	unmountUnder(dir) // a crash may have left a host mount below it
	if g, err := l.Hier.Open(l.CgroupParent, id); err == nil {
		if err := g.Destroy(); err != nil {
			errs = append(errs, fmt.Errorf("reap %s: %w", id, err))
		}
	}
	var info Info
	if ib, err := os.ReadFile(filepath.Join(dir, "info.json")); err == nil && json.Unmarshal(ib, &info) == nil && info.InitPID > 0 {
		killIfSandboxInit(info.InitPID, SlotUIDBase(info.Slot))
	}
	if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, fmt.Errorf("reap %s: %w", id, err))
	}
	_ = os.Remove(l.DiskImage(id)) // a crash between its copy and its attach
	return true, errors.Join(errs...)
}

// reapCgroups destroys the groups under the parent whose state dir is
// gone (a crash between the two removals); known are the state dirs Reap
// saw.
func (l *Layout) reapCgroups(known map[string]bool) ([]string, error) {
	names, err := l.Hier.List(l.CgroupParent)
	if err != nil {
		return nil, nil
	}
	var reaped []string
	var errs []error
	for _, n := range names {
		if known[n] {
			continue
		}
		// created after we listed the state dirs? (the state dir always
		// exists before the cgroup and outlives it)
		if _, err := os.Stat(filepath.Join(l.SandboxesDir(), n)); err == nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(l.SandboxesDir(), ".dead-"+n)); err == nil {
			continue
		}
		if g, err := l.Hier.Open(l.CgroupParent, n); err == nil {
			if err := g.Destroy(); err != nil {
				errs = append(errs, err)
			} else {
				reaped = append(reaped, n)
			}
		}
	}
	return reaped, errors.Join(errs...)
}

// openLock flocks an existing lock file without waiting.
func openLock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// unmountUnder detaches every host mount below dir.
func unmountUnder(dir string) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == dir || len(f[4]) > len(dir) && f[4][:len(dir)+1] == dir+"/") {
			_ = unix.Unmount(f[4], unix.MNT_DETACH)
		}
	}
}

// killIfSandboxInit kills pid only if it still runs as the sandbox's root
// uid, so a recycled pid is never hit.
func killIfSandboxInit(pid, uid int) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "Uid:") {
			f := strings.Fields(line)
			if len(f) > 1 && f[1] == strconv.Itoa(uid) {
				_ = unix.Kill(pid, unix.SIGKILL)
			}
			return
		}
	}
}

// Count is what a census of a layout finds: with no sandbox running,
// both are zero.
type Count struct {
	StateDirs int // sandbox state directories
	Cgroups   int // groups under the cgroup parent
}

// Count counts the layout's state dirs and cgroups now.
func (l *Layout) Count() (Count, error) {
	var c Count
	ents, err := os.ReadDir(l.SandboxesDir())
	if err != nil && !os.IsNotExist(err) {
		return c, err
	}
	c.StateDirs = len(ents)
	if names, err := l.Hier.List(l.CgroupParent); err == nil {
		c.Cgroups = len(names)
	}
	return c, nil
}

// RemoveCgroupParent removes the layout's cgroup parent if it holds no
// sandbox groups (it is made again by the next Create).
func (l *Layout) RemoveCgroupParent() error { return l.Hier.RemoveParent(l.CgroupParent) }
