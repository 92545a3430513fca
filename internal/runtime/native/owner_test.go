package native

import (
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkStartOwned: what the owner switch adds to a sandbox's start
// (the switch and restore around an empty start).
func BenchmarkStartOwned(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	for b.Loop() {
		if err := startOwned(UIDRangeStart, UIDRangeStart, func() error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// The switch is undone whatever start does: a start that fails leaves
// every thread as it was, and one that leaves its thread changed beyond
// repair (here: a capability dropped from the thread's bounding set)
// makes startOwned fail, and that thread is never used again (parked,
// not ended: see TestStartOwnedInitOutlivesOtherLockedThreads).
func TestStartOwnedFailsClosed(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	before := taskCreds(t)
	var inside []string
	err := startOwned(UIDRangeStart, UIDRangeStart+1, func() error {
		b, _ := os.ReadFile("/proc/thread-self/status")
		inside = []string{strings.Join(statusField(string(b), "Uid:"), " "), strings.Join(statusField(string(b), "Gid:"), " ")}
		return errors.New("start failed")
	})
	if err == nil || err.Error() != "start failed" {
		t.Errorf("a failed start: %v", err)
	}
	if want := []string{"0 268435456 0 268435456", "0 268435457 0 268435457"}; !slices.Equal(inside, want) {
		t.Errorf("during start: uid, gid %q, want %q", inside, want)
	}
	for tid, c := range taskCreds(t) {
		if b, ok := before[tid]; ok && b != c {
			t.Errorf("thread %s changed: %q, was %q", tid, c, b)
		}
	}

	var tid int
	err = startOwned(UIDRangeStart, UIDRangeStart, func() error {
		tid = unix.Gettid()
		return unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_SYS_BOOT, 0, 0, 0)
	})
	if err == nil || !strings.Contains(err.Error(), "cannot restore") {
		t.Fatalf("a thread left changed: %v, want a restore error", err)
	}
	// The thread is parked for good (it is the Pdeathsig parent of the
	// inits it started: it must not end), and a new spawner takes over:
	// nothing runs on the changed thread again.
	if _, err := os.Stat("/proc/self/task/" + strconv.Itoa(tid)); err != nil {
		t.Fatalf("the changed thread %d is gone (%v): the inits it started died with it", tid, err)
	}
	for range 20 {
		var next int
		if err := startOwned(UIDRangeStart, UIDRangeStart, func() error { next = unix.Gettid(); return nil }); err != nil {
			t.Fatal(err)
		}
		if next == tid {
			t.Fatalf("the changed thread %d started again", tid)
		}
	}
	for range 20 {
		got := make(chan int)
		go func() { got <- unix.Gettid() }()
		if <-got == tid {
			t.Fatalf("a goroutine ran on the changed thread %d", tid)
		}
	}
}
