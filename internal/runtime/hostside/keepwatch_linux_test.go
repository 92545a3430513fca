package hostside

import (
	"errors"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/runtime/agent/proto"
)

// The attack: a sandbox whose PID 1 is not the agent sends, with its
// ready, descriptors of its choosing (a pipe whose other end it keeps,
// two inotify instances) for the host to hold for the sandbox's life.
// The host keeps one inotify instance, the first, and closes the rest at
// once; the teardown closes the one kept.
func TestKeepWatchKeepsOneInotifyInstanceOnly(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	inotify := func() *os.File {
		fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		return os.NewFile(uintptr(fd), "inotify")
	}
	first, second := inotify(), inotify()
	b := NewBase("sb-keepwatch", nil, nil)
	ready := &proto.Message{Op: proto.OpReady, Passed: []*os.File{pr, first, second}}
	b.KeepWatch(ready)
	if b.watch != first || ready.Passed != nil {
		t.Fatalf("kept %v (passed left %v), want the first inotify instance only", b.watch, ready.Passed)
	}
	for name, f := range map[string]*os.File{"the pipe": pr, "the second inotify instance": second} {
		if _, err := f.Stat(); !errors.Is(err, os.ErrClosed) {
			t.Errorf("%s is still open: %v", name, err)
		}
	}
	if err := b.Teardown(func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, err := first.Stat(); errors.Is(err, os.ErrClosed) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the teardown left the kept inotify instance open")
		}
	}
}
