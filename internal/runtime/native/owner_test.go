package native

import (
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

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
// makes startOwned fail, and that thread is never used again.
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
	// The thread exits with its goroutine (the main thread cannot: Go
	// parks it for good).
	if tid == os.Getpid() {
		t.Logf("the changed thread is the main thread: parked")
		return
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat("/proc/self/task/" + strconv.Itoa(tid)); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("thread %d (pid %d), left changed, still runs", tid, os.Getpid())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
