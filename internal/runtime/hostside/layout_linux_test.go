package hostside

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/kernel/cgroups"
)

// testLayout is a layout in a temporary directory over an emulated
// cgroup v2 tree (ordinary directories: no root needed).
func testLayout(t *testing.T) *Layout {
	t.Helper()
	root := t.TempDir()
	h, err := cgroups.NewHierarchy(cgroups.V2, filepath.Join(root, "cgroup"))
	if err != nil {
		t.Fatal(err)
	}
	l := &Layout{StateDir: filepath.Join(root, "state"), DiskDir: filepath.Join(root, "disks"),
		SlotDir: filepath.Join(root, "slots"), CgroupParent: "test", Hier: h, DirMode: 0o700}
	for _, d := range []string{l.StateDir, l.SandboxesDir(), l.SlotDir, l.DiskDir, filepath.Join(root, "cgroup")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

// locked says whether path's flock is held by someone else.
func locked(t *testing.T, path string) bool {
	t.Helper()
	f, err := openLock(path)
	if err == nil {
		f.Close()
		return false
	}
	return true
}

func TestStateDirLockAndRemove(t *testing.T) {
	l := testLayout(t)
	d, err := l.MakeStateDir("aaaa")
	if err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(d.Path, "lock")
	if !locked(t, lock) {
		t.Error("the owner lock is not held")
	}
	if _, err := l.MakeStateDir("aaaa"); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("a second state dir of the same id: %v, want a conflict", err)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Errorf("the refused second Create touched the first's state dir: %v", err)
	}
	// removed while the lock is held: the dir goes by way of .dead-ID
	if err := d.Remove(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{d.Path, filepath.Join(l.SandboxesDir(), ".dead-aaaa")} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there after Remove: %v", p, err)
		}
	}
	d.Unlock()
	d.Unlock() // twice is fine
}

func TestSlotsDistinctAndReleased(t *testing.T) {
	l := testLayout(t)
	a, err := TakeSlot(l.SlotDir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := TakeSlot(l.SlotDir)
	if err != nil {
		t.Fatal(err)
	}
	if a.N == b.N || a.UIDBase() == b.UIDBase() || a.UIDBase() < UIDRangeStart {
		t.Errorf("two slots share uids: %d (%d) and %d (%d)", a.N, a.UIDBase(), b.N, b.UIDBase())
	}
	if !locked(t, filepath.Join(l.SlotDir, strconv.Itoa(a.N)+".lock")) {
		t.Error("a taken slot is not locked")
	}
	if left := l.Leftovers("none", a.N); len(left) != 1 {
		t.Errorf("Leftovers of a held slot: %q, want the slot", left)
	}
	a.Release()
	if locked(t, filepath.Join(l.SlotDir, strconv.Itoa(a.N)+".lock")) {
		t.Error("a released slot is still locked")
	}
	if left := l.Leftovers("none", a.N); len(left) != 0 {
		t.Errorf("Leftovers of a released slot: %q", left)
	}
	b.Release()
}

// Reap takes what an owner that is gone left, and only that.
func TestReap(t *testing.T) {
	l := testLayout(t)
	old := time.Now().Add(-2 * youngAge)
	mk := func(id string, info bool) *StateDir {
		d, err := l.MakeStateDir(id)
		if err != nil {
			t.Fatal(err)
		}
		if info {
			if err := d.WriteInfo(Info{}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := l.Hier.Create(l.CgroupParent, id, cgroups.Limits{}); err != nil {
			t.Fatal(err)
		}
		return d
	}
	live := mk("live", true)       // owner holds the lock
	creating := mk("young", false) // no info.json yet, young
	creating.Unlock()
	orphan := mk("orphan", true) // owner gone
	orphan.Unlock()
	if err := os.WriteFile(l.DiskImage("orphan"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	stale := mk("stale", false) // no info.json, but old and unlocked
	stale.Unlock()
	if err := os.Chtimes(stale.Path, old, old); err != nil {
		t.Fatal(err)
	}
	// a cgroup whose state dir is gone
	if _, err := l.Hier.Create(l.CgroupParent, "lost", cgroups.Limits{}); err != nil {
		t.Fatal(err)
	}

	reaped, err := l.Reap()
	if err != nil {
		t.Fatalf("Reap: %v", err)
	}
	slices.Sort(reaped)
	if want := []string{"lost", "orphan", "stale"}; !slices.Equal(reaped, want) {
		t.Errorf("reaped %v, want %v", reaped, want)
	}
	for _, id := range []string{"orphan", "stale", "lost"} {
		if left := l.Leftovers(id, -1); len(left) != 0 {
			t.Errorf("%s: left %q after Reap", id, left)
		}
	}
	for _, d := range []*StateDir{live, creating} {
		if _, err := os.Stat(d.Path); err != nil {
			t.Errorf("Reap took %s, which it must leave: %v", d.ID, err)
		}
		if names, _ := l.Hier.List(l.CgroupParent); !slices.Contains(names, d.ID) {
			t.Errorf("Reap destroyed the cgroup of %s", d.ID)
		}
	}
	live.Unlock()
}

// Teardown runs the backend's stop while everything else is still held,
// then gives back the state dir, the slot and the lock; Destroy runs it
// once and reports its error every time.
func TestTeardownOrder(t *testing.T) {
	l := testLayout(t)
	b := NewBase("bbbb", nil, nil)
	d, err := l.MakeStateDir(b.ID)
	if err != nil {
		t.Fatal(err)
	}
	slot, err := TakeSlot(l.SlotDir)
	if err != nil {
		t.Fatal(err)
	}
	b.Dir, b.Slot = d, slot
	slotLock := filepath.Join(l.SlotDir, strconv.Itoa(slot.N)+".lock")
	stopErr := errors.New("stop failed")
	stops := 0
	stop := func() error {
		stops++
		if _, err := os.Stat(d.Path); err != nil {
			t.Errorf("the state dir is gone before the processes are: %v", err)
		}
		if !locked(t, slotLock) || !locked(t, filepath.Join(d.Path, "lock")) {
			t.Error("the slot or the owner lock was released before the processes are gone")
		}
		if b.Stopped() {
			t.Error("Done closed before the teardown ended")
		}
		return stopErr
	}
	b.StartLifetime(time.Hour, func() { t.Error("the lifetime timer fired after the teardown") })
	for range 2 {
		if err := b.Destroy(stop); !errors.Is(err, stopErr) {
			t.Errorf("Destroy: %v, want the stop's error", err)
		}
	}
	if stops != 1 {
		t.Errorf("stop ran %d times, want once", stops)
	}
	if left := l.Leftovers(b.ID, slot.N); len(left) != 0 {
		t.Errorf("left after the teardown: %q", left)
	}
	if !b.Stopped() {
		t.Error("Done is not closed after the teardown")
	}
	b.lifeMu.Lock()
	if b.lifeTimer.Stop() {
		t.Error("the lifetime timer was still running after the teardown")
	}
	b.lifeMu.Unlock()
}
